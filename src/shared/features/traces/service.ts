import { countIntoReleases } from '../releases/service.js';
import { Types, type mongo } from 'mongoose';
import type { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { cursorId, decodeCursor, encodeCursor } from '../../paging.js';
import type { SpanRecord, Stamped } from '../../telemetry/records.js';
import { epochMinuteOf, HOUR_MS, hourOf, MINUTE_MS, minuteOf } from '../../telemetry/time-buckets.js';
import { attributePairs, attributesObject, contentId, groupBy, hasAttributes, inParallel, insertNew, PARALLEL_WRITES, upsertReturning } from '../../telemetry/storage.js';
import { allInWindowByHour, hoursDown, minutesDown, newestMinutesFirst, readHours, scopeFilter, type MinuteRounds, type ViewScope } from '../../views.js';
import { groupCommit } from '../../telemetry/group-commit.js';
import { lastUnmarkedHour } from '../../telemetry/rolled-up-hours.js';
import { RollupBatch } from '../../telemetry/rollups.js';
import { ErrorEvent } from '../issues/model.js';
import { directObservations, observationRollups, pairedObservations, pairingFacts, type Observation, type PendingCall, type RemoteEntry } from '../services/rollups.js';
import { queryCounts } from '../database/service.js';
import { QueryRollup } from '../database/model.js';
import { endpointCounts } from '../endpoints/service.js';
import { EndpointRollup } from '../endpoints/model.js';
import { queueCounts } from '../queues/service.js';
import { QueueRollup } from '../queues/model.js';
import { SpanRollup, SpanRollupHourly } from '../services/model.js';
import { Span, SPAN_PAGE_SIZE, Trace } from './model.js';
import type { listTracesQuery, traceDetailJson, traceRowJson, traceSpansQuery } from './schemas.js';

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

type StoredSpan = ReturnType<typeof spanDoc>;

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
const TICKS_PER_MINUTE = 12;
const TICK_MS = MINUTE_MS / TICKS_PER_MINUTE;
/** The five seconds of its minute a time falls in, 0 to 11. */
const tickOf = (ms: number) => Math.floor((ms - minuteOf(ms)) / TICK_MS);
/** Requests in a minute (from the service rollups) from which the trace list reads the minute by tick. */
const BUSY_MINUTE_REQUESTS = 200;

/** A trace summary's `_id`: the same project and trace id always address the same document. */
export const traceKey = (projectId: Types.ObjectId, traceId: string) => contentId('trace', projectId.toHexString(), traceId);

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

type SpanDoc = StoredSpan & { _id: Types.ObjectId };

const byStart = (a: SpanDoc, b: SpanDoc) => a.startAt.getTime() - b.startAt.getTime() || a.spanId.localeCompare(b.spanId) || a._id.toHexString().localeCompare(b._id.toHexString());

/**
 * Parents before children, siblings by start; a span whose parent is not among `spans` is shown as a
 * root. Linear but for sorting: children are listed in one pass, each list sorted once.
 */
function treeOrder(spans: SpanDoc[]): { span: SpanDoc; depth: number }[] {
  const ids = new Set(spans.map((span) => span.spanId));
  const children = new Map<string | null, SpanDoc[]>();
  for (const span of spans) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) && span.parentSpanId !== span.spanId ? span.parentSpanId : null;
    const siblings = children.get(parent);
    if (siblings) siblings.push(span);
    else children.set(parent, [span]);
  }
  for (const siblings of children.values()) siblings.sort(byStart);
  const ordered: { span: SpanDoc; depth: number }[] = [];
  const visited = new Set<string>();
  const stack: { span: SpanDoc; depth: number }[] = [];
  const pushChildren = (parent: string | null, depth: number) => {
    const siblings = children.get(parent) ?? [];
    for (let i = siblings.length - 1; i >= 0; i--) stack.push({ span: siblings[i]!, depth });
  };
  pushChildren(null, 0);
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (visited.has(next.span.spanId)) continue;
    visited.add(next.span.spanId);
    ordered.push(next);
    pushChildren(next.span.spanId, next.depth + 1);
  }
  // spans caught in a parent cycle have no root; they follow the rest in start order
  for (const span of spans.filter((span) => !visited.has(span.spanId)).sort(byStart)) ordered.push({ span, depth: 0 });
  return ordered;
}

/** Error events of a trace read for its issues, at most. */
const TRACE_EVENTS_READ = 1000;

interface TraceSummaryFigures {
  startAt: Date;
  endAt: Date;
  spanCount: number;
  errorCount: number;
  services: string[];
}

/**
 * One trace: figures of the whole trace from its summaries (one per project it was sent to), and one
 * page of its spans in tree order with the issues its errors were grouped into. Spans are read a
 * stored page (SPAN_PAGE_SIZE, in the order they arrived) at a time, each one equality lookup, so an
 * answer costs the same however many spans the trace has; the cursor names the page and the last span
 * answered. Another organisation's trace is not found.
 */
export async function getTrace(orgId: Types.ObjectId, traceId: string, query: z.output<typeof traceSpansQuery> = { limit: SPAN_PAGE_SIZE }): Promise<z.infer<typeof traceDetailJson>> {
  const id = traceId.toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(id)) throw notFound('trace');
  const summaries = await Trace.find({ orgId, traceId: id }, { startAt: 1, endAt: 1, spanCount: 1, errorCount: 1, services: 1 }).lean<TraceSummaryFigures[]>();
  if (summaries.length === 0) throw notFound('trace');
  let page = 0;
  let after: { startAt: Date; spanId: string; id: Types.ObjectId } | undefined;
  if (query.cursor) {
    const [cursorPage, startAt, spanId, spanDocId] = decodeCursor(query.cursor, 4);
    if (!Number.isInteger(cursorPage) || !(startAt instanceof Date) || typeof spanId !== 'string') throw new AppError('invalid_request', 'cursor is not one this API issued');
    page = cursorPage as number;
    after = { startAt, spanId, id: cursorId(spanDocId) };
  }
  const lastPage = summaries.reduce((last, summary) => Math.max(last, Math.floor((summary.spanCount - 1) / SPAN_PAGE_SIZE)), 0);
  const found: SpanDoc[] = [];
  for (; page <= lastPage && found.length < query.limit; page++) {
    const docs = (await Span.find({ orgId, traceId: id, page }).lean<SpanDoc[]>()).sort(byStart);
    for (const doc of docs) if (!after || byStart({ ...doc, ...after, _id: after.id }, doc) < 0) found.push(doc);
    after = undefined;
  }
  const spans = found.slice(0, query.limit);
  const last = spans.at(-1);
  const more = found.length > query.limit || page <= lastPage;
  // an answer that ended with its page starts the next answer at the next page, without reading this one again
  const nextCursor = !more || !last ? null : found.length > query.limit ? [last.page, last.startAt, last.spanId, last._id.toHexString()] : [page, new Date(-8.64e15), '', '0'.repeat(24)];
  const events = await ErrorEvent.find({ orgId, traceId: id }, { issueId: 1 }).limit(TRACE_EVENTS_READ).lean();
  const start = summaries.reduce((min, summary) => Math.min(min, summary.startAt.getTime()), Infinity);
  const end = summaries.reduce((max, summary) => Math.max(max, summary.endAt.getTime()), -Infinity);
  const services = new Set<string>();
  for (const summary of summaries) for (const service of summary.services) services.add(service);
  return {
    trace_id: id,
    start: new Date(start).toISOString(),
    duration_ms: end - start,
    span_count: summaries.reduce((sum, summary) => sum + summary.spanCount, 0),
    error_count: summaries.reduce((sum, summary) => sum + summary.errorCount, 0),
    services: [...services].sort(),
    spans: treeOrder(spans).map(({ span, depth }) => ({
      span_id: span.spanId,
      parent_span_id: span.parentSpanId,
      project_id: span.projectId.toHexString(),
      service: span.service,
      name: span.name,
      kind: span.kind,
      start: span.startAt.toISOString(),
      end: span.endAt.toISOString(),
      duration_ms: span.durationMs,
      status: span.status,
      status_message: span.statusMessage,
      depth,
      attributes: attributesObject(span.attributes),
      events: span.events.map((event) => ({ name: event.name, time: event.time.toISOString(), attributes: attributesObject(event.attributes) })),
    })),
    next_cursor: nextCursor && encodeCursor(nextCursor),
    issues: [...new Set(events.map((event) => event.issueId.toHexString()))],
  };
}

type TraceQuery = z.output<typeof listTracesQuery>;

interface TraceSummaryDoc {
  _id: Types.ObjectId;
  projectId: Types.ObjectId;
  traceId: string;
  minute: number;
  tick?: number;
  startAt: Date;
  endAt: Date;
  spanCount: number;
  errorCount: number;
  services: string[];
  rootName: string | null;
  rootService: string | null;
  facets: string[];
  maxSpanMs: number;
}

/** The tokens a matching trace's facets must all hold, and whether one span must be checked to hold them together. */
function spanCriteria(query: TraceQuery) {
  const tokens = [
    query.service !== undefined && `service=${query.service}`,
    query.name !== undefined && `name=${query.name}`,
    query.kind && `kind=${query.kind}`,
    query.status && `status=${query.status}`,
    query.http_status && `http_status=${query.http_status}`,
    ...query.attribute.map(({ key, value }) => `attr=${key}:${value}`),
  ].filter((token): token is string => typeof token === 'string');
  const count = tokens.length + (query.min_duration_ms !== undefined ? 1 : 0);
  const matches = (span: SpanDoc) =>
    (query.service === undefined || span.service === query.service) &&
    (query.name === undefined || span.name === query.name || span.http?.route === query.name) &&
    (!query.kind || span.kind === query.kind) &&
    (!query.status || span.status === query.status) &&
    (!query.http_status || span.http?.statusCode === query.http_status) &&
    (query.min_duration_ms === undefined || span.durationMs >= query.min_duration_ms) &&
    hasAttributes(span.attributes, query.attribute);
  return { tokens, matches, oneSpanMustHoldAll: count > 1 };
}

/** Summaries stored before ticks were kept count as their minute's last tick. */
const tickOfDoc = (doc: { tick?: number }) => doc.tick ?? TICKS_PER_MINUTE - 1;

const newestFirst = (a: TraceSummaryDoc, b: TraceSummaryDoc) =>
  b.minute - a.minute || tickOfDoc(b) - tickOfDoc(a) || b.startAt.getTime() - a.startAt.getTime() || b._id.toHexString().localeCompare(a._id.toHexString());

/** What the trace list reads at once: a minute's summaries, or one tick of a busy minute's. */
interface ReadUnit {
  minute: number;
  tick?: number;
  /** The requests the service rollups counted in it (a tick's share of its minute's), where they were read. */
  requests?: number;
}

/**
 * The hours of the window [from, to) (newest first) that may hold a busy minute: a minute can be busy
 * only in an hour that served BUSY_MINUTE_REQUESTS requests, which the hourly rollups say in a few
 * documents an hour, where they hold the whole hour; the others are read by minute.
 */
async function busyHours(scope: ViewScope, from: Date, to: Date): Promise<Set<number>> {
  const window = hoursDown(from, to);
  const lastUnmarked = await lastUnmarkedHour(SpanRollupHourly.collection, scope.orgId);
  const hourly = window.filter((hour) => hour > lastUnmarked);
  const perHour = new Map<number, number>();
  const docs = hourly.length === 0 ? [] : await readHours<{ at: Date; count: number }>(SpanRollupHourly.collection, hourly, new Date(hourly.at(-1)! * HOUR_MS), to, { ...scopeFilter(scope), kind: 'service' }, (doc) => doc.at, { at: 1, count: 1 });
  for (const doc of docs) perHour.set(hourOf(doc.at.getTime()), (perHour.get(hourOf(doc.at.getTime())) ?? 0) + doc.count);
  return new Set(window.filter((hour) => hour <= lastUnmarked || (perHour.get(hour) ?? 0) >= BUSY_MINUTE_REQUESTS));
}

/**
 * The units of the minutes from `last` down to `first` (within one hour): a minute whose services served
 * BUSY_MINUTE_REQUESTS requests or more (the service rollups say, read only when the hour may hold such a
 * minute) is read a tick at a time, newest first, from the cursor's tick in the cursor's minute.
 */
async function unitsOf(scope: ViewScope, first: number, last: number, mayBeBusy: boolean, cursor?: { minute: number; tick: number }): Promise<ReadUnit[]> {
  const requests = new Map<number, number>();
  if (mayBeBusy) {
    const rollups = await allInWindowByHour<{ at: Date; count: number }>(SpanRollup.collection, new Date(first * MINUTE_MS), new Date((last + 1) * MINUTE_MS), { ...scopeFilter(scope), kind: 'service' }, undefined, { at: 1, count: 1 });
    for (const doc of rollups) {
      const minute = epochMinuteOf(doc.at.getTime());
      requests.set(minute, (requests.get(minute) ?? 0) + doc.count);
    }
  }
  return minutesDown(first, last).flatMap((minute) => {
    const served = requests.get(minute) ?? 0;
    if (served < BUSY_MINUTE_REQUESTS) return [{ minute, ...(mayBeBusy && { requests: served }) }];
    const top = cursor?.minute === minute ? cursor.tick : TICKS_PER_MINUTE - 1;
    return Array.from({ length: top + 1 }, (_, i) => ({ minute, tick: top - i, requests: served / TICKS_PER_MINUTE }));
  });
}

/**
 * Traces with at least one span matching every filter, newest first (by the minute a trace was
 * first seen, then the five seconds of it, then its start). The window is read from the trace
 * summaries a minute at a time, newest first (a busy minute five seconds at a time), until the page
 * is full; the summaries' facets say which values some span of the trace has, and when several
 * filters are given, a candidate's spans are read to check that one span holds them all. Its cost
 * follows the traces in the minutes read, not the spans stored.
 */
export async function listTraces(scope: ViewScope, query: TraceQuery): Promise<{ data: z.infer<typeof traceRowJson>[]; next_cursor: string | null }> {
  const criteria = spanCriteria(query);
  let after: { minute: number; tick: number; startAt: Date; id: Types.ObjectId } | undefined;
  if (query.cursor) {
    const [minute, tick, startAt, id] = decodeCursor(query.cursor, 4);
    if (!Number.isInteger(minute) || !Number.isInteger(tick) || !(startAt instanceof Date)) throw new AppError('invalid_request', 'cursor is not one this API issued');
    after = { minute: minute as number, tick: tick as number, startAt, id: cursorId(id) };
  }
  const isAfter = (doc: TraceSummaryDoc) => !after || newestFirst({ ...doc, minute: after.minute, tick: after.tick, startAt: after.startAt, _id: after.id }, doc) < 0;
  // a trace's minute is that of its first spans stored; a span sent later may start it a little earlier
  const firstMinute = epochMinuteOf(scope.from.getTime());
  const lastMinute = Math.min(epochMinuteOf(scope.to.getTime() - 1) + 1, after?.minute ?? Infinity);
  const found: TraceSummaryDoc[] = [];
  const full = () => found.length > query.limit;
  // the halves of calls are never listed, and the facets only read when a filter needs them
  const projection = { calls: 0, entries: 0, ...(criteria.tokens.length === 0 && { facets: 0 }) };
  const read = async (unit: ReadUnit) =>
    (await Trace.find({ ...scopeFilter(scope), minute: unit.minute, ...(unit.tick !== undefined && { tick: unit.tick }) }, projection).lean<TraceSummaryDoc[]>())
      .filter((doc) => doc.startAt >= scope.from && doc.startAt < scope.to && isAfter(doc))
      .filter((doc) => criteria.tokens.every((token) => doc.facets.includes(token)) && (query.min_duration_ms === undefined || doc.maxSpanMs >= query.min_duration_ms))
      .sort(newestFirst);
  const take = async (candidates: TraceSummaryDoc[]) => {
    for (const doc of candidates) {
      if (full()) return;
      if (criteria.oneSpanMustHoldAll) {
        const spans = await Span.find({ orgId: scope.orgId, traceId: doc.traceId, projectId: doc.projectId }).lean<SpanDoc[]>();
        if (!spans.some(criteria.matches)) continue;
      }
      found.push(doc);
    }
  };
  // the window an hour at a time, newest first, each hour's busy minutes found only when it is reached
  const busy = await busyHours(scope, new Date(firstMinute * MINUTE_MS), new Date((lastMinute + 1) * MINUTE_MS));
  // unfiltered, a unit yields about as many traces as its requests (fewer where a trace served requests in
  // several services, which only ends a round early): a round of busy ticks stops at the one that should fill the page
  const unfiltered = criteria.tokens.length === 0 && query.min_duration_ms === undefined;
  const rounds: MinuteRounds<ReadUnit> = { width: 1, ...(unfiltered && { wanted: () => query.limit + 1 - found.length, expected: (unit) => unit.requests }) };
  for (const hour of hoursDown(new Date(firstMinute * MINUTE_MS), new Date((lastMinute + 1) * MINUTE_MS))) {
    if (full()) break;
    const first = Math.max(firstMinute, hour * 60);
    const last = Math.min(lastMinute, hour * 60 + 59);
    await newestMinutesFirst(await unitsOf(scope, first, last, busy.has(hour), after), read, take, full, rounds);
  }
  const page = found.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: page.map((doc) => ({
      trace_id: doc.traceId,
      project_id: doc.projectId.toHexString(),
      root_service: doc.rootService,
      root_name: doc.rootName,
      start: doc.startAt.toISOString(),
      duration_ms: doc.endAt.getTime() - doc.startAt.getTime(),
      span_count: doc.spanCount,
      error_count: doc.errorCount,
      services: [...doc.services].sort(),
    })),
    next_cursor: found.length > query.limit && last ? encodeCursor([last.minute, tickOfDoc(last), last.startAt, last._id.toHexString()]) : null,
  };
}
