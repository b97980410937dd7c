import { z } from 'zod';
import { decodeExport, otlpContentTypes, otlpSignals } from './telemetry/otlp/decode.js';
import { recordKinds, recordSchemas, type RecordKind, type RecordOf, type Stamped } from './telemetry/records.js';

/** A kind's records in a batch job, each stamped with its project. */
export interface TelemetryBatch<K extends RecordKind> {
  items: Stamped<RecordOf<K>>[];
}

/** What one telemetry job carries: the records of every request in the batch, by kind. */
export type TelemetryRecords = Partial<Record<RecordKind, Stamped<unknown>[]>>;

/**
 * An OTLP export as it came, for the workers to turn into records: ingest decodes it too, to answer
 * with `partialSuccess` and refuse a malformed one, but a job carrying the export's own bytes costs
 * ingest no serialising of its records, and Redis about two fifths of the bytes. `body` is base64 for
 * protobuf, the text itself for JSON; `receivedMs` stamps log records without a time of their own,
 * as ingest did; `items` is how many records ingest kept of it.
 */
export const otlpExport = z.object({
  signal: z.enum(otlpSignals),
  encoding: z.enum(otlpContentTypes),
  body: z.string(),
  receivedMs: z.number(),
  items: z.number().int(),
});
export type OtlpExport = z.infer<typeof otlpExport>;

/** How an export's bytes are written into `body`: a JSON text as itself, protobuf as base64. */
export const exportBodyEncoding = (encoding: OtlpExport['encoding']): BufferEncoding => (encoding === 'protobuf' ? 'base64' : 'utf8');

/** A telemetry job as this release writes it. */
export interface TelemetryJob {
  v: typeof TELEMETRY_JOB_VERSION;
  records: TelemetryRecords;
  exports?: Stamped<OtlpExport>[];
}

/** The one telemetry job name: ingest puts a request's records of every kind into one job. */
export const TELEMETRY_JOB = 'records';

/**
 * The format of the telemetry jobs this release writes, kept on each job as `v`. Workers read every
 * format a queue may still hold after an upgrade: 1, one job per record kind named after the kind
 * (`{items}`); 2, one `records` job (`{records}`, written without `v` before versions were kept);
 * 3, the same with OTLP exports as they came (`exports`, decoded here into records).
 */
export const TELEMETRY_JOB_VERSION = 3;

const recordsJob = z.object({
  v: z.number().int().optional(),
  records: z.partialRecord(z.enum(recordKinds), z.array(z.unknown())),
  exports: z.array(z.object({ orgId: z.string(), projectId: z.string(), record: otlpExport })).optional(),
});

/** A job's records with its exports' decoded and stamped after them, in the order they came. */
function withExports(records: TelemetryRecords, exports: Stamped<OtlpExport>[]): TelemetryRecords | string {
  // copies of the job's own lists, which the exports' records are appended to
  const all: TelemetryRecords = Object.fromEntries(Object.entries(records).map(([kind, list]) => [kind, [...(list ?? [])]]));
  for (const { orgId, projectId, record: { signal, encoding, body, receivedMs } } of exports) {
    let decoded: Partial<Record<RecordKind, unknown[]>>;
    try {
      decoded = decodeExport(signal, Buffer.from(body, exportBodyEncoding(encoding)), encoding, receivedMs).records;
    } catch (error) {
      return `an OTLP export of the job no longer decodes: ${error instanceof Error ? error.message : String(error)}`;
    }
    for (const [kind, list] of Object.entries(decoded) as [RecordKind, unknown[]][]) {
      const into = (all[kind] ??= []);
      for (const item of list) into.push({ orgId, projectId, record: item });
    }
  }
  return all;
}
const kindJob = z.object({ items: z.array(z.unknown()) });

/** A telemetry job's records by kind, in whichever format it was written, or why it cannot be read. */
export function telemetryJobRecords(name: string, data: unknown): TelemetryRecords | string {
  if (name === TELEMETRY_JOB) {
    const job = recordsJob.safeParse(data);
    if (!job.success) return `malformed telemetry job ${name}: ${job.error.issues[0]?.message}`;
    if ((job.data.v ?? TELEMETRY_JOB_VERSION) > TELEMETRY_JOB_VERSION) return `telemetry job format ${job.data.v} is newer than this release reads (${TELEMETRY_JOB_VERSION})`;
    const records = job.data.records as TelemetryRecords;
    return job.data.exports?.length ? withExports(records, job.data.exports) : records;
  }
  if ((recordKinds as string[]).includes(name)) {
    const job = kindJob.safeParse(data);
    return job.success ? { [name]: job.data.items } : `malformed telemetry job ${name}: ${job.error.issues[0]?.message}`;
  }
  return `unknown telemetry job ${name}`;
}

const stamped = (record: z.ZodType) => z.object({ items: z.array(z.object({ orgId: z.string(), projectId: z.string(), record })).min(1) });

/** Each kind's part of a telemetry job, with the schema of its records. */
export const telemetryParts = Object.fromEntries(
  Object.entries(recordSchemas).map(([kind, schema]) => [kind, stamped(schema)]),
) as unknown as { [K in RecordKind]: z.ZodType<TelemetryBatch<K>> };

/** Every queue and job the workers run, with the payload each job carries (ids and small records, never secrets). */
export const jobs = {
  telemetry: { [TELEMETRY_JOB]: recordsJob },
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
