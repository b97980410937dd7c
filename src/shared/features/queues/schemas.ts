import { z } from 'zod';
import { viewQuery } from '../../views.js';

export const queuesQuery = z.object({ ...viewQuery, queue: z.string().max(512).optional() });

export const queueJson = z.object({
  /** `messaging.destination.name`. */
  queue: z.string(),
  /** `messaging.system`, e.g. rabbitmq, kafka, aws_sqs. */
  system: z.string().nullable(),
  project_ids: z.array(z.string()),
  /** Services that published to the queue, and services that processed its messages. */
  producers: z.array(z.string()),
  consumers: z.array(z.string()),
  published: z.number().int(),
  processed: z.number().int(),
  failed: z.number().int(),
  failure_rate: z.number(),
  p50_processing_ms: z.number().nullable(),
  p95_processing_ms: z.number().nullable(),
  /** From publication to the start of processing, where a consumer span links to its producer span. */
  p95_wait_ms: z.number().nullable(),
  /** How many processed messages had a known wait. */
  waits_measured: z.number().int(),
  /** (published − processed) per minute of the window: positive when the queue falls behind. */
  backlog_growth_per_min: z.number(),
});

export const queuesJson = z.object({ from: z.string(), to: z.string(), data: z.array(queueJson) });
