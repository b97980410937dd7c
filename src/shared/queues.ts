import { z } from 'zod';

/** Every queue and job the workers run, with the payload each job carries (ids and small records, never secrets). */
export const jobs = {
  maintenance: {
    cleanup: z.object({}),
  },
} as const;

export type QueueName = keyof typeof jobs;
export const queueNames = Object.keys(jobs) as QueueName[];
