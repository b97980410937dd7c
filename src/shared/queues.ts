import { z } from 'zod';
import { recordSchemas, type RecordKind } from './telemetry/records.js';

const stamped = <T extends z.ZodType>(record: T) =>
  z.object({ items: z.array(z.object({ orgId: z.string(), projectId: z.string(), record })).min(1) });

/** One batch job per record kind: ingest appends records and flushes a job by count or after a few ms. */
const telemetryJobs = Object.fromEntries(Object.entries(recordSchemas).map(([kind, schema]) => [kind, stamped(schema)])) as {
  [K in RecordKind]: ReturnType<typeof stamped<(typeof recordSchemas)[K]>>;
};

/** Every queue and job the workers run, with the payload each job carries (ids and small records, never secrets). */
export const jobs = {
  telemetry: telemetryJobs,
  maintenance: {
    cleanup: z.object({}),
  },
} as const;

export type QueueName = keyof typeof jobs;
export const queueNames = Object.keys(jobs) as QueueName[];
export type TelemetryBatch<K extends RecordKind> = z.infer<(typeof telemetryJobs)[K]>;
