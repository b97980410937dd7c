import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import { createSymbolicator } from '../../shared/features/artifacts/symbolicate.js';
import { ingestSdkCheckIns } from '../../shared/features/cron/service.js';
import { ingestErrorEvents } from '../../shared/features/issues/service.js';
import { ingestFeedback } from '../../shared/features/feedback/service.js';
import { ingestLogs } from '../../shared/features/logs/service.js';
import { ingestMetricPoints } from '../../shared/features/metrics/service.js';
import { ingestSessions } from '../../shared/features/releases/service.js';
import { ingestReplayEvents, ingestReplayRecordings } from '../../shared/features/replays/service.js';
import { ingestSpans } from '../../shared/features/traces/service.js';
import { countUsage } from '../../shared/features/usage/service.js';
import { telemetryJobs, type TelemetryBatch } from '../../shared/queues.js';
import type { RecordKind } from '../../shared/telemetry/records.js';

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
  };
}

export function telemetryProcessor(blobs: BlobStore) {
  const byKind = handlers(blobs);
  return async (job: Job) => {
    const kind = job.name as RecordKind;
    const schema = telemetryJobs[kind];
    if (!schema) throw new UnrecoverableError(`unknown telemetry job ${job.name}`);
    const batch = schema.safeParse(job.data);
    if (!batch.success) throw new UnrecoverableError(`malformed ${kind} batch: ${batch.error.issues[0]?.message}`);
    // Job ids restart if Redis is ever emptied; with the creation time the batch id stays unique.
    const batchId = `${job.id}@${job.timestamp}`;
    await (byKind[kind] as (batch: unknown, batchId: string) => Promise<void>)(batch.data, batchId);
    await countUsage(kind, batch.data.items, batchId);
  };
}
