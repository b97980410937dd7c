import { randomUUID } from 'node:crypto';
import { AppError } from '../../shared/errors.js';
import { sha256 } from '../../shared/secrets.js';
import {
  logLevelOf,
  recordKinds,
  recordSchemas,
  type Attributes,
  type OutcomeRecord,
  type RecordKind,
  type RecordOf,
  type SessionRecord,
  type SpanCategory,
  type SpanKind,
  type SpanLink,
  type SpanRecord,
  type SpanStatus,
} from '../../shared/telemetry/records.js';
import { inflatePayload } from '../body.js';
import {
  dbOf,
  environmentOf,
  flattenInto,
  hexIdOf,
  httpOf,
  messagingOf,
  pathOf,
  severityByText,
  textOf,
  ZEROS,
  type PlainValue,
} from '../../shared/telemetry/otlp/decode.js';
import { parseJsonItem, type Envelope, type EnvelopeItem } from './envelope.js';
import { httpLinkOrUndefined } from '../../shared/links.js';

/**
 * Sentry envelope items (and legacy /store/ events) → internal records.
 *
 * Like Relay, the envelope is accepted once it parses: an item that is not JSON, is over its size limit or
 * is not valid for its type is dropped and counted (Relay's `invalid` outcome), and so is each invalid
 * record inside a container. Only an envelope header `event_id` that is not a UUID is malformed, as in
 * Relay, because the answer would have to carry it.
 *
 * Sentry has no service concept. A record's service is its `service.name` attribute when the SDK sets
 * one, else the package of a `package@version` release (Sentry's release naming convention, so
 * `shop@2.4.1` is service `shop`, version `2.4.1`), else `unknown_service` as in OTLP. `server_name` is
 * a host, which would split one service per machine.
 */

export type NormalizedRecords = { [K in RecordKind]: RecordOf<K>[] };

export interface NormalizedEnvelope {
  records: NormalizedRecords;
  /** What Relay answers with: the envelope's `event_id`, else that of its first event, transaction or feedback. */
  eventId: string | undefined;
  /** Items and records that were invalid or over a size limit. */
  dropped: number;
  /** The same, by what they would have counted as and why, for the usage figures. */
  outcomes: OutcomeRecord[];
  /** Items left aside by design: attachments, client reports, profiles, unknown types, replays when capture is off. */
  skipped: number;
}

/** Relay's per-item limits (PROTOCOLS.md), over the item's payload bytes. */
const MAX_EVENT_BYTES = 1024 * 1024;
const MAX_CHECK_IN_BYTES = 100 * 1024;
const MAX_REPLAY_COMPRESSED_BYTES = 10 * 1024 * 1024;
const MAX_REPLAY_RAW_BYTES = 100 * 1024 * 1024;

const maxPayloadBytes = new Map([
  ['event', MAX_EVENT_BYTES],
  ['transaction', MAX_EVENT_BYTES],
  ['feedback', MAX_EVENT_BYTES],
  ['user_report', MAX_EVENT_BYTES],
  ['check_in', MAX_CHECK_IN_BYTES],
]);

type Json = Record<string, unknown>;

interface Context {
  nowMs: number;
  /** The envelope header's `event_id`: a replay's id, and the default id of the items' events. */
  envelopeEventId: string | undefined;
  /** The envelope's dynamic sampling context (`trace` header): release and environment when records lack them. */
  release: string | undefined;
  environment: string | undefined;
  records: NormalizedRecords;
  firstEventId: string | undefined;
  dropped: number;
  /** What the item being read would count as, for its outcomes. */
  category: OutcomeRecord['category'];
  outcomes: Map<string, OutcomeRecord>;
  skipped: number;
}

export async function normalizeEnvelope(envelope: Envelope, options: { nowMs: number; replayCapture: boolean }): Promise<NormalizedEnvelope> {
  const envelopeEventId = idOf(envelope.header.event_id, 16);
  if (envelopeEventId === null) throw new AppError('invalid_request', 'malformed envelope: envelope header "event_id" must be a UUID');
  const trace = objectOf(envelope.header.trace);
  const ctx = contextOf(options.nowMs, envelopeEventId || undefined, stringOf(trace.release), stringOf(trace.environment));
  for (const item of envelope.items) await normalizeItem(item, ctx, options.replayCapture);
  return { records: ctx.records, eventId: ctx.envelopeEventId ?? ctx.firstEventId, dropped: ctx.dropped, outcomes: [...ctx.outcomes.values()], skipped: ctx.skipped };
}

/** A legacy `/api/{project}/store/` event: an error, or a transaction when its `type` says so. */
export function normalizeStoreEvent(event: Record<string, unknown>, nowMs: number): NormalizedEnvelope & { eventId: string } {
  const ctx = contextOf(nowMs, undefined, undefined, undefined);
  if (nestedTooDeep(event)) drop(ctx);
  else normalizeEvent(event, 'event', ctx);
  return { records: ctx.records, eventId: ctx.firstEventId ?? randomId(), dropped: ctx.dropped, outcomes: [...ctx.outcomes.values()], skipped: ctx.skipped };
}

function contextOf(nowMs: number, envelopeEventId: string | undefined, release: string | undefined, environment: string | undefined): Context {
  const records = Object.fromEntries(recordKinds.map((kind) => [kind, []])) as unknown as NormalizedRecords;
  return { nowMs, envelopeEventId, release, environment, records, firstEventId: undefined, dropped: 0, category: 'errors', outcomes: new Map(), skipped: 0 };
}

type Reader = (payload: Json, ctx: Context) => void;

/** Items whose payload is one JSON object. */
const objectItems = new Map<string, Reader>([
  ['event', (event, ctx) => normalizeEvent(event, 'event', ctx)],
  ['transaction', (event, ctx) => normalizeEvent(event, 'transaction', ctx)],
  ['feedback', (event, ctx) => normalizeEvent(event, 'feedback', ctx)],
  ['check_in', keepCheckIn],
  ['session', keepSessionUpdate],
  ['sessions', keepSessionAggregates],
  ['user_report', keepUserReport],
  ['replay_event', keepReplayEvent],
]);

/** Items whose payload is a `{items:[…]}` container: the reader of each item, and of a payload that is one item. */
const containerItems = new Map<string, [item: Reader, single?: Reader]>([
  ['span', [keepStreamedSpan, keepStandaloneSpan]],
  ['log', [keepLog]],
  ['trace_metric', [keepMetric]],
]);

const replayItems = new Set(['replay_event', 'replay_recording']);

/** What each item type's records count as in the usage figures (and so in its outcomes). */
const categoryOfItem = new Map<string, OutcomeRecord['category']>([
  ['event', 'errors'],
  ['transaction', 'spans'],
  ['span', 'spans'],
  ['feedback', 'feedback'],
  ['user_report', 'feedback'],
  ['check_in', 'checkins'],
  ['session', 'sessions'],
  ['sessions', 'sessions'],
  ['replay_event', 'replays'],
  ['replay_recording', 'replays'],
  ['log', 'logs'],
  ['trace_metric', 'metrics'],
]);

async function normalizeItem(item: EnvelopeItem, ctx: Context, replayCapture: boolean): Promise<void> {
  const type = item.header.type;
  ctx.category = categoryOfItem.get(type) ?? 'errors';
  const readObject = objectItems.get(type);
  const readContainer = containerItems.get(type);
  if (replayItems.has(type) && !replayCapture) ctx.skipped += 1;
  else if (type === 'replay_recording') await keepReplayRecording(item, ctx);
  else if (readObject) {
    const payload = jsonOf(item, ctx);
    if (payload) readObject(payload, ctx);
  } else if (readContainer) forEachContainerItem(item, ctx, ...readContainer);
  // Attachments, client reports, profiles and types we do not know.
  else ctx.skipped += 1;
}

/** The item's JSON object, or undefined (counted) when it is over its size limit, not a JSON object or nested too deep. */
function jsonOf(item: EnvelopeItem, ctx: Context): Json | undefined {
  const max = maxPayloadBytes.get(item.header.type);
  if (max !== undefined && item.payload.length > max) return drop(ctx, 1, 'too_large');
  let payload: Json;
  try {
    payload = parseJsonItem(item);
  } catch (error) {
    if (error instanceof AppError) return drop(ctx);
    throw error;
  }
  return nestedTooDeep(payload) ? drop(ctx) : payload;
}

/**
 * serde_json's recursion limit, so Relay refuses JSON nested deeper. Here it also keeps the recursive
 * readers below, and whatever serialises a kept event next, from exhausting the stack.
 */
const MAX_JSON_DEPTH = 128;

/**
 * Walks with its own stack: the point is to find values too deep to recurse into. It runs over every
 * event, so it holds only containers, and their depths beside them rather than in a pair per value.
 */
function nestedTooDeep(root: unknown): boolean {
  if (typeof root !== 'object' || root === null) return false;
  const containers: object[] = [root];
  const depths: number[] = [1];
  const push = (child: unknown, depth: number) => {
    if (typeof child !== 'object' || child === null) return;
    containers.push(child);
    depths.push(depth);
  };
  while (containers.length > 0) {
    const value = containers.pop()!;
    const depth = depths.pop()!;
    if (depth > MAX_JSON_DEPTH) return true;
    if (Array.isArray(value)) for (const child of value) push(child, depth + 1);
    // JSON.parse makes own, enumerable properties only
    else for (const key in value) push((value as Record<string, unknown>)[key], depth + 1);
  }
  return false;
}

/**
 * Reads each object of a `{items:[…]}` container, counting the rest as dropped. A payload that is no
 * container goes to `single` when the type has a single-record form (standalone v1 spans).
 */
function forEachContainerItem(item: EnvelopeItem, ctx: Context, read: Reader, single?: Reader): void {
  const container = jsonOf(item, ctx);
  if (!container) return;
  if (!Array.isArray(container.items)) {
    if (single) single(container, ctx);
    else drop(ctx);
    return;
  }
  for (const element of container.items) {
    if (isObject(element)) read(element, ctx);
    else drop(ctx);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Events: errors, transactions, feedback

function normalizeEvent(event: Json, itemType: 'event' | 'transaction' | 'feedback', ctx: Context): void {
  const kind = itemType === 'event' && (event.type === 'transaction' || event.type === 'feedback') ? event.type : itemType;
  const eventId = idOf(event.event_id, 16) || ctx.envelopeEventId || randomId();
  ctx.firstEventId ??= eventId;
  if (kind === 'transaction') keepTransaction(event, ctx);
  else if (kind === 'feedback') keepFeedback(event, eventId, ctx);
  else keep(ctx, 'errors', { eventId, timeMs: timeMsOf(event.timestamp) ?? ctx.nowMs, event });
}

function keepFeedback(event: Json, feedbackId: string, ctx: Context): void {
  const feedback = objectOf(objectOf(event.contexts).feedback);
  const message = stringOf(feedback.message);
  if (!message) return void drop(ctx);
  keep(ctx, 'feedback', {
    feedbackId,
    message: truncate(message, 4096),
    contactEmail: boundedText(feedback.contact_email, 254),
    name: boundedText(feedback.name, 256),
    url: httpLinkOrUndefined(boundedText(feedback.url, 2048)),
    associatedEventId: idOf(feedback.associated_event_id, 16) || undefined,
    replayId: idOf(feedback.replay_id, 16) || undefined,
    environment: stringOf(event.environment) ?? ctx.environment,
    release: stringOf(event.release) ?? ctx.release,
    source: 'feedback',
    timeMs: timeMsOf(event.timestamp) ?? ctx.nowMs,
  });
}

/**
 * The pre-2024 user feedback item: a comment about an event, with no id of its own. Its id is derived
 * from what it says, so a report sent again (an SDK retrying after a 503) is stored once.
 */
function keepUserReport(report: Json, ctx: Context): void {
  const message = stringOf(report.comments);
  if (!message) return void drop(ctx);
  const associatedEventId = idOf(report.event_id, 16) || undefined;
  keep(ctx, 'feedback', {
    feedbackId: sha256(JSON.stringify([associatedEventId, message, stringOf(report.email), stringOf(report.name)])).slice(0, 32),
    message: truncate(message, 4096),
    contactEmail: boundedText(report.email, 254),
    name: boundedText(report.name, 256),
    associatedEventId,
    environment: ctx.environment,
    release: ctx.release,
    source: 'user_report',
    timeMs: ctx.nowMs,
  });
}

// ---------------------------------------------------------------------------------------------------------
// Spans: transactions (v1) and span items (v2 containers, or standalone v1 spans)

interface SpanInput {
  traceId: string | null;
  spanId: string | null;
  parentSpanId: string | null;
  name: string;
  op: string | undefined;
  /** Text the op's conventions read: a db span's query, an http span's `METHOD url`. */
  description: string | undefined;
  status: SpanStatus;
  statusMessage: string | undefined;
  startMs: number | undefined;
  endMs: number | undefined;
  attributes: Attributes;
  links: SpanLink[];
  isSegment: boolean;
  service: ServiceIdentity;
  environment: string | undefined;
  release: string | undefined;
}

function keepTransaction(event: Json, ctx: Context): void {
  const trace = objectOf(objectOf(event.contexts).trace);
  const children = Array.isArray(event.spans) ? event.spans : [];
  const release = stringOf(event.release) ?? ctx.release;
  const environment = stringOf(event.environment) ?? ctx.environment;
  const name = stringOf(event.transaction) ?? '';
  const attributes = plainAttributesOf(event.tags, trace.data);
  const service = serviceOf(attributes, release);
  const segment = spanRecordOf({
    ...v1SpanFields(trace, attributes),
    traceId: idOf(trace.trace_id, 16),
    name,
    // An http.server transaction is named `METHOD route`.
    description: name,
    startMs: timeMsOf(event.start_timestamp),
    endMs: timeMsOf(event.timestamp),
    isSegment: true,
    service,
    environment,
    release,
  });
  // Relay refuses a transaction without a valid root; its spans go with it.
  if (!segment) return void drop(ctx, 1 + children.length);
  keep(ctx, 'spans', segment);

  const inherited = { 'sentry.segment.name': name, 'sentry.segment.id': segment.spanId };
  for (const child of children) {
    if (!isObject(child)) {
      drop(ctx);
      continue;
    }
    const childAttributes = { ...inherited, ...plainAttributesOf(child.tags, child.data) };
    const span = spanRecordOf({
      ...v1SpanFields(child, childAttributes),
      // Children name no parent when they hang directly under the transaction.
      parentSpanId: child.parent_span_id == null ? segment.spanId : idOf(child.parent_span_id, 8),
      traceId: child.trace_id == null ? segment.traceId : idOf(child.trace_id, 16),
      isSegment: false,
      service: textOf(childAttributes, 'service.name') ? serviceOf(childAttributes, release) : service,
      environment,
      release,
    });
    keepSpan(span, ctx);
  }
}

/** A span item that is no container: one v1 span (browser SDKs' standalone web-vital spans). */
function keepStandaloneSpan(span: Json, ctx: Context): void {
  const attributes = plainAttributesOf(span.tags, span.data);
  const release = textOf(attributes, 'sentry.release') ?? ctx.release;
  keepSpan(
    spanRecordOf({
      ...v1SpanFields(span, attributes),
      traceId: idOf(span.trace_id, 16),
      isSegment: span.is_segment === true,
      service: serviceOf(attributes, release),
      environment: environmentOf(attributes) ?? ctx.environment,
      release,
    }),
    ctx,
  );
}

/** What a transaction's trace context and its child spans have in common. */
function v1SpanFields(span: Json, attributes: Attributes) {
  const op = stringOf(span.op);
  // Older SDKs keep the op only in its own field.
  if (op !== undefined) attributes['sentry.op'] ??= op;
  const description = stringOf(span.description);
  const status = v1StatusOf(span.status);
  return {
    spanId: idOf(span.span_id, 8),
    parentSpanId: idOf(span.parent_span_id, 8),
    name: description ?? op ?? '',
    op,
    description,
    status,
    statusMessage: status === 'error' ? stringOf(span.status) : undefined,
    startMs: timeMsOf(span.start_timestamp),
    endMs: timeMsOf(span.timestamp),
    attributes,
    links: linksOf(span.links, plainAttributesOf),
  };
}

/**
 * Sentry's span statuses, as the SDKs themselves turn them into span v2's ok/error: `ok` and `cancelled`
 * are fine, a missing one is unknown, every other one (`internal_error`, `not_found`, `unknown_error`…)
 * is an error.
 */
function v1StatusOf(status: unknown): SpanStatus {
  if (status === undefined || status === null || status === '') return 'unset';
  return status === 'ok' || status === 'cancelled' ? 'ok' : 'error';
}

function keepStreamedSpan(span: Json, ctx: Context): void {
  const attributes = typedAttributesOf(span.attributes);
  const release = textOf(attributes, 'sentry.release') ?? ctx.release;
  const name = stringOf(span.name) ?? '';
  const parentSpanId = idOf(span.parent_span_id, 8);
  keepSpan(
    spanRecordOf({
      traceId: idOf(span.trace_id, 16),
      spanId: idOf(span.span_id, 8),
      parentSpanId,
      name,
      op: textOf(attributes, 'sentry.op'),
      // Span v2 has no description: the name is the query or `METHOD url`.
      description: name,
      status: span.status === 'ok' ? 'ok' : span.status === 'error' ? 'error' : 'unset',
      statusMessage: textOf(attributes, 'sentry.status.message'),
      startMs: timeMsOf(span.start_timestamp),
      endMs: timeMsOf(span.end_timestamp),
      attributes,
      links: linksOf(span.links, typedAttributesOf),
      isSegment: typeof span.is_segment === 'boolean' ? span.is_segment : parentSpanId === '',
      service: serviceOf(attributes, release),
      environment: environmentOf(attributes) ?? ctx.environment,
      release,
    }),
    ctx,
  );
}

function keepSpan(span: SpanRecord | undefined, ctx: Context): void {
  if (span) keep(ctx, 'spans', span);
  else drop(ctx);
}

/** Span kind and category by Sentry's op conventions (getsentry/sentry-conventions, `model/op`). */
const opShapes: [RegExp, SpanKind, SpanCategory][] = [
  [/^http\.server$/, 'server', 'http'],
  [/^http\.client(\.|$)/, 'client', 'http'],
  // Caches are data stores reached over the network (Redis, Memcached), as OTel sees them.
  [/^(db|cache)(\.|$)/, 'client', 'db'],
  // Task queues name their library last: `queue.submit.celery`, `queue.task.celery`.
  [/^queue\.(publish|create|submit)(\.|$)/, 'producer', 'messaging'],
  [/^queue\.(receive|process|task)(\.|$)/, 'consumer', 'messaging'],
  // `grpc.server`, `websocket.server`, `grpc.client`…
  [/\.server$/, 'server', 'other'],
  [/\.client$/, 'client', 'other'],
];

const HTTP_DESCRIPTION = /^([A-Z]+) (\S+)/;

/** Builds the record once ids and times are read; undefined when they are invalid. */
function spanRecordOf(input: SpanInput): SpanRecord | undefined {
  const { traceId, spanId, parentSpanId, startMs, endMs, attributes, description } = input;
  if (!traceId || ZEROS.test(traceId) || !spanId || ZEROS.test(spanId) || parentSpanId === null) return undefined;
  if (startMs === undefined || endMs === undefined) return undefined;

  const shape = input.op === undefined ? undefined : opShapes.find(([pattern]) => pattern.test(input.op!));
  const kind = shape?.[1] ?? 'internal';
  let http = httpOf(attributes);
  let db = dbOf(attributes);
  const messaging = messagingOf(attributes);
  // Attributes decide as in OTLP when the op is not one of the conventions.
  const category = shape?.[2] ?? (db ? 'db' : messaging ? 'messaging' : http ? 'http' : 'other');
  if (category === 'db' && description !== undefined && db?.statement === undefined) db = { ...db, statement: description };
  const request = category === 'http' ? HTTP_DESCRIPTION.exec(description ?? '') : null;
  if (request) http = { ...http, method: http?.method ?? request[1], path: http?.path ?? pathOf(request[2]) };

  // A server span's HTTP status decides, as OTel's conventions have it: SDKs derive the span status from
  // it anyway (404 → not_found), and only a 5xx is the server's failure.
  const statusCode = kind === 'server' ? http?.statusCode : undefined;
  let status = input.status;
  if (statusCode !== undefined && statusCode >= 500 && statusCode <= 599) status = 'error';
  else if (statusCode !== undefined && status === 'error') status = 'ok';

  return {
    traceId,
    spanId,
    parentSpanId: parentSpanId === '' || ZEROS.test(parentSpanId) ? null : parentSpanId,
    name: input.name,
    kind,
    service: input.service.service,
    serviceVersion: input.service.serviceVersion,
    environment: input.environment,
    release: input.release,
    startMs,
    endMs,
    durationMs: Math.max(0, endMs - startMs),
    status,
    statusMessage: status === 'error' ? input.statusMessage : undefined,
    attributes,
    events: [],
    links: input.links,
    http,
    db,
    messaging,
    peerService: textOf(attributes, 'service.peer.name', 'peer.service'),
    isSegment: input.isSegment,
    category,
    source: 'sentry',
  };
}

function linksOf(value: unknown, attributesOf: (value: unknown) => Attributes): SpanLink[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((link) => {
    if (!isObject(link)) return [];
    const traceId = idOf(link.trace_id, 16);
    const spanId = idOf(link.span_id, 8);
    // A link that points nowhere is dropped; the span itself is fine.
    return traceId && spanId ? [{ traceId, spanId, attributes: attributesOf(link.attributes) }] : [];
  });
}

// ---------------------------------------------------------------------------------------------------------
// Logs and trace metrics

function keepLog(log: Json, ctx: Context): void {
  const attributes = typedAttributesOf(log.attributes);
  const traceId = idOf(log.trace_id, 16);
  const spanId = idOf(log.span_id, 8);
  if (traceId === null || spanId === null) return void drop(ctx);
  // The JS SDK names the active span only in this attribute.
  const activeSpanId = idOf(attributes['sentry.trace.parent_span_id'], 8);
  const number = log.severity_number;
  const level = String(log.level).toLowerCase();
  const severityNumber =
    typeof number === 'number' && Number.isInteger(number) && number >= 1 && number <= 24
      ? number
      : Object.hasOwn(severityByText, level)
        ? severityByText[level]!
        : 9;
  const body = log.body === undefined ? '' : typeof log.body === 'string' ? log.body : JSON.stringify(plainOf(log.body) ?? null);
  const release = textOf(attributes, 'sentry.release') ?? ctx.release;
  keep(ctx, 'logs', {
    timeMs: timeMsOf(log.timestamp) ?? ctx.nowMs,
    severityNumber,
    level: logLevelOf(severityNumber),
    body,
    attributes,
    traceId: traceId === '' || ZEROS.test(traceId) ? undefined : traceId,
    spanId: spanId || activeSpanId || undefined,
    service: serviceOf(attributes, release).service,
    environment: environmentOf(attributes) ?? ctx.environment,
    release,
    template: textOf(attributes, 'sentry.message.template'),
    source: 'sentry',
  });
}

/** @sentry/core's `metrics.count/gauge/distribution`: one point per call, flushed in containers. */
function keepMetric(metric: Json, ctx: Context): void {
  const name = stringOf(metric.name);
  const value = metric.value;
  if (!name || typeof value !== 'number' || !Number.isFinite(value)) return void drop(ctx);
  const attributes = typedAttributesOf(metric.attributes);
  const release = textOf(attributes, 'sentry.release') ?? ctx.release;
  const base = {
    name,
    unit: stringOf(metric.unit),
    timeMs: timeMsOf(metric.timestamp) ?? ctx.nowMs,
    attributes,
    service: serviceOf(attributes, release).service,
    environment: environmentOf(attributes) ?? ctx.environment,
    release,
    source: 'sentry' as const,
  };
  if (metric.type === 'counter') keep(ctx, 'metrics', { ...base, type: 'counter', temporality: 'delta', value });
  else if (metric.type === 'gauge') keep(ctx, 'metrics', { ...base, type: 'gauge', value });
  // One observation: also written as a one-sample distribution, so it aggregates like the others.
  else if (metric.type === 'distribution') keep(ctx, 'metrics', { ...base, type: 'distribution', value, count: 1, sum: value, min: value, max: value });
  else drop(ctx);
}

// ---------------------------------------------------------------------------------------------------------
// Check-ins and release health

const checkInStatuses = new Set(['in_progress', 'ok', 'error']);
const MAX_MONITOR_SLUG = 128;

function keepCheckIn(checkIn: Json, ctx: Context): void {
  const checkInId = idOf(checkIn.check_in_id, 16);
  const slug = stringOf(checkIn.monitor_slug);
  const status = checkIn.status;
  // `missed` is the server's verdict, never a client's.
  if (!checkInId || !slug || typeof status !== 'string' || !checkInStatuses.has(status)) return void drop(ctx);
  const duration = checkIn.duration;
  keep(ctx, 'checkins', {
    checkInId,
    // Relay truncates long slugs rather than refusing the check-in.
    monitorSlug: truncate(slug, MAX_MONITOR_SLUG),
    status: status as RecordOf<'checkins'>['status'],
    durationMs: typeof duration === 'number' && duration >= 0 && Number.isFinite(duration) ? duration * 1000 : undefined,
    environment: stringOf(checkIn.environment),
    monitorConfig: isObject(checkIn.monitor_config) ? checkIn.monitor_config : undefined,
    timeMs: ctx.nowMs,
  });
}

/**
 * One update of one session. It counts as started when `init` is set, and in exactly one outcome once it
 * reaches a final status, as aggregates count: `crashed`, `abnormal`, else `errored` when it had errors
 * (or the status says so), else `exited`. Counting only the final update keeps a session that reports
 * its errors several times from counting more than once; an `ok` update changes no outcome.
 */
function keepSessionUpdate(update: Json, ctx: Context): void {
  const attrs = objectOf(update.attrs);
  const release = stringOf(attrs.release);
  const startedMs = timeMsOf(update.started);
  // Sentry refuses sessions without a release: release health is per release.
  if (!release || startedMs === undefined) return void drop(ctx);
  const status = update.status;
  const hadErrors = typeof update.errors === 'number' && update.errors > 0;
  keepSessionCounts(ctx, {
    release,
    environment: stringOf(attrs.environment),
    startedMs,
    started: update.init === true ? 1 : 0,
    exited: status === 'exited' && !hadErrors ? 1 : 0,
    errored: (status === 'exited' && hadErrors) || status === 'errored' ? 1 : 0,
    crashed: status === 'crashed' ? 1 : 0,
    abnormal: status === 'abnormal' ? 1 : 0,
  });
}

/** Server-mode SDKs count request sessions per minute; each bucket's outcomes add up to the sessions started. */
function keepSessionAggregates(payload: Json, ctx: Context): void {
  const attrs = objectOf(payload.attrs);
  const release = stringOf(attrs.release);
  const buckets = Array.isArray(payload.aggregates) ? payload.aggregates : [];
  if (!release) return void drop(ctx, Math.max(1, buckets.length));
  for (const bucket of buckets) {
    const fields = objectOf(bucket);
    const startedMs = timeMsOf(fields.started);
    const exited = countOf(fields.exited);
    const errored = countOf(fields.errored);
    const crashed = countOf(fields.crashed);
    const abnormal = countOf(fields.abnormal);
    if (startedMs === undefined || exited === undefined || errored === undefined || crashed === undefined || abnormal === undefined) {
      drop(ctx);
      continue;
    }
    const started = exited + errored + crashed + abnormal;
    keepSessionCounts(ctx, { release, environment: stringOf(attrs.environment), startedMs, started, exited, errored, crashed, abnormal });
  }
}

/** An aggregate's count: absent is 0; anything but a non-negative integer is invalid (undefined). */
function countOf(value: unknown): number | undefined {
  const count = value ?? 0;
  return typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : undefined;
}

/** Records that would add nothing to any count are not kept. */
function keepSessionCounts(ctx: Context, session: SessionRecord): void {
  if (session.started + session.exited + session.errored + session.crashed + session.abnormal > 0) keep(ctx, 'sessions', session);
}

// ---------------------------------------------------------------------------------------------------------
// Session replay

function keepReplayEvent(replay: Json, ctx: Context): void {
  const replayId = idOf(replay.replay_id, 16) || ctx.envelopeEventId;
  const segmentId = replay.segment_id;
  if (!replayId || !Number.isSafeInteger(segmentId) || (segmentId as number) < 0) return void drop(ctx);
  const user = objectOf(replay.user);
  const userId = user.id;
  keep(ctx, 'replay_events', {
    replayId,
    segmentId: segmentId as number,
    replayType: stringOf(replay.replay_type),
    startMs: timeMsOf(replay.replay_start_timestamp),
    timeMs: timeMsOf(replay.timestamp) ?? ctx.nowMs,
    urls: stringsOf(replay.urls).filter((url) => httpLinkOrUndefined(url)),
    traceIds: stringsOf(replay.trace_ids),
    errorIds: stringsOf(replay.error_ids),
    user: isObject(replay.user)
      ? {
          // Sentry accepts numeric user ids.
          id: typeof userId === 'number' ? String(userId) : stringOf(userId),
          email: stringOf(user.email),
          username: stringOf(user.username),
          ipAddress: stringOf(user.ip_address),
        }
      : undefined,
    release: stringOf(replay.release) ?? ctx.release,
    environment: stringOf(replay.environment) ?? ctx.environment,
  });
}

const RRWEB_JSON = /^\s*\[/;

/**
 * `{"segment_id":N}\n` then the rrweb events, gzip/zlib-compressed or plain JSON. The bytes are stored as
 * they came; they are inflated here only to refuse what would not decode, or would decode too large.
 */
async function keepReplayRecording(item: EnvelopeItem, ctx: Context): Promise<void> {
  const newline = item.payload.indexOf(0x0a);
  const replayId = ctx.envelopeEventId;
  if (!replayId || newline === -1) return void drop(ctx);
  const rrweb = item.payload.subarray(newline + 1);
  let segmentId: unknown;
  try {
    segmentId = objectOf(JSON.parse(item.payload.toString('utf8', 0, newline))).segment_id;
  } catch {
    return void drop(ctx);
  }
  if (!Number.isSafeInteger(segmentId) || (segmentId as number) < 0 || rrweb.length > MAX_REPLAY_COMPRESSED_BYTES) return void drop(ctx);
  try {
    const events = await inflatePayload(rrweb, MAX_REPLAY_RAW_BYTES);
    if (!RRWEB_JSON.test(events.toString('latin1', 0, 1024))) return void drop(ctx);
  } catch (error) {
    if (error instanceof AppError) return void drop(ctx);
    throw error;
  }
  keep(ctx, 'replay_recordings', { replayId, segmentId: segmentId as number, payloadBase64: rrweb.toString('base64'), timeMs: ctx.nowMs });
}

// ---------------------------------------------------------------------------------------------------------
// Shared readers

/** Checks a finished record against its schema: what goes onto the queue is always valid. */
function keep<K extends RecordKind>(ctx: Context, kind: K, record: RecordOf<K>): void {
  const parsed = recordSchemas[kind].safeParse(record);
  if (parsed.success) (ctx.records[kind] as RecordOf<K>[]).push(parsed.data as RecordOf<K>);
  else drop(ctx);
}

function drop(ctx: Context, count = 1, reason: OutcomeRecord['reason'] = 'invalid'): undefined {
  ctx.dropped += count;
  const key = `${ctx.category}/${reason}`;
  const outcome = ctx.outcomes.get(key) ?? { category: ctx.category, reason, quantity: 0 };
  outcome.quantity += count;
  ctx.outcomes.set(key, outcome);
  return undefined;
}

interface ServiceIdentity {
  service: string;
  serviceVersion: string | undefined;
}

/** The module comment's rule: `service.name`, else the package of a `package@version` release. */
function serviceOf(attributes: Attributes, release: string | undefined): ServiceIdentity {
  const packaged = release === undefined ? null : /^(.+)@([^@]+)$/.exec(release);
  const explicit = textOf(attributes, 'service.name');
  return {
    service: explicit ?? packaged?.[1] ?? 'unknown_service',
    serviceVersion: textOf(attributes, 'service.version') ?? (explicit ? undefined : packaged?.[2]),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A Sentry id as lowercase hex: '' when absent, null when invalid. 16-byte ids may come as hyphenated UUIDs, as Relay accepts. */
function idOf(value: unknown, bytes: 8 | 16): string | null {
  return hexIdOf(bytes === 16 && typeof value === 'string' && UUID.test(value) ? value.replaceAll('-', '') : value, bytes);
}

const randomId = () => randomUUID().replaceAll('-', '');

/** Sentry times are float epoch seconds or RFC 3339 strings; undefined when absent or unreadable. */
function timeMsOf(value: unknown): number | undefined {
  const ms = typeof value === 'number' ? value * 1000 : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function objectOf(value: unknown): Json {
  return isObject(value) ? value : {};
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((element): element is string => typeof element === 'string') : [];
}

/** Cut to `max` UTF-16 units without leaving half a surrogate pair. */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max).replace(/[\uD800-\uDBFF]$/, '');
}

/** An optional text field over its limit is left out: a cut e-mail address or URL is wrong, not shorter. */
function boundedText(value: unknown, max: number): string | undefined {
  const text = stringOf(value);
  return text !== undefined && text.length <= max ? text : undefined;
}

/** A parsed JSON value as a plain value; non-finite numbers (JSON.parse reads 1e400 as Infinity) become text, as in OTLP. */
function plainOf(value: unknown): PlainValue | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (Array.isArray(value)) return value.map((element) => plainOf(element) ?? null);
  if (typeof value !== 'object') return undefined;
  // fromEntries defines keys, so a `__proto__` key stays a key instead of replacing the prototype.
  return Object.fromEntries(
    Object.entries(value).flatMap(([key, element]) => {
      const plain = plainOf(element);
      return plain === undefined ? [] : [[key, plain]];
    }),
  );
}

function addAttribute(attributes: Attributes, key: string, value: unknown): void {
  const plain = plainOf(value);
  // `__proto__` would replace the attributes' prototype.
  if (key !== '' && key !== '__proto__' && plain !== undefined) flattenInto(attributes, key, plain);
}

/** v1 `data` and `tags` objects, flattened to dotted keys; later sources win. */
function plainAttributesOf(...sources: unknown[]): Attributes {
  const attributes: Attributes = {};
  for (const source of sources) for (const [key, value] of Object.entries(objectOf(source))) addAttribute(attributes, key, value);
  return attributes;
}

/** v2 attributes `{key: {type, value, unit?}}` → their values. */
function typedAttributesOf(value: unknown): Attributes {
  const attributes: Attributes = {};
  for (const [key, typed] of Object.entries(objectOf(value))) if (isObject(typed)) addAttribute(attributes, key, typed.value);
  return attributes;
}
