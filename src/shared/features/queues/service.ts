import type { mongo, Types } from 'mongoose';
import type { z } from 'zod';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { durationIncrement, RollupBatch, type RollupPlace } from '../../telemetry/rollups.js';
import { contentId, inParallel, PARALLEL_WRITES, upsertReturning } from '../../telemetry/storage.js';
import { MINUTE_MS } from '../../telemetry/time-buckets.js';
import { inWindowByHour, rounded, type ViewScope } from '../../views.js';
import { MessageTiming, QueueRollup } from './model.js';
import type { queueJson, queuesQuery } from './schemas.js';

/** What the queue rollups need of a stored span. */
export interface MessagingSpan {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  service: string;
  kind: string;
  status: string;
  category: string;
  startAt: Date;
  durationMs: number;
  messaging: { system?: string | null; destination?: string | null; operation?: string | null } | null;
  attributes: { key: string; value: unknown }[];
  links: { traceId: string; spanId: string }[];
}

/** Sentry's queue instrumentation states the wait itself, in milliseconds, on the process span. */
const RECEIVE_LATENCY = 'messaging.message.receive.latency';

/** A rollup key of a queue and a service on one side of it. */
type QueueKey = {
  queue: string;
  system: string | null;
  service: string;
};

/** A consumer span's start and where its wait is counted, as kept in a MessageTiming document. */
type Consumer = QueueKey & { startMs: number };

const keyOf = (span: MessagingSpan): QueueKey => ({
  queue: span.messaging?.destination ?? span.messaging?.system ?? 'queue',
  system: span.messaging?.system ?? null,
  service: span.service,
});

/**
 * A consumer span that processes messages: `receive` spans only fetch them, and would count a
 * message twice where the instrumentation also records its processing.
 */
const isProcessing = (span: MessagingSpan) => span.kind === 'consumer' && span.messaging?.operation !== 'receive';

const timingId = (projectId: Types.ObjectId, traceId: string, spanId: string) => contentId('message-timing', projectId.toHexString(), traceId, spanId);

/**
 * Counts messaging spans per queue: producer spans as published, processing consumer spans as
 * processed (failed when their status is error) with their duration. A consumer's wait is its
 * RECEIVE_LATENCY attribute when it has one; otherwise it is paired, through MessageTiming, with
 * the producer span it links to (or, without links, its parent), whichever of the two arrives second.
 */
export async function queueCounts(spans: MessagingSpan[]): Promise<RollupBatch> {
  const batch = new RollupBatch('queue-rollup');
  const place = (span: MessagingSpan, atMs = span.startAt.getTime()): RollupPlace => ({ orgId: span.orgId, projectId: span.projectId, atMs });
  const addWait = (span: MessagingSpan, consumer: Consumer, ms: number) =>
    batch.add(place(span, consumer.startMs), { queue: consumer.queue, system: consumer.system, service: consumer.service }, { waited: 1, ...durationIncrement('wait', Math.max(0, ms)) });
  const pairings: (() => Promise<void>)[] = [];
  for (const span of spans) {
    if (span.category !== 'messaging') continue;
    const key = keyOf(span);
    if (span.kind === 'producer') {
      batch.add(place(span), key, { published: 1 });
      pairings.push(async () => {
        const publishedAt = span.startAt;
        const timing = await upsertReturning(MessageTiming.collection, timingId(span.projectId, span.traceId, span.spanId), {
          $setOnInsert: { orgId: span.orgId, projectId: span.projectId, at: span.startAt, consumers: [] },
          $set: { publishedAt },
        });
        for (const consumer of (timing?.consumers ?? []) as Consumer[]) addWait(span, consumer, consumer.startMs - publishedAt.getTime());
      });
    } else if (isProcessing(span)) {
      batch.add(place(span), key, { processed: 1, failed: span.status === 'error' ? 1 : 0, ...durationIncrement('processing', span.durationMs) });
      const consumer: Consumer = { ...key, startMs: span.startAt.getTime() };
      const stated = span.attributes.find((pair) => pair.key === RECEIVE_LATENCY)?.value;
      if (typeof stated === 'number' && Number.isFinite(stated)) {
        addWait(span, consumer, stated);
        continue;
      }
      const producers = span.links.length > 0 ? span.links : span.parentSpanId ? [{ traceId: span.traceId, spanId: span.parentSpanId }] : [];
      for (const producer of producers) {
        pairings.push(async () => {
          const update = { $setOnInsert: { orgId: span.orgId, projectId: span.projectId, at: span.startAt, publishedAt: null }, $push: { consumers: consumer } };
          // the driver's types refuse `$push` of an interface's values into a schemaless document
          const timing = await upsertReturning(MessageTiming.collection, timingId(span.projectId, producer.traceId, producer.spanId), update as unknown as mongo.UpdateFilter<mongo.Document>);
          const publishedAt = timing?.publishedAt as Date | null | undefined;
          if (publishedAt) addWait(span, consumer, consumer.startMs - publishedAt.getTime());
        });
      }
    }
  }
  await inParallel(pairings, PARALLEL_WRITES, (pair) => pair());
  return batch;
}

type QueueRollupDoc = QueueKey & {
  projectId: Types.ObjectId;
  published?: number;
  processed?: number;
  failed?: number;
  processing?: Buckets;
  waited?: number;
  wait?: Buckets;
};


/**
 * Each queue's behaviour in the window: messages published and processed, failures, processing and
 * wait p95, and how fast the backlog grew (published minus processed, per minute of the window).
 */
export async function listQueues(scope: ViewScope, query: z.output<typeof queuesQuery>): Promise<{ from: string; to: string; data: z.infer<typeof queueJson>[] }> {
  const docs = await inWindowByHour<QueueRollupDoc>(QueueRollup.collection, scope, scope.from, scope.to, query.queue !== undefined ? { queue: query.queue } : {});
  const queues = new Map<string, { queue: string; system: string | null; published: number; processed: number; failed: number; waited: number; processing: Buckets; wait: Buckets; producers: Set<string>; consumers: Set<string>; projects: Set<string> }>();
  for (const doc of docs) {
    const key = JSON.stringify([doc.queue, doc.system]);
    let sum = queues.get(key);
    if (!sum) {
      sum = { queue: doc.queue, system: doc.system, published: 0, processed: 0, failed: 0, waited: 0, processing: {}, wait: {}, producers: new Set(), consumers: new Set(), projects: new Set() };
      queues.set(key, sum);
    }
    // a rollup holds only the counters its writes incremented
    sum.published += doc.published ?? 0;
    sum.processed += doc.processed ?? 0;
    sum.failed += doc.failed ?? 0;
    sum.waited += doc.waited ?? 0;
    addBuckets(sum.processing, doc.processing);
    addBuckets(sum.wait, doc.wait);
    if ((doc.published ?? 0) > 0) sum.producers.add(doc.service);
    if ((doc.processed ?? 0) > 0) sum.consumers.add(doc.service);
    sum.projects.add(doc.projectId.toHexString());
  }
  const minutes = Math.max(1, (scope.to.getTime() - scope.from.getTime()) / MINUTE_MS);
  const data = [...queues.values()].map((sum) => ({
    queue: sum.queue,
    system: sum.system,
    project_ids: [...sum.projects].sort(),
    producers: [...sum.producers].sort(),
    consumers: [...sum.consumers].sort(),
    published: sum.published,
    processed: sum.processed,
    failed: sum.failed,
    failure_rate: rounded(sum.processed > 0 ? sum.failed / sum.processed : 0, 4)!,
    p50_processing_ms: rounded(percentile(sum.processing, 50)),
    p95_processing_ms: rounded(percentile(sum.processing, 95)),
    p95_wait_ms: rounded(percentile(sum.wait, 95)),
    waits_measured: sum.waited,
    backlog_growth_per_min: rounded((sum.published - sum.processed) / minutes, 3)!,
  }));
  data.sort((a, b) => b.published + b.processed - (a.published + a.processed) || a.queue.localeCompare(b.queue));
  return { from: scope.from.toISOString(), to: scope.to.toISOString(), data };
}
