import { UnrecoverableError, type Job } from 'bullmq';
import { ingestErrorEvents } from '../../shared/features/issues/service.js';
import { ingestFeedback } from '../../shared/features/feedback/service.js';
import { telemetryJobs, type TelemetryBatch } from '../../shared/queues.js';
import type { RecordKind } from '../../shared/telemetry/records.js';

type Handlers = { [K in RecordKind]?: (batch: TelemetryBatch<K>, job: Job) => Promise<void> };

/** One handler per record kind; each stores its batch idempotently, so a retried job changes nothing twice. */
const handlers: Handlers = {
  errors: ({ items }) => ingestErrorEvents(items),
  feedback: ({ items }) => ingestFeedback(items),
};

export function telemetryProcessor() {
  return async (job: Job) => {
    const kind = job.name as RecordKind;
    const schema = telemetryJobs[kind];
    const handler = handlers[kind] as ((batch: unknown, job: Job) => Promise<void>) | undefined;
    if (!schema || !handler) throw new UnrecoverableError(`unknown telemetry job ${job.name}`);
    const batch = schema.safeParse(job.data);
    if (!batch.success) throw new UnrecoverableError(`malformed ${kind} batch: ${batch.error.issues[0]?.message}`);
    await handler(batch.data, job);
  };
}
