import { z } from 'zod';
import { recordKinds, recordSchemas, type RecordKind, type RecordOf, type Stamped } from './telemetry/records.js';

/** A kind's records in a batch job, each stamped with its project. */
export interface TelemetryBatch<K extends RecordKind> {
  items: Stamped<RecordOf<K>>[];
}

/** What one telemetry job carries: the records of every request in the batch, by kind. */
export type TelemetryRecords = Partial<Record<RecordKind, Stamped<unknown>[]>>;

/** The one telemetry job name: ingest puts a request's records of every kind into one job. */
export const TELEMETRY_JOB = 'records';

const stamped = (record: z.ZodType) => z.object({ items: z.array(z.object({ orgId: z.string(), projectId: z.string(), record })).min(1) });

/** Each kind's part of a telemetry job, with the schema of its records. */
export const telemetryParts = Object.fromEntries(
  Object.entries(recordSchemas).map(([kind, schema]) => [kind, stamped(schema)]),
) as unknown as { [K in RecordKind]: z.ZodType<TelemetryBatch<K>> };

/** Every queue and job the workers run, with the payload each job carries (ids and small records, never secrets). */
export const jobs = {
  telemetry: { [TELEMETRY_JOB]: z.object({ records: z.partialRecord(z.enum(recordKinds), z.array(z.unknown())) }) },
  maintenance: {
    cleanup: z.object({}),
  },
  monitors: {
    'sweep-cron-checks': z.object({}),
    'evaluate-deployments': z.object({}),
    'schedule-probes': z.object({}),
    /** One monitor's turn, named by the time it was due. */
    probe: z.object({ monitorId: z.string(), due: z.number() }),
    'send-due-reports': z.object({}),
    /** One organisation's digest, named by the time it was due. */
    'send-report': z.object({ orgId: z.string(), sendAt: z.number() }),
  },
  alerts: {
    'dispatch-alerts': z.object({}),
    deliver: z.object({ deliveryId: z.string() }),
  },
  investigations: {
    /** One investigation's run: gather its evidence, ask the model, store the answer. */
    investigate: z.object({ investigationId: z.string().regex(/^[0-9a-f]{24}$/) }),
    /** Fails investigations a dead worker left in progress. */
    'fail-stuck-investigations': z.object({}),
  },
} as const;

export type QueueName = keyof typeof jobs;
