/**
 * The write side of traces: the workers' storing of spans (on pages of their trace), the trace summaries
 * the list reads, and what spans count into the service, endpoint, query, queue and release rollups.
 * The reads are in service.ts.
 */
import { countIntoReleases } from '../releases/service.js';
import { Types, type mongo } from 'mongoose';
import type { SpanRecord, Stamped } from '../../telemetry/records.js';
import { epochMinuteOf, MINUTE_MS, minuteOf } from '../../telemetry/time-buckets.js';
import { attributePairs, contentId, groupBy, inParallel, insertNew, PARALLEL_WRITES, upsertReturning } from '../../telemetry/storage.js';
import { groupCommit } from '../../telemetry/group-commit.js';
import { RollupBatch } from '../../telemetry/rollups.js';
import { directObservations, observationRollups, pairedObservations, pairingFacts, type Observation, type PendingCall, type RemoteEntry } from '../services/rollups.js';
import { queryCounts } from '../database/service.js';
import { QueryRollup } from '../database/model.js';
import { endpointCounts } from '../endpoints/service.js';
import { EndpointRollup } from '../endpoints/model.js';
import { queueCounts } from '../queues/service.js';
import { QueueRollup } from '../queues/model.js';
import { SpanRollup, SpanRollupHourly } from '../services/model.js';
import { Span, SPAN_PAGE_SIZE, Trace } from './model.js';

function spanDoc({ orgId, projectId, record }: Stamped<SpanRecord>) {
  return {
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    traceId: record.traceId,
    spanId: record.spanId,
    parentSpanId: record.parentSpanId,
    name: record.name,
    kind: record.kind,
    service: record.service,
    serviceVersion: record.serviceVersion ?? null,
    environment: record.environment ?? null,
    release: record.release ?? null,
    startAt: new Date(record.startMs),
    endAt: new Date(record.endMs),
    durationMs: record.durationMs,
    status: record.status,
    statusMessage: record.statusMessage ?? null,
    category: record.category,
    http: record.http ?? null,
    db: record.db ?? null,
    messaging: record.messaging ?? null,
    peerService: record.peerService ?? null,
    isSegment: record.isSegment,
    attributes: attributePairs(record.attributes),
    events: record.events.map((event) => ({ name: event.name, time: new Date(event.timeMs), attributes: attributePairs(event.attributes) })),
    links: record.links.map((link) => ({ traceId: link.traceId, spanId: link.spanId, attributes: attributePairs(link.attributes) })),
    source: record.source,
    /** Where the span is listed in its trace (see placeOnPages and movePages); set before it is stored. */
    page: 0,
  };
}

export type StoredSpan = ReturnType<typeof spanDoc>;

interface TraceDelta {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  traceId: string;
  startAt: Date;
  endAt: Date;
  spanCount: number;
  errorCount: number;
  services: Set<string>;
  root: { rootName: string; rootService: string } | undefined;
  /** The halves of calls between services these spans bring (see services/rollups.ts). */
  pairing: { calls: PendingCall[]; entries: RemoteEntry[] };
  facets: Set<string>;
  maxSpanMs: number;
}

/** Attribute values longer than this, and a span's attributes past this many, are not searchable in the trace list. */
const FACET_VALUE_MAX = 200;
const FACET_ATTRIBUTES_MAX = 64;
/** Tokens one batch adds to a trace's facets at most: the spans' own fields first, then attributes. */
const FACETS_PER_BATCH_MAX = 512;

/** A span's own values that the trace list filters on, as `field=value` tokens. */
function facetsOf(span: StoredSpan): string[] {
  const tokens = [`service=${span.service}`, `name=${span.name}`, `kind=${span.kind}`, `status=${span.status}`];
  if (span.http?.route) tokens.push(`name=${span.http.route}`);
  if (span.http?.statusCode) tokens.push(`http_status=${span.http.statusCode}`);
  for (const { key, value } of span.attributes.slice(0, FACET_ATTRIBUTES_MAX)) {
    if (typeof value === 'object') continue;
    const text = String(value);
    if (text.length <= FACET_VALUE_MAX) tokens.push(`attr=${key}:${text}`);
  }
  return tokens;
}

/** Ticks of a minute: a busy minute's traces are read a twelfth at a time. */
export const TICKS_PER_MINUTE = 12;
const TICK_MS = MINUTE_MS / TICKS_PER_MINUTE;
/** The five seconds of its minute a time falls in, 0 to 11. */
const tickOf = (ms: number) => Math.floor((ms - minuteOf(ms)) / TICK_MS);

/** A trace summary's `_id`: the same project and trace id always address the same document. */
const traceKey = (projectId: Types.ObjectId, traceId: string) => contentId('trace', projectId.toHexString(), traceId);

/** Spans grouped by the trace summary they count into (project and trace id), in one pass. */
function byTrace(spans: StoredSpan[]): StoredSpan[][] {
  const groups = new Map<string, StoredSpan[]>();
  for (const span of spans) {
    const key = `${span.projectId.toHexString()}:${span.traceId}`;
    const group = groups.get(key);
    if (group) group.push(span);
    else groups.set(key, [span]);
  }
  return [...groups.values()];
}

/** What the newly stored spans add to each trace's summary. */
function traceDeltas(spans: StoredSpan[]): TraceDelta[] {
  return byTrace(spans).map((ofTrace) => {
    const first = ofTrace[0]!;
    const root = ofTrace.find((span) => span.parentSpanId === null);
    return {
      orgId: first.orgId,
      projectId: first.projectId,
      traceId: first.traceId,
      startAt: new Date(ofTrace.reduce((min, span) => Math.min(min, span.startAt.getTime()), Infinity)),
      endAt: new Date(ofTrace.reduce((max, span) => Math.max(max, span.endAt.getTime()), -Infinity)),
      spanCount: ofTrace.length,
      errorCount: ofTrace.filter((span) => span.status === 'error').length,
      services: new Set(ofTrace.map((span) => span.service)),
      root: root && { rootName: root.name, rootService: root.service },
      pairing: pairingFacts(ofTrace),
      facets: new Set(
        ofTrace
          .flatMap(facetsOf)
          .sort((a, b) => Number(a.startsWith('attr=')) - Number(b.startsWith('attr=')))
          .slice(0, FACETS_PER_BATCH_MAX),
      ),
      maxSpanMs: ofTrace.reduce((max, span) => Math.max(max, span.durationMs), 0),
    };
  });
}

function summaryUpdate(delta: TraceDelta): mongo.UpdateFilter<mongo.Document> {
  const update = {
    $setOnInsert: { orgId: delta.orgId, projectId: delta.projectId, traceId: delta.traceId, minute: epochMinuteOf(delta.startAt.getTime()), tick: tickOf(delta.startAt.getTime()) },
    $min: { startAt: delta.startAt },
    $max: { endAt: delta.endAt, maxSpanMs: delta.maxSpanMs },
    $inc: { spanCount: delta.spanCount, errorCount: delta.errorCount },
    $addToSet: { services: { $each: [...delta.services] }, facets: { $each: [...delta.facets] } },
    ...(delta.root && { $set: delta.root }),
    ...((delta.pairing.calls.length > 0 || delta.pairing.entries.length > 0) && {
      $push: { calls: { $each: delta.pairing.calls }, entries: { $each: delta.pairing.entries } },
    }),
  };
  // the driver's types refuse `$push` of an interface's values into a schemaless document
  return update as unknown as mongo.UpdateFilter<mongo.Document>;
}

/**
 * Folds a trace's new spans into its summary and answers the calls between services they complete.
 * Addressed by a derived _id, and one write at a time per trace, so that of two writes bringing
 * the halves of a call the second sees both.
 */
async function pairInTrace(delta: TraceDelta): Promise<{ observations: Observation[]; spansBefore: number }> {
  const trace = await upsertReturning(Trace.collection, traceKey(delta.projectId, delta.traceId), summaryUpdate(delta));
  const all = { calls: (trace?.calls ?? []) as PendingCall[], entries: (trace?.entries ?? []) as RemoteEntry[] };
  return { observations: pairedObservations(delta, all, delta.pairing), spansBefore: ((trace?.spanCount as number | undefined) ?? delta.spanCount) - delta.spanCount };
}

/**
 * How many spans this process has stored of the traces it wrote to last, by summary key: where the
 * next spans of such a trace go, without reading its summary first. Oldest first, at most
 * RECENT_TRACES entries.
 */
const recentTraceSizes = new Map<string, number>();
const RECENT_TRACES = 10_000;

function rememberTraceSize(key: string, spans: number): void {
  recentTraceSizes.delete(key);
  recentTraceSizes.set(key, spans);
  if (recentTraceSizes.size > RECENT_TRACES) recentTraceSizes.delete(recentTraceSizes.keys().next().value!);
}

const summaryKeyOf = (span: StoredSpan) => traceKey(span.projectId, span.traceId).toHexString();

/**
 * Puts each span of one trace on its page: after the `before` spans its trace held, in the order they
 * arrived. Answers the spans whose page this changed, with the page each was on.
 */
function placeOnPages(ofTrace: StoredSpan[], before: number): { span: StoredSpan; from: number }[] {
  const moved: { span: StoredSpan; from: number }[] = [];
  ofTrace.forEach((span, index) => {
    const page = Math.floor((before + index) / SPAN_PAGE_SIZE);
    if (span.page !== page) moved.push({ span, from: span.page });
    span.page = page;
  });
  return moved;
}

/** A trace's first summary, as summaryUpdate would create it from nothing. */
function firstSummary(delta: TraceDelta) {
  return {
    _id: traceKey(delta.projectId, delta.traceId),
    orgId: delta.orgId,
    projectId: delta.projectId,
    traceId: delta.traceId,
    minute: epochMinuteOf(delta.startAt.getTime()),
    tick: tickOf(delta.startAt.getTime()),
    startAt: delta.startAt,
    endAt: delta.endAt,
    maxSpanMs: delta.maxSpanMs,
    spanCount: delta.spanCount,
    errorCount: delta.errorCount,
    services: [...delta.services],
    facets: [...delta.facets],
    ...delta.root,
  };
}

/**
 * Writes the summaries of traces that call no other service and answers how many spans each
 * trace held before, by summary key, for the traces that had a summary already. The first
 * summaries are inserted together (an insert costs FerretDB a fraction of an update); a trace
 * whose summary exists is updated on its own, the update answering the count it replaced.
 */
async function writeSummaries(deltas: TraceDelta[]): Promise<Map<string, number>> {
  const created = new Set((await insertNew(Trace.collection, deltas.map(firstSummary))).map((doc) => doc._id.toHexString()));
  const before = new Map<string, number>();
  await inParallel(
    deltas.filter((delta) => !created.has(traceKey(delta.projectId, delta.traceId).toHexString())),
    PARALLEL_WRITES,
    async (delta) => {
      // Addressed by a derived _id: FerretDB's SQLite backend answers _id lookups from its index
      // but scans the collection for other filters, which made each batch slower as traces grew.
      const key = traceKey(delta.projectId, delta.traceId);
      const old = await upsertReturning(Trace.collection, key, summaryUpdate(delta), 'before');
      before.set(key.toHexString(), (old?.spanCount as number | undefined) ?? 0);
    },
  );
  return before;
}

/**
 * Moves the newly stored spans of each trace to the pages that follow the spans it held before
 * (`before`, by summary key, from the summaries' updates; a trace missing there had none). Spans are
 * inserted on the pages this process expects (`expected`, see recentTraceSizes), so this writes only
 * when another process stored spans of the same trace since, or a flush of this one counted after a
 * later one; such a trace's expected size is then corrected. The summaries' updates take one trace
 * at a time, so two batches of one trace never share a page's places. A crash between the insert and
 * this leaves those spans on an earlier page, which then holds more than SPAN_PAGE_SIZE; each span is
 * still on exactly one page.
 */
async function movePages(inserted: StoredSpan[], before: Map<string, number>, expected: Map<string, number>): Promise<void> {
  const moves = byTrace(inserted).flatMap((ofTrace) => {
    const key = summaryKeyOf(ofTrace[0]!);
    const held = before.get(key) ?? 0;
    if (held !== expected.get(key)) rememberTraceSize(key, held + ofTrace.length);
    return [...groupBy(placeOnPages(ofTrace, held), ({ span, from }) => `${from}:${span.page}`).values()];
  });
  await inParallel(moves, PARALLEL_WRITES, async (moved) => {
    const { span, from } = moved[0]!;
    const spanIds = moved.map((move) => move.span.spanId);
    await Span.collection.updateMany({ projectId: span.projectId, traceId: span.traceId, page: from, spanId: { $in: spanIds } }, { $set: { page: span.page } });
  });
}

/**
 * Spans stored before traces were read a page at a time have no page: they go on their trace's first,
 * so opening an older trace still lists them. Answers how many it moved.
 */
export async function pageUnpagedSpans(): Promise<number> {
  return (await Span.updateMany({ page: { $exists: false } }, { $set: { page: 0 } })).modifiedCount;
}

/**
 * Stores spans once per {project, trace, span}, on the pages their trace is read by, and answers
 * once they are stored, with what settles when they are folded into their trace summaries and
 * counted into the service, endpoint, database-query and queue rollups: the worker's next flush
 * need not wait for that. Only the spans this call actually inserted are counted, so a replayed batch
 * adds nothing; a crash between the writes leaves those spans uncounted rather than counted twice.
 */
export async function placeSpans(items: Stamped<SpanRecord>[]): Promise<{ counted: Promise<void> }> {
  const docs = items.map(spanDoc);
  const expected = new Map<string, number>();
  for (const ofTrace of byTrace(docs)) {
    const key = summaryKeyOf(ofTrace[0]!);
    const guess = recentTraceSizes.get(key) ?? 0;
    placeOnPages(ofTrace, guess);
    expected.set(key, guess);
    rememberTraceSize(key, guess + ofTrace.length);
  }
  const inserted = await insertNew(Span.collection, docs);
  // the summaries (which pair calls for the service map), the queue waits and the releases side by
  // side, then the rollups: each follows only the inserted spans
  const counted = Promise.all([
    Promise.all([summarize(inserted, expected), queueCounts(inserted)]).then(([observations, queues]) =>
      writeSpanRollups({ services: observationRollups(observations), endpoints: endpointCounts(inserted), queries: queryCounts(inserted), queues }),
    ),
    // the requests services served (entry spans, as in the service list), by release and environment
    countIntoReleases(
      inserted
        .filter((span) => span.isSegment)
        .map((span) => ({
          orgId: span.orgId,
          projectId: span.projectId,
          atMs: span.startAt.getTime(),
          release: span.release ?? null,
          environment: span.environment ?? null,
          counts: { requests: 1, failed: span.status === 'error' || (span.http?.statusCode ?? 0) >= 500 ? 1 : 0 },
          latencyMs: span.durationMs,
        })),
    ),
  ]).then(() => undefined);
  return { counted };
}

/** Stores and counts spans (see placeSpans), answering once they are counted. */
export async function ingestSpans(items: Stamped<SpanRecord>[]): Promise<void> {
  await (await placeSpans(items)).counted;
}

/** What a flush's spans add to the service (and edge), endpoint, database-query and queue rollups. */
interface SpanRollups {
  services: RollupBatch;
  endpoints: RollupBatch;
  queries: RollupBatch;
  queues: RollupBatch;
}

/**
 * The rollups of the flushes stored while the last write of them ran, written together (see
 * groupCommit): a rollup document that several flushes add to is written once. A flush's spans touch
 * a few dozen rollup documents, not hundreds as error events touch issues, so a busy store does not
 * hold the next write back: in the e2e bench that wait cost more at the end of the run than it saved.
 */
const writeSpanRollups = groupCommit(async (flushes: SpanRollups[]) => {
  const merged = (kind: keyof SpanRollups) => RollupBatch.merged(flushes.map((flush) => flush[kind]));
  await Promise.all([
    merged('services').write(SpanRollup.collection, SpanRollupHourly.collection),
    merged('endpoints').write(EndpointRollup.collection),
    merged('queries').write(QueryRollup.collection),
    merged('queues').write(QueueRollup.collection),
  ]);
}, { gatherWhileBusy: false });

/**
 * Folds newly stored spans into their traces' summaries and moves them to their pages (`expected`:
 * the spans each trace was expected to hold before them). Answers what they tell the service map and
 * the service list, calls paired with their callees.
 */
async function summarize(inserted: StoredSpan[], expected: Map<string, number>): Promise<Observation[]> {
  const deltas = traceDeltas(inserted);
  const pairing = deltas.filter((delta) => delta.pairing.calls.length > 0 || delta.pairing.entries.length > 0);
  const spansBefore = await writeSummaries(deltas.filter((delta) => !pairing.includes(delta)));
  const observations = directObservations(inserted);
  await inParallel(pairing, PARALLEL_WRITES, async (delta) => {
    const paired = await pairInTrace(delta);
    observations.push(...paired.observations);
    spansBefore.set(traceKey(delta.projectId, delta.traceId).toHexString(), paired.spansBefore);
  });
  await movePages(inserted, spansBefore, expected);
  return observations;
}
