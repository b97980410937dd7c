import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import { createSymbolicator } from '../../shared/features/artifacts/symbolicate.js';
import { ingestSdkCheckIns } from '../../shared/features/cron/service.js';
import { ingestErrorEvents } from '../../shared/features/issues/service.js';
import { ingestFeedback } from '../../shared/features/feedback/service.js';
import { ingestLogs } from '../../shared/features/logs/service.js';
import { ingestMetricPoints } from '../../shared/features/metrics/service.js';
import { scrubFieldsOf } from '../../shared/features/projects/service.js';
import { ingestSessions } from '../../shared/features/releases/service.js';
import { ingestReplayEvents, ingestReplayRecordings } from '../../shared/features/replays/service.js';
import { ingestSpans } from '../../shared/features/traces/service.js';
import { countDropped, countUsage } from '../../shared/features/usage/service.js';
import { jobs, TELEMETRY_JOB, telemetryParts, type TelemetryBatch } from '../../shared/queues.js';
import type { RecordKind } from '../../shared/telemetry/records.js';
import { scrubRecords } from '../../shared/telemetry/scrub.js';

type Handlers = { [K in RecordKind]: (batch: TelemetryBatch<K>, batchId: string) => Promise<void> };

/** One handler per record kind; each stores its batch idempotently, so a retried job changes nothing twice. */
function handlers(blobs: BlobStore): Handlers {
  // one per worker process: its LRU keeps the source maps it parsed
  const symbolicator = createSymbolicator(blobs);
  return {
    errors: ({ items }, batchId) => ingestErrorEvents(items, batchId, new Date(), symbolicator),
    feedback: ({ items }) => ingestFeedback(items),
    spans: ({ items }) => ingestSpans(items),
    logs: ({ items }) => ingestLogs(items),
    metrics: ({ items }) => ingestMetricPoints(items),
    checkins: ({ items }) => ingestSdkCheckIns(items),
    sessions: ({ items }, batchId) => ingestSessions(items, batchId),
    replay_events: ({ items }) => ingestReplayEvents(items),
    replay_recordings: ({ items }) => ingestReplayRecordings(items, blobs),
    outcomes: ({ items }, batchId) => countDropped(items, batchId),
  };
}

/**
 * A huge request's records are stored in parts of at most this many, each with a batch id of its own
 * derived from the job's, so a retry of the job repeats exactly the same parts.
 */
const PART_SIZE = 500;

export function telemetryProcessor(blobs: BlobStore) {
  const byKind = handlers(blobs);
  return async (job: Job) => {
    const records = jobs.telemetry[TELEMETRY_JOB].safeParse(job.name === TELEMETRY_JOB ? job.data : undefined);
    if (!records.success) throw new UnrecoverableError(`malformed telemetry job ${job.name}: ${records.error.issues[0]?.message}`);
    // Every part is checked before any is stored: a job is stored whole or not at all.
    const parts = Object.entries(records.data.records).map(([kind, items]) => {
      const batch = telemetryParts[kind as RecordKind].safeParse({ items });
      if (!batch.success) throw new UnrecoverableError(`malformed ${kind} records: ${batch.error.issues[0]?.message}`);
      return [kind as RecordKind, batch.data.items] as const;
    });
    // Credentials are scrubbed here, before anything is stored, with each project's own field names too.
    const scrubFields = await scrubFieldsOf(parts.flatMap(([, items]) => items.map((item) => item.projectId)));
    const extraNamesOf = (projectId: string) => scrubFields.get(projectId) ?? [];
    for (const [kind, items] of parts) {
      for (let start = 0; start < items.length; start += PART_SIZE) {
        const part = scrubRecords(kind, items.slice(start, start + PART_SIZE), extraNamesOf);
        // ingest gives each job a random id, kept when a spooled job is replayed
        const batchId = `${job.id}/${kind}/${start / PART_SIZE}`;
        await (byKind[kind] as (batch: unknown, batchId: string) => Promise<void>)({ items: part }, batchId);
        if (kind !== 'outcomes') await countUsage(kind, part, batchId);
      }
    }
  };
}
