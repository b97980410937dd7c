import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import type { Logger } from '../../shared/logger.js';
import { createSymbolicator } from '../../shared/features/artifacts/symbolicate.js';
import { ingestSdkCheckIns } from '../../shared/features/cron/service.js';
import { ingestFeedback } from '../../shared/features/feedback/service.js';
import { placeErrorBatches } from '../../shared/features/issues/store.js';
import { ingestLogs } from '../../shared/features/logs/store.js';
import { ingestMetricPoints } from '../../shared/features/metrics/store.js';
import { scrubFieldsOf } from '../../shared/features/projects/service.js';
import { ingestSessions } from '../../shared/features/releases/service.js';
import { ingestReplayEvents, ingestReplayRecordings } from '../../shared/features/replays/service.js';
import { placeSpans } from '../../shared/features/traces/store.js';
import { countDropped, countUsage } from '../../shared/features/usage/service.js';
import { telemetryJobRecords, telemetryParts } from '../../shared/queues.js';
import type { z } from 'zod';
import { recordKinds, type RecordBatch, type RecordKind, type RecordOf, type Stamped } from '../../shared/telemetry/records.js';
import { scrubRecords } from '../../shared/telemetry/scrub.js';

/** What a handler left to finish after it returned: spans are stored at once and counted later. */
type Later = { counted: Promise<void> };
type Handlers = { [K in RecordKind]: (batches: RecordBatch<RecordOf<K>>[]) => Promise<void | Later> };

const itemsOf = <T>(batches: RecordBatch<T>[]) => batches.flatMap(({ items }) => items);

/**
 * One handler per record kind, each storing a flush's batches idempotently, so a retried job
 * changes nothing twice. Kinds stored by unique keys take the flush's records in one call; kinds
 * that count with `$inc` keep each batch's id.
 */
function handlers(blobs: BlobStore, logger: Logger): Handlers {
  // one per worker process: its LRU keeps the source maps it parsed
  const symbolicator = createSymbolicator(blobs);
  return {
    // the job completes once its events are stored and noted as waiting for their count
    errors: async (batches) => {
      const { counted } = await placeErrorBatches(batches, new Date(), symbolicator);
      counted.catch((error: unknown) => logger.error({ err: error }, 'counting error events failed; the recount sweep takes them up'));
    },
    feedback: (batches) => ingestFeedback(itemsOf(batches)),
    spans: (batches) => placeSpans(itemsOf(batches)),
    logs: (batches) => ingestLogs(itemsOf(batches)),
    metrics: (batches) => ingestMetricPoints(itemsOf(batches)),
    checkins: (batches) => ingestSdkCheckIns(itemsOf(batches)),
    sessions: async (batches) => {
      for (const { items, batchId } of batches) await ingestSessions(items, batchId);
    },
    replay_events: (batches) => ingestReplayEvents(itemsOf(batches)),
    replay_recordings: (batches) => ingestReplayRecordings(itemsOf(batches), blobs),
    outcomes: (batches) => countDropped(batches),
  };
}

/**
 * A huge request's records are stored in parts of at most this many, each with a batch id of its own
 * derived from the job's, so a retry of the job repeats exactly the same parts.
 */
const PART_SIZE = 500;

/** A job's records checked and cut into parts, each with its batch id. */
type JobParts = { kind: RecordKind; batch: RecordBatch<RecordOf<RecordKind>> }[];

/** Checks every part of a job before any is stored: a job is stored whole or not at all. */
function partsOf(job: Job): JobParts {
  const records = telemetryJobRecords(job.name, job.data);
  if (typeof records === 'string') throw new UnrecoverableError(records);
  return Object.entries(records).flatMap(([name, items]) => {
    const kind = name as RecordKind;
    const parsed = (telemetryParts[kind] as z.ZodType<{ items: Stamped<RecordOf<RecordKind>>[] }>).safeParse({ items });
    if (!parsed.success) throw new UnrecoverableError(`malformed ${kind} records: ${parsed.error.issues[0]?.message}`);
    const parts: JobParts = [];
    // ingest gives each job a random id, kept when a spooled job is replayed
    for (let start = 0; start < parsed.data.items.length; start += PART_SIZE) {
      parts.push({ kind, batch: { batchId: `${job.id}/${kind}/${start / PART_SIZE}`, items: parsed.data.items.slice(start, start + PART_SIZE) } });
    }
    return parts;
  });
}

/** Counts a flush's records into their projects' daily usage, kind by kind (see countUsage: once per batch). */
async function countFlushUsage(batches: Map<RecordKind, RecordBatch<RecordOf<RecordKind>>[]>): Promise<void> {
  for (const [kind, ofKind] of batches) if (kind !== 'outcomes') await countUsage(kind, ofKind);
}

/**
 * Stores the parts of several jobs as one flush: each kind's batches go to its handler together, so
 * an issue, an end user or a rollup document touched by many jobs is written once. Error events go
 * first: they are what a person waits to see. Answers once everything is stored, with what settles
 * when the flush's spans and its usage are counted too, which the next flush need not wait for.
 * Error events are counted apart from their jobs: once stored, with a note of their batches that
 * outlives this process until the count is done.
 */
function storeFlush(byKind: Handlers) {
  return async (jobs: JobParts[]): Promise<Later> => {
    const parts = jobs.flat();
    // Credentials are scrubbed here, before anything is stored, with each project's own field names too.
    const scrubFields = await scrubFieldsOf(parts.flatMap(({ batch }) => batch.items.map((item) => item.projectId)));
    const extraNamesOf = (projectId: string) => scrubFields.get(projectId) ?? [];
    const batches = new Map<RecordKind, RecordBatch<RecordOf<RecordKind>>[]>();
    for (const { kind, batch } of parts) {
      const scrubbed = { batchId: batch.batchId, items: scrubRecords(kind, batch.items, extraNamesOf) };
      batches.set(kind, [...(batches.get(kind) ?? []), scrubbed]);
    }
    const later: Promise<void>[] = [];
    for (const kind of recordKinds) {
      const ofKind = batches.get(kind);
      if (!ofKind) continue;
      const left = await (byKind[kind] as (batches: RecordBatch<RecordOf<RecordKind>>[]) => Promise<void | Later>)(ofKind);
      if (left) {
        later.push(left.counted);
        // settled through `counted` below, or by the jobs' retry if a later kind fails first
        left.counted.catch(() => undefined);
      }
    }
    // counted while the next flush is stored: the jobs complete once it is
    const usage = countFlushUsage(batches);
    later.push(usage);
    usage.catch(() => undefined);
    return { counted: Promise.all(later).then(() => undefined) };
  };
}

/** Records one flush takes at most; jobs waiting beyond it go into the next. */
const FLUSH_RECORDS = 4_000;

interface Waiting {
  parts: JobParts;
  records: number;
  /** A job being retried is stored alone: if one job of a flush cannot be stored, the others then can. */
  alone: boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit on the worker side: the jobs a worker holds (up to its concurrency) wait while a
 * flush is being stored and go into the next one together, in the order they were taken, so a
 * replay's or a trace's records are applied in the order they arrived. At a low rate a flush is
 * one job and is stored at once; under load flushes grow with the backlog, and the writes per
 * event fall. The next flush starts as soon as one is stored; a job completes once its flush's
 * spans and usage are counted as well (see placeSpans), and its error events noted for their count
 * (see placeErrorBatches), which frees its place for the next job while issues are counted. A flush that
 * fails fails each of its jobs, and BullMQ retries them, each in a flush of its own.
 */
class Flusher {
  private waiting: Waiting[] = [];
  private flushing = false;

  constructor(private readonly store: (jobs: JobParts[]) => Promise<Later>) {}

  submit(parts: JobParts, alone: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ parts, records: parts.reduce((sum, { batch }) => sum + batch.items.length, 0), alone, resolve, reject });
      if (!this.flushing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.flushing = true;
    while (this.waiting.length > 0) {
      const flush = this.next();
      try {
        const { counted } = await this.store(flush.map(({ parts }) => parts));
        counted.then(
          () => flush.forEach((job) => job.resolve()),
          (error: unknown) => flush.forEach((job) => job.reject(error)),
        );
      } catch (error) {
        for (const job of flush) job.reject(error);
      }
    }
    this.flushing = false;
  }

  /** The jobs of the next flush, oldest first, up to FLUSH_RECORDS (a job alone may hold more). */
  private next(): Waiting[] {
    const first = this.waiting.shift()!;
    if (first.alone) return [first];
    const flush = [first];
    let records = first.records;
    for (let index = 0; index < this.waiting.length && records < FLUSH_RECORDS; ) {
      const job = this.waiting[index]!;
      if (job.alone || records + job.records > FLUSH_RECORDS) index++;
      else {
        flush.push(...this.waiting.splice(index, 1));
        records += job.records;
      }
    }
    return flush;
  }
}

export function telemetryProcessor(blobs: BlobStore, logger: Logger) {
  const flusher = new Flusher(storeFlush(handlers(blobs, logger)));
  return async (job: Job) => flusher.submit(partsOf(job), job.attemptsMade > 0);
}
