/**
 * The reads of traces: one trace with its spans and errors, and the trace list, from the spans and
 * summaries the workers stored (store.ts).
 */
import type { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { cursorId, decodeCursor, encodeCursor } from '../../paging.js';
import { epochMinuteOf, HOUR_MS, hourOf, MINUTE_MS } from '../../telemetry/time-buckets.js';
import { attributesObject, hasAttributes } from '../../telemetry/storage.js';
import { allInWindowByHour, hoursDown, minutesDown, newestMinutesFirst, readHours, scopeFilter, type MinuteRounds, type ViewScope } from '../../views.js';
import { lastUnmarkedHour } from '../../telemetry/rolled-up-hours.js';
import { ErrorEvent } from '../issues/model.js';
import { SpanRollup, SpanRollupHourly } from '../services/model.js';
import { Span, SPAN_PAGE_SIZE, Trace } from './model.js';
import type { listTracesQuery, traceDetailJson, traceRowJson, traceSpansQuery } from './schemas.js';
import { TICKS_PER_MINUTE, type StoredSpan } from './store.js';

/** Requests in a minute (from the service rollups) from which the trace list reads the minute by tick. */
const BUSY_MINUTE_REQUESTS = 200;

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
