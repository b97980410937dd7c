import protobuf from 'protobufjs';
import { AppError } from '../../errors.js';
import {
  logLevelOf,
  storableText,
  type Attributes,
  type LogRecord,
  type MetricPoint,
  type SpanKind,
  type SpanRecord,
  type SpanStatus,
} from '../records.js';
import { otlpDescriptor } from './proto/descriptor.js';

/**
 * OTLP/HTTP request bodies → internal records. Protobuf is decoded with protobufjs from the vendored
 * opentelemetry-proto files (see proto/README.md); JSON is read with JSON.parse, because OTLP/JSON writes ids as hex where a
 * proto3 JSON parser expects base64. One normaliser reads both: camelCase keys, int64 as Longs (protobuf),
 * decimal strings or numbers (JSON), bytes as Uint8Array (protobuf) or hex strings (JSON). A decoded
 * message is read as it is, not turned into a plain object first (that cost as much as the decode): a
 * field missing from the wire reads its proto3 default from the message's prototype, which the
 * normaliser takes for absent anyway, except in a oneof or an `optional` field, read with `own`.
 *
 * Unknown keys, snake_case ones included, are ignored as the OTLP spec asks of JSON receivers. A value of
 * the wrong type makes the whole request malformed (400, not retried); a record whose ids are invalid is
 * dropped and counted for `partialSuccess`.
 */

export const otlpSignals = ['traces', 'logs', 'metrics'] as const;
export const otlpContentTypes = ['protobuf', 'json'] as const;
export type OtlpSignal = (typeof otlpSignals)[number];
export type OtlpContentType = (typeof otlpContentTypes)[number];

export interface DecodedTraces {
  spans: SpanRecord[];
  rejected: number;
  errors: string[];
}
export interface DecodedLogs {
  logs: LogRecord[];
  rejected: number;
  errors: string[];
}
export interface DecodedMetrics {
  points: MetricPoint[];
  rejected: number;
  errors: string[];
}

// The vendored .proto files, embedded as a protobufjs descriptor: tsc copies no .proto files into dist/.
const root = protobuf.Root.fromJSON(otlpDescriptor);

const messages = {
  traces: {
    request: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
    rejectedField: 'rejectedSpans',
  },
  logs: {
    request: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse'),
    rejectedField: 'rejectedLogRecords',
  },
  metrics: {
    request: root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'),
    response: root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse'),
    rejectedField: 'rejectedDataPoints',
  },
} as const;

export function decodeTraces(body: Buffer, contentType: OtlpContentType): DecodedTraces {
  const request = parseRequest('traces', body, contentType);
  const outcome: DecodedTraces = { spans: [], rejected: 0, errors: [] };
  forEachScopeItem(request, ['resourceSpans', 'scopeSpans', 'spans'], (item, at, resource) => {
    const span = spanOf(objectOf(item, at), at, resource, outcome);
    if (span) outcome.spans.push(span);
  });
  return outcome;
}

/** `receivedMs` stamps records that carry neither an event time nor an observed time. */
export function decodeLogs(body: Buffer, contentType: OtlpContentType, receivedMs = Date.now()): DecodedLogs {
  const request = parseRequest('logs', body, contentType);
  const outcome: DecodedLogs = { logs: [], rejected: 0, errors: [] };
  forEachScopeItem(request, ['resourceLogs', 'scopeLogs', 'logRecords'], (item, at, resource) => {
    const log = logOf(objectOf(item, at), at, resource, receivedMs, outcome);
    if (log) outcome.logs.push(log);
  });
  return outcome;
}

/** Points keep their temporality: turning cumulative sums into deltas needs per-series state, a worker's job. */
export function decodeMetrics(body: Buffer, contentType: OtlpContentType): DecodedMetrics {
  const request = parseRequest('metrics', body, contentType);
  const outcome: DecodedMetrics = { points: [], rejected: 0, errors: [] };
  forEachScopeItem(request, ['resourceMetrics', 'scopeMetrics', 'metrics'], (item, at, resource) => {
    pointsOf(objectOf(item, at), at, resource, outcome);
  });
  return outcome;
}

/** One export of any signal: its records by the kind they are stored as, and what was rejected of it. */
export function decodeExport(signal: OtlpSignal, body: Buffer, contentType: OtlpContentType, receivedMs: number) {
  switch (signal) {
    case 'traces': {
      const { spans, rejected, errors } = decodeTraces(body, contentType);
      return { records: { spans }, kept: spans.length, rejected, errors };
    }
    case 'logs': {
      const { logs, rejected, errors } = decodeLogs(body, contentType, receivedMs);
      return { records: { logs }, kept: logs.length, rejected, errors };
    }
    case 'metrics': {
      const { points, rejected, errors } = decodeMetrics(body, contentType);
      return { records: { metrics: points }, kept: points.length, rejected, errors };
    }
  }
}

/**
 * The 200 body of an export: an empty `Export*ServiceResponse`, or one with `partialSuccess` when records
 * were rejected or there is a warning to pass on. JSON writes the int64 count as a string (proto3 JSON).
 */
export function exportResponse(signal: OtlpSignal, contentType: OtlpContentType, rejected = 0, message = ''): Buffer {
  const { response, rejectedField } = messages[signal];
  const partial = rejected > 0 || message !== '';
  if (contentType === 'json') {
    const json = partial ? { partialSuccess: { [rejectedField]: String(rejected), errorMessage: message } } : {};
    return Buffer.from(JSON.stringify(json));
  }
  const value = partial ? { partialSuccess: { [rejectedField]: rejected, errorMessage: message } } : {};
  return Buffer.from(response.encode(response.fromObject(value)).finish());
}

// ---------------------------------------------------------------------------------------------------------
// Wire → plain object

type Plain = Record<string, unknown>;

function parseRequest(signal: OtlpSignal, body: Buffer, contentType: OtlpContentType): Plain {
  if (contentType === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (error) {
      throw new AppError('invalid_request', `OTLP/JSON body is not JSON: ${reason(error)}`, { cause: error });
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) malformed('the body', 'a JSON object');
    return parsed as Plain;
  }
  const { request } = messages[signal];
  try {
    return request.decode(body) as unknown as Plain;
  } catch (error) {
    throw new AppError('invalid_request', `OTLP protobuf body does not decode: ${reason(error)}`, { cause: error });
  }
}

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error));

function malformed(at: string, expected: string): never {
  throw new AppError('invalid_request', `Malformed OTLP request: ${at} must be ${expected}`);
}

const EMPTY: Plain = Object.freeze({});

/**
 * A field that was set: on a decoded message, one of a oneof or an `optional` field that came on the
 * wire, where the others read their defaults from the prototype; on parsed JSON, a key it has.
 */
const own = (object: Plain, key: string): unknown => (Object.hasOwn(object, key) ? object[key] : undefined);

/** protobufjs decodes the 64-bit integer types into Longs: two 32-bit halves. */
const isLong = (value: unknown): value is protobuf.Long => typeof value === 'object' && value !== null && (value as { __isLong__?: unknown }).__isLong__ === true;

/** A Long as the nearest double (exact below 2^53). */
const numberOfLong = ({ high, low, unsigned }: protobuf.Long) => (unsigned ? high >>> 0 : high) * 2 ** 32 + (low >>> 0);

/** A Long's exact value. */
function bigintOfLong({ high, low, unsigned }: protobuf.Long): bigint {
  const bits = (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0);
  return unsigned ? bits : BigInt.asIntN(64, bits);
}

// Readers: absent (undefined or JSON null) means the proto3 default; any other wrong type is malformed.

function objectOf(value: unknown, at: string): Plain {
  if (value === undefined || value === null) return EMPTY;
  if (typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) malformed(at, 'an object');
  return value as Plain;
}

function listOf(value: unknown, at: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) malformed(at, 'an array');
  return value;
}

/** Every text of a request passes here, made storable (as Sentry's JSON is, parseTelemetryJson). */
function stringOf(value: unknown, at: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') malformed(at, 'a string');
  return storableText(value);
}

function booleanOf(value: unknown, at: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') malformed(at, 'a boolean');
  return value;
}

const INTEGER = /^-?\d+$/;

/** Proto integer types by range; 64-bit ones are only bounded by being finite (nanosecond times exceed 2^53). */
const integerRanges = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY],
  uint64: [0, Number.POSITIVE_INFINITY],
} as const;

/** Integers and enums: numbers, or decimal strings (protobufjs int64s; JSON may quote any); enum names are not OTLP/JSON. */
function integerOf(value: unknown, at: string, type: keyof typeof integerRanges): number {
  if (value === undefined || value === null) return 0;
  const number = typeof value === 'string' && INTEGER.test(value) ? Number(value) : isLong(value) ? numberOfLong(value) : value;
  const [min, max] = integerRanges[type];
  if (typeof number !== 'number' || !Number.isInteger(number) || number < min || number > max) {
    malformed(at, `an integer of type ${type}`);
  }
  return number;
}

/** Doubles; proto3 JSON may quote them and spells the non-finite ones "NaN", "Infinity", "-Infinity". */
function doubleOf(value: unknown, at: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    if (value === 'NaN') return Number.NaN;
    if (value === 'Infinity') return Number.POSITIVE_INFINITY;
    if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
    const number = Number(value);
    if (value.trim() !== '' && !Number.isNaN(number)) return number;
  }
  malformed(at, 'a number');
}

/** Epoch nanoseconds → milliseconds; 0 means unset. */
function msOf(value: unknown, at: string): number {
  if (integerOf(value, at, 'uint64') === 0) return 0;
  // Whole milliseconds and the rest apart: a double cannot hold epoch nanoseconds, so 250 ms would read 249.9998.
  if (isLong(value)) {
    // high · 2^32 + low, with 2^32 = 4,294 · 10^6 + 967,296: high · 967,296 + low stays below 2^53, exact in a double.
    const high = value.high >>> 0;
    const rest = high * 967_296 + (value.low >>> 0);
    return high * 4_294 + Math.floor(rest / 1e6) + (rest % 1e6) / 1e6;
  }
  const nanos = BigInt(value as string | number);
  return Number(nanos / 1_000_000n) + Number(nanos % 1_000_000n) / 1e6;
}

const UINT64_MAX = 2n ** 64n - 1n;

/** Epoch nanoseconds as a decimal string (JSON jobs carry no 64-bit integers); undefined when unset or beyond uint64 (then the milliseconds stand). */
function nanosOf(value: unknown, at: string): string | undefined {
  if (integerOf(value, at, 'uint64') === 0) return undefined;
  const nanos = isLong(value) ? bigintOfLong(value) : BigInt(value as string | number);
  return nanos <= UINT64_MAX ? nanos.toString() : undefined;
}

const HEX = /^[0-9a-fA-F]+$/;
export const ZEROS = /^0+$/;

/**
 * Lowercase hex of an id: from protobuf bytes, or from the hex string OTLP/JSON writes. '' when absent or
 * empty; null when invalid (wrong length, not hex, wrong type) so the caller can reject the record.
 */
export function hexIdOf(value: unknown, bytes: number): string | null {
  if (value === undefined || value === null) return '';
  if (value instanceof Uint8Array) {
    if (value.length === 0) return '';
    if (value.length !== bytes) return null;
    return (value instanceof Buffer ? value : Buffer.from(value.buffer, value.byteOffset, value.length)).toString('hex');
  }
  if (typeof value !== 'string') return null;
  if (value === '') return '';
  return value.length === bytes * 2 && HEX.test(value) ? value.toLowerCase() : null;
}

// ---------------------------------------------------------------------------------------------------------
// AnyValue and attributes

export type PlainValue = string | number | boolean | null | PlainValue[] | { [key: string]: PlainValue };

/** Nesting bound for AnyValue: real attributes are shallow, and the readers below recurse. */
const MAX_VALUE_DEPTH = 16;

/** AnyValue → a JSON value (key/value list → object). undefined when no variant is set. */
function plainValueOf(value: unknown, at: string, depth = 0): PlainValue | undefined {
  if (depth > MAX_VALUE_DEPTH) malformed(at, `nested at most ${MAX_VALUE_DEPTH} levels deep`);
  const anyValue = objectOf(value, at);
  const stringValue = own(anyValue, 'stringValue');
  if (stringValue != null) return stringOf(stringValue, `${at}.stringValue`);
  const boolValue = own(anyValue, 'boolValue');
  if (boolValue != null) return booleanOf(boolValue, `${at}.boolValue`);
  const intValue = own(anyValue, 'intValue');
  if (intValue != null) {
    const number = integerOf(intValue, `${at}.intValue`, 'int64');
    // An int64 beyond 2^53 (often an id) keeps its exact digits.
    return Number.isSafeInteger(number) ? number : String(isLong(intValue) ? bigintOfLong(intValue) : intValue);
  }
  const doubleValue = own(anyValue, 'doubleValue');
  if (doubleValue != null) {
    const number = doubleOf(doubleValue, `${at}.doubleValue`) as number;
    // JSON has no NaN or Infinity; keep them readable rather than turning them into null.
    return Number.isFinite(number) ? number : String(number);
  }
  const bytes = own(anyValue, 'bytesValue');
  if (bytes != null) {
    if (bytes instanceof Uint8Array) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('base64');
    return stringOf(bytes, `${at}.bytesValue`); // OTLP/JSON already writes bytes values as base64
  }
  const arrayValue = own(anyValue, 'arrayValue');
  if (arrayValue != null) {
    const valuesAt = `${at}.arrayValue.values`;
    // An empty AnyValue inside an array is a null element, which the OTel spec keeps.
    return listOf(objectOf(arrayValue, `${at}.arrayValue`).values, valuesAt).map(
      (element, index) => plainValueOf(element, `${valuesAt}[${index}]`, depth + 1) ?? null,
    );
  }
  const kvlistValue = own(anyValue, 'kvlistValue');
  if (kvlistValue != null) {
    const object: { [key: string]: PlainValue } = {};
    forEachKeyValue(objectOf(kvlistValue, `${at}.kvlistValue`).values, `${at}.kvlistValue.values`, depth + 1, (key, entry) => {
      object[key] = entry;
    });
    return object;
  }
  return undefined;
}

function forEachKeyValue(list: unknown, at: string, depth: number, visit: (key: string, value: PlainValue) => void): void {
  const items = listOf(list, at);
  for (let index = 0; index < items.length; index++) {
    const itemAt = `${at}[${index}]`;
    const item = objectOf(items[index], itemAt);
    const key = stringOf(item.key, `${itemAt}.key`);
    const value = plainValueOf(item.value, `${itemAt}.value`, depth);
    // Keys by string-table index belong to profiles; `__proto__` would replace the object's prototype.
    if (key !== '' && key !== '__proto__' && value !== undefined) visit(key, value);
  }
}

/** KeyValue list → flat attributes: nested lists become dotted keys, the OTel naming style. */
function attributesOf(list: unknown, at: string): Attributes {
  const attributes: Attributes = {};
  forEachKeyValue(list, at, 0, (key, value) => flattenInto(attributes, key, value));
  return attributes;
}

export function flattenInto(attributes: Attributes, key: string, value: PlainValue): void {
  if (value === null) return;
  if (Array.isArray(value)) {
    attributes[key] = value.map((element) => (typeof element === 'object' && element !== null ? JSON.stringify(element) : element));
  } else if (typeof value === 'object') {
    for (const [subKey, subValue] of Object.entries(value)) flattenInto(attributes, `${key}.${subKey}`, subValue);
  } else {
    attributes[key] = value;
  }
}

/** A scalar attribute as text (a version sent as a number still names a version); undefined for '' and lists. */
function scalarText(value: Attributes[string] | undefined): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
}

/**
 * The first of up to three attributes holding a scalar, as text. Named parameters rather than a rest
 * list: every span asks a dozen of these, and the list was a measurable part of its decoding.
 */
export function textOf(attributes: Attributes, first: string, second?: string, third?: string): string | undefined {
  return (
    scalarText(attributes[first]) ??
    (second === undefined ? undefined : scalarText(attributes[second])) ??
    (third === undefined ? undefined : scalarText(attributes[third]))
  );
}

/** A safe integer attribute, or a decimal string of one. */
function safeIntegerOf(value: Attributes[string] | undefined): number | undefined {
  const number = typeof value === 'string' && INTEGER.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isSafeInteger(number) ? number : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Resource and scope

interface ResourceContext {
  service: string;
  serviceVersion: string | undefined;
  environment: string | undefined;
  release: string | undefined;
}

function resourceOf(value: unknown, at: string): ResourceContext {
  const attributes = attributesOf(objectOf(value, at).attributes, `${at}.attributes`);
  const serviceVersion = textOf(attributes, 'service.version');
  return {
    service: textOf(attributes, 'service.name') ?? 'unknown_service',
    serviceVersion,
    environment: environmentOf(attributes),
    // Sentry SDKs name the release; plain OTel services have only their version.
    release: textOf(attributes, 'sentry.release') ?? serviceVersion,
  };
}

export const environmentOf = (attributes: Attributes) =>
  textOf(attributes, 'deployment.environment.name', 'deployment.environment', 'sentry.environment');

/** Walks resource → scope → item lists, handing each item its path and resource. */
function forEachScopeItem(
  request: Plain,
  [resourceKey, scopeKey, itemKey]: [string, string, string],
  visit: (item: unknown, at: string, resource: ResourceContext) => void,
): void {
  const resources = listOf(request[resourceKey], resourceKey);
  for (let r = 0; r < resources.length; r++) {
    const resourceAt = `${resourceKey}[${r}]`;
    const resourceItem = objectOf(resources[r], resourceAt);
    const resource = resourceOf(resourceItem.resource, `${resourceAt}.resource`);
    const scopes = listOf(resourceItem[scopeKey], `${resourceAt}.${scopeKey}`);
    for (let s = 0; s < scopes.length; s++) {
      const scopeAt = `${resourceAt}.${scopeKey}[${s}]`;
      const items = listOf(objectOf(scopes[s], scopeAt)[itemKey], `${scopeAt}.${itemKey}`);
      for (let i = 0; i < items.length; i++) visit(items[i], `${scopeAt}.${itemKey}[${i}]`, resource);
    }
  }
}

/** Errors listed per request: enough to diagnose a sender, bounded so a bad batch cannot bloat the reply. */
const MAX_ERRORS = 10;

function reject(outcome: { rejected: number; errors: string[] }, message: string, count = 1): undefined {
  outcome.rejected += count;
  if (outcome.errors.length < MAX_ERRORS) outcome.errors.push(message);
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Spans

const spanKinds: Record<number, SpanKind> = { 1: 'internal', 2: 'server', 3: 'client', 4: 'producer', 5: 'consumer' };
const spanStatuses: Record<number, SpanStatus> = { 0: 'unset', 1: 'ok', 2: 'error' };

const SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE = 0x100;
const SPAN_FLAGS_CONTEXT_IS_REMOTE = 0x200;

function spanOf(span: Plain, at: string, resource: ResourceContext, outcome: DecodedTraces): SpanRecord | undefined {
  const traceId = hexIdOf(own(span, 'traceId'), 16);
  if (!traceId || ZEROS.test(traceId)) return reject(outcome, `${at}.traceId must be 32 hex characters, not all zero`);
  const spanId = hexIdOf(own(span, 'spanId'), 8);
  if (!spanId || ZEROS.test(spanId)) return reject(outcome, `${at}.spanId must be 16 hex characters, not all zero`);
  const parentId = hexIdOf(own(span, 'parentSpanId'), 8);
  if (parentId === null) return reject(outcome, `${at}.parentSpanId must be empty or 16 hex characters`);
  // An all-zero parent is the invalid span id, i.e. no parent.
  const parentSpanId = parentId === '' || ZEROS.test(parentId) ? null : parentId;

  // 0 (unspecified) and unknown kinds are treated as internal, as the OTel spec says.
  const kind = spanKinds[integerOf(span.kind, `${at}.kind`, 'int32')] ?? 'internal';
  const startMs = msOf(span.startTimeUnixNano, `${at}.startTimeUnixNano`);
  const endMs = msOf(span.endTimeUnixNano, `${at}.endTimeUnixNano`);
  const attributes = attributesOf(span.attributes, `${at}.attributes`);
  const status = objectOf(span.status, `${at}.status`);
  const statusCode = spanStatuses[integerOf(status.code, `${at}.status.code`, 'int32')] ?? 'unset';
  const statusMessage = stringOf(status.message, `${at}.status.message`);

  const http = httpOf(attributes);
  const db = dbOf(attributes);
  const messaging = messagingOf(attributes);
  // Semconv leaves server spans unset on 4xx (the client's fault); a 5xx is an error unless the app said OK,
  // which the OTel spec makes final.
  const serverFailed =
    statusCode === 'unset' && kind === 'server' && http?.statusCode !== undefined && http.statusCode >= 500 && http.statusCode <= 599;

  const flags = integerOf(span.flags, `${at}.flags`, 'uint32');
  // Newer SDKs say whether the parent is remote; otherwise a server or consumer span is where a service's work begins.
  const parentIsRemote =
    (flags & SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE) !== 0
      ? (flags & SPAN_FLAGS_CONTEXT_IS_REMOTE) !== 0
      : kind === 'server' || kind === 'consumer';

  return {
    traceId,
    spanId,
    parentSpanId,
    name: stringOf(span.name, `${at}.name`),
    kind,
    service: resource.service,
    serviceVersion: resource.serviceVersion,
    environment: resource.environment ?? environmentOf(attributes),
    release: resource.release ?? textOf(attributes, 'sentry.release'),
    startMs,
    endMs,
    durationMs: Math.max(0, endMs - startMs),
    status: serverFailed ? 'error' : statusCode,
    statusMessage: statusMessage === '' ? undefined : statusMessage,
    attributes,
    events: listOf(span.events, `${at}.events`).map((item, index) => {
      const eventAt = `${at}.events[${index}]`;
      const event = objectOf(item, eventAt);
      return {
        name: stringOf(event.name, `${eventAt}.name`),
        timeMs: msOf(event.timeUnixNano, `${eventAt}.timeUnixNano`),
        attributes: attributesOf(event.attributes, `${eventAt}.attributes`),
      };
    }),
    links: listOf(span.links, `${at}.links`).flatMap((item, index) => {
      const linkAt = `${at}.links[${index}]`;
      const link = objectOf(item, linkAt);
      const linkTraceId = hexIdOf(own(link, 'traceId'), 16);
      const linkSpanId = hexIdOf(own(link, 'spanId'), 8);
      const attributes = attributesOf(link.attributes, `${linkAt}.attributes`);
      // A link that points nowhere is dropped; the span itself is fine.
      return linkTraceId && linkSpanId ? [{ traceId: linkTraceId, spanId: linkSpanId, attributes }] : [];
    }),
    http,
    db,
    messaging,
    peerService: textOf(attributes, 'service.peer.name', 'peer.service'),
    isSegment: parentSpanId === null || parentIsRemote,
    // The most specific first: a database reached over HTTP (Elasticsearch, CouchDB) is a database call.
    category: db ? 'db' : messaging ? 'messaging' : http ? 'http' : 'other',
    source: 'otlp',
  };
}

export function httpOf(attributes: Attributes): SpanRecord['http'] {
  const method = textOf(attributes, 'http.request.method', 'http.method');
  const route = textOf(attributes, 'http.route');
  const statusCode = safeIntegerOf(attributes['http.response.status_code']) ?? safeIntegerOf(attributes['http.status_code']);
  const path = textOf(attributes, 'url.path') ?? pathOf(textOf(attributes, 'http.target', 'url.full', 'http.url'));
  return method !== undefined || route !== undefined || statusCode !== undefined
    ? { method, route, statusCode, path }
    : undefined;
}

/** The path of `http.target` (path and query) or of a full URL (client spans carry only that). */
export function pathOf(target: string | undefined): string | undefined {
  if (target === undefined) return undefined;
  try {
    return new URL(target, 'http://host').pathname;
  } catch {
    return undefined;
  }
}

export function dbOf(attributes: Attributes): SpanRecord['db'] {
  const system = textOf(attributes, 'db.system.name', 'db.system');
  if (system === undefined) return undefined;
  return {
    system,
    statement: textOf(attributes, 'db.query.text', 'db.statement'),
    operation: textOf(attributes, 'db.operation.name', 'db.operation'),
    collection: textOf(attributes, 'db.collection.name', 'db.mongodb.collection', 'db.sql.table'),
    namespace: textOf(attributes, 'db.namespace', 'db.name'),
    serverAddress: textOf(attributes, 'server.address', 'net.peer.name'),
  };
}

export function messagingOf(attributes: Attributes): SpanRecord['messaging'] {
  const system = textOf(attributes, 'messaging.system');
  if (system === undefined) return undefined;
  return {
    system,
    destination: textOf(attributes, 'messaging.destination.name', 'messaging.destination'),
    operation: textOf(attributes, 'messaging.operation.type', 'messaging.operation'),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Logs

/** Severity names loggers put in `severityText` when they leave the number unset. */
export const severityByText: Record<string, number> = {
  trace: 1,
  debug: 5,
  info: 9,
  information: 9,
  notice: 10,
  warn: 13,
  warning: 13,
  error: 17,
  err: 17,
  fatal: 21,
  critical: 21,
  crit: 21,
};

function logOf(log: Plain, at: string, resource: ResourceContext, receivedMs: number, outcome: DecodedLogs): LogRecord | undefined {
  // Ids are optional on logs; all zeroes is the OTel "invalid" id, meaning no trace context.
  const traceId = hexIdOf(own(log, 'traceId'), 16);
  if (traceId === null) return reject(outcome, `${at}.traceId must be empty or 32 hex characters`);
  const spanId = hexIdOf(own(log, 'spanId'), 8);
  if (spanId === null) return reject(outcome, `${at}.spanId must be empty or 16 hex characters`);

  const timeMs = msOf(log.timeUnixNano, `${at}.timeUnixNano`);
  const observedTimeMs = msOf(log.observedTimeUnixNano, `${at}.observedTimeUnixNano`);
  const number = integerOf(log.severityNumber, `${at}.severityNumber`, 'int32');
  const severityText = stringOf(log.severityText, `${at}.severityText`).toLowerCase();
  // hasOwn: a severityText such as "constructor" must not reach the object's prototype.
  const severityNumber = number >= 1 && number <= 24 ? number : Object.hasOwn(severityByText, severityText) ? severityByText[severityText]! : 9;
  const body = plainValueOf(log.body, `${at}.body`);
  const attributes = attributesOf(log.attributes, `${at}.attributes`);
  const template = attributes['sentry.message.template'];

  return {
    // The event time may be unknown to a collector that only observed the line.
    timeMs: timeMs || observedTimeMs || receivedMs,
    observedTimeMs: observedTimeMs || undefined,
    severityNumber,
    level: logLevelOf(severityNumber),
    body: body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body),
    attributes,
    traceId: traceId === '' || ZEROS.test(traceId) ? undefined : traceId,
    spanId: spanId === '' || ZEROS.test(spanId) ? undefined : spanId,
    service: resource.service,
    environment: resource.environment ?? environmentOf(attributes),
    release: resource.release ?? textOf(attributes, 'sentry.release'),
    template: typeof template === 'string' && template !== '' ? template : undefined,
    source: 'otlp',
  };
}

// ---------------------------------------------------------------------------------------------------------
// Metrics

const temporalities: Record<number, MetricPoint['temporality']> = { 1: 'delta', 2: 'cumulative' };

/** DataPointFlags.FLAG_NO_RECORDED_VALUE: a staleness marker with nothing to record, skipped without rejecting. */
const FLAG_NO_RECORDED_VALUE = 1;

/** Metric data fields and the point type each becomes. */
const metricDataKeys = [
  ['gauge', 'gauge'],
  ['sum', 'sum'],
  ['histogram', 'histogram'],
  ['exponentialHistogram', 'exponential_histogram'],
  ['summary', 'summary'],
] as const;

type PointBase = Pick<MetricPoint, 'name' | 'unit' | 'attributes' | 'service' | 'environment' | 'release' | 'source' | 'timeUnixNano'> & {
  timeMs: number;
  startTimeMs: number | undefined;
};

function pointsOf(metric: Plain, at: string, resource: ResourceContext, outcome: DecodedMetrics): void {
  const name = stringOf(metric.name, `${at}.name`);
  const unit = stringOf(metric.unit, `${at}.unit`);
  // The data field is a oneof; a sender that sets several gets the first.
  const found = metricDataKeys.find(([key]) => metric[key] != null);
  if (!found) return;
  const [key, type] = found;
  const dataAt = `${at}.${key}`;
  const data = objectOf(metric[key], dataAt);
  const pointsAt = `${dataAt}.dataPoints`;
  const points = listOf(data.dataPoints, pointsAt);
  if (name === '') {
    reject(outcome, `${at}.name must not be empty`, points.length);
    return;
  }
  const temporality = temporalities[integerOf(data.aggregationTemporality, `${dataAt}.aggregationTemporality`, 'int32')];
  const isMonotonic = type === 'sum' ? booleanOf(data.isMonotonic, `${dataAt}.isMonotonic`) : undefined;

  for (let index = 0; index < points.length; index++) {
    const pointAt = `${pointsAt}[${index}]`;
    const point = objectOf(points[index], pointAt);
    if (integerOf(point.flags, `${pointAt}.flags`, 'uint32') & FLAG_NO_RECORDED_VALUE) continue;
    const startTimeMs = msOf(point.startTimeUnixNano, `${pointAt}.startTimeUnixNano`);
    const base: PointBase = {
      name,
      unit: unit === '' ? undefined : unit,
      timeMs: msOf(point.timeUnixNano, `${pointAt}.timeUnixNano`),
      timeUnixNano: nanosOf(point.timeUnixNano, `${pointAt}.timeUnixNano`),
      startTimeMs: startTimeMs || undefined,
      attributes: attributesOf(point.attributes, `${pointAt}.attributes`),
      service: resource.service,
      environment: resource.environment,
      release: resource.release,
      source: 'otlp',
    };
    const record =
      type === 'gauge' || type === 'sum'
        ? numberPointOf(point, pointAt, base, type, temporality, isMonotonic)
        : type === 'histogram'
          ? histogramPointOf(point, pointAt, base, temporality)
          : type === 'exponential_histogram'
            ? exponentialPointOf(point, pointAt, base, temporality)
            : summaryPointOf(point, pointAt, base);
    if (typeof record === 'string') reject(outcome, `${pointAt}: ${record}`);
    else if (hasOnlyFiniteNumbers(record)) outcome.points.push(record);
    else reject(outcome, `${pointAt}: values must be finite`);
  }
}

/** A point whose value, sum, bounds or quantiles are NaN or infinite cannot be aggregated (nor stored as JSON). */
function hasOnlyFiniteNumbers(point: MetricPoint): boolean {
  const numbers = [
    point.timeMs,
    point.value,
    point.count,
    point.sum,
    point.min,
    point.max,
    ...(point.bucketCounts ?? []),
    ...(point.explicitBounds ?? []),
    ...(point.quantiles ?? []).flatMap(({ quantile, value }) => [quantile, value]),
    ...(point.exponential ? [point.exponential.zeroCount, ...point.exponential.positive.bucketCounts, ...point.exponential.negative.bucketCounts] : []),
  ];
  return numbers.every((number) => number === undefined || Number.isFinite(number));
}

/** A point, or why it is rejected. */
type PointResult = MetricPoint | string;

function numberPointOf(
  point: Plain,
  at: string,
  base: PointBase,
  type: 'gauge' | 'sum',
  temporality: MetricPoint['temporality'],
  isMonotonic: boolean | undefined,
): PointResult {
  const asDouble = own(point, 'asDouble');
  const asInt = own(point, 'asInt');
  const value = asDouble != null ? doubleOf(asDouble, `${at}.asDouble`) : asInt != null ? integerOf(asInt, `${at}.asInt`, 'int64') : undefined;
  if (value === undefined) return 'has neither asDouble nor asInt';
  return type === 'sum' ? { ...base, type, temporality, isMonotonic, value } : { ...base, type, value };
}

function distributionOf(point: Plain, at: string) {
  return {
    count: integerOf(point.count, `${at}.count`, 'uint64'),
    sum: doubleOf(own(point, 'sum'), `${at}.sum`),
    min: doubleOf(own(point, 'min'), `${at}.min`),
    max: doubleOf(own(point, 'max'), `${at}.max`),
  };
}

function histogramPointOf(point: Plain, at: string, base: PointBase, temporality: MetricPoint['temporality']): PointResult {
  const bucketCounts = listOf(point.bucketCounts, `${at}.bucketCounts`).map((count, index) =>
    integerOf(count, `${at}.bucketCounts[${index}]`, 'uint64'),
  );
  const explicitBounds = listOf(point.explicitBounds, `${at}.explicitBounds`).map(
    (bound, index) => doubleOf(bound, `${at}.explicitBounds[${index}]`) ?? 0,
  );
  // Percentiles read bucket i as (bound i-1, bound i]; a point without buckets still has count and sum.
  if (bucketCounts.length > 0 && bucketCounts.length !== explicitBounds.length + 1) {
    return 'bucketCounts must have one more entry than explicitBounds';
  }
  return { ...base, type: 'histogram', temporality, ...distributionOf(point, at), bucketCounts, explicitBounds };
}

function exponentialPointOf(point: Plain, at: string, base: PointBase, temporality: MetricPoint['temporality']): PointResult {
  const bucketsOf = (value: unknown, bucketsAt: string) => {
    const buckets = objectOf(value, bucketsAt);
    return {
      offset: integerOf(buckets.offset, `${bucketsAt}.offset`, 'int32'),
      bucketCounts: listOf(buckets.bucketCounts, `${bucketsAt}.bucketCounts`).map((count, index) =>
        integerOf(count, `${bucketsAt}.bucketCounts[${index}]`, 'uint64'),
      ),
    };
  };
  return {
    ...base,
    type: 'exponential_histogram',
    temporality,
    ...distributionOf(point, at),
    exponential: {
      scale: integerOf(point.scale, `${at}.scale`, 'int32'),
      zeroCount: integerOf(point.zeroCount, `${at}.zeroCount`, 'uint64'),
      positive: bucketsOf(point.positive, `${at}.positive`),
      negative: bucketsOf(point.negative, `${at}.negative`),
    },
  };
}

function summaryPointOf(point: Plain, at: string, base: PointBase): PointResult {
  const quantiles = listOf(point.quantileValues, `${at}.quantileValues`).map((item, index) => {
    const quantileAt = `${at}.quantileValues[${index}]`;
    const quantile = objectOf(item, quantileAt);
    return {
      quantile: doubleOf(quantile.quantile, `${quantileAt}.quantile`) ?? 0,
      value: doubleOf(quantile.value, `${quantileAt}.value`) ?? 0,
    };
  });
  return {
    ...base,
    type: 'summary',
    count: integerOf(point.count, `${at}.count`, 'uint64'),
    // Summary sums are not optional in the proto: absent means 0.
    sum: doubleOf(point.sum, `${at}.sum`) ?? 0,
    quantiles,
  };
}
