import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { decodeLogs, decodeMetrics, decodeTraces, exportResponse, type OtlpContentType } from '../../src/shared/telemetry/otlp/decode.js';
import { otlpDescriptor } from '../../src/shared/telemetry/otlp/proto/descriptor.js';
import { AppError } from '../../src/shared/errors.js';
import { logRecord, metricPoint, spanRecord } from '../../src/shared/telemetry/records.js';

// Requests are built the way an exporter builds them: protobufjs over the same vendored .proto files.
const protoDir = fileURLToPath(new URL('../../src/shared/telemetry/otlp/proto/', import.meta.url));
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(protoDir, target);
root.loadSync(['trace', 'logs', 'metrics'].map((name) => `opentelemetry/proto/collector/${name}/v1/${name}_service.proto`));
const types = {
  traces: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest'),
  logs: root.lookupType('opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest'),
  metrics: root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'),
  tracesResponse: root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse'),
};

type Json = Record<string, unknown>;

/** OTLP/JSON with hex ids → protobuf bytes with the ids as bytes. */
function protobufOf(type: protobuf.Type, request: Json): Buffer {
  const withBytes = JSON.parse(JSON.stringify(request), (key, value) =>
    ['traceId', 'spanId', 'parentSpanId'].includes(key) && typeof value === 'string' ? Buffer.from(value, 'hex') : value,
  );
  return Buffer.from(type.encode(type.fromObject(withBytes)).finish());
}
const jsonOf = (request: unknown) => Buffer.from(JSON.stringify(request));

const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
const int = (key: string, value: number | string) => ({ key, value: { intValue: value } });

const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const ROOT_SPAN = 'eee19b7ec3c1b174';
const CHILD_SPAN = 'eee19b7ec3c1b173';
const T0 = 1_700_000_000_000; // ms
const nanos = (ms: number) => `${ms}000000`;

/** A checkout service: a server span using current semconv names, a DB client span using deprecated ones. */
function traceRequest(): Json {
  return {
    resourceSpans: [
      {
        resource: {
          attributes: [str('service.name', 'checkout'), str('service.version', '1.4.2'), str('deployment.environment.name', 'production')],
        },
        scopeSpans: [
          {
            scope: { name: '@opentelemetry/instrumentation-http' },
            spans: [
              {
                traceId: TRACE_ID,
                spanId: ROOT_SPAN,
                name: 'GET /orders/:id',
                kind: 2,
                startTimeUnixNano: nanos(T0),
                endTimeUnixNano: nanos(T0 + 250),
                attributes: [
                  str('http.request.method', 'GET'),
                  str('http.route', '/orders/:id'),
                  int('http.response.status_code', 200),
                  str('url.path', '/orders/42'),
                ],
                events: [
                  {
                    name: 'exception',
                    timeUnixNano: nanos(T0 + 100),
                    attributes: [str('exception.type', 'TypeError'), str('exception.message', 'x is undefined')],
                  },
                ],
                links: [{ traceId: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', spanId: 'bbbbbbbbbbbbbbbb', attributes: [str('reason', 'batch')] }],
                status: {},
              },
              {
                traceId: TRACE_ID,
                spanId: CHILD_SPAN,
                parentSpanId: ROOT_SPAN,
                name: 'SELECT orders',
                kind: 3,
                startTimeUnixNano: nanos(T0 + 10),
                endTimeUnixNano: nanos(T0 + 30),
                attributes: [
                  str('db.system', 'postgresql'),
                  str('db.statement', 'SELECT * FROM orders WHERE id = $1'),
                  str('db.operation', 'SELECT'),
                  str('db.sql.table', 'orders'),
                  str('db.name', 'shop'),
                  str('server.address', 'db.internal'),
                  str('peer.service', 'postgres'),
                  { key: 'db.params', value: { kvlistValue: { values: [int('limit', 10), str('order', 'desc')] } } },
                  { key: 'tags', value: { arrayValue: { values: [{ stringValue: 'a' }, {}, { boolValue: true }] } } },
                ],
                status: { code: 2, message: 'connection reset' },
              },
            ],
          },
        ],
      },
    ],
  };
}

/** One span per case, for the status rules. */
function oneSpan(span: Json, resourceAttributes: unknown[] = [str('service.name', 'api')]): Json {
  return {
    resourceSpans: [
      {
        resource: { attributes: resourceAttributes },
        scopeSpans: [{ spans: [{ traceId: TRACE_ID, spanId: ROOT_SPAN, name: 'span', startTimeUnixNano: nanos(T0), endTimeUnixNano: nanos(T0 + 1), ...span }] }],
      },
    ],
  };
}

describe('the embedded descriptor', () => {
  it('matches the vendored .proto files (regenerate with `node src/shared/telemetry/otlp/proto/generate.mjs`)', () => {
    expect(JSON.parse(JSON.stringify(otlpDescriptor))).toEqual(root.toJSON());
  });
});

function expectInvalidRequest(run: () => unknown, message?: RegExp) {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(AppError);
  expect((thrown as AppError).code).toBe('invalid_request');
  expect((thrown as AppError).status).toBe(400);
  if (message) expect((thrown as AppError).message).toMatch(message);
}

describe('decodeTraces', () => {
  it('maps a protobuf request to span records with hex ids, resource service and semconv fields', () => {
    const { spans, rejected, errors } = decodeTraces(protobufOf(types.traces, traceRequest()), 'protobuf');
    expect(rejected).toBe(0);
    expect(errors).toEqual([]);
    expect(spans).toHaveLength(2);
    const [server, query] = spans;
    expect(server).toEqual({
      traceId: TRACE_ID,
      spanId: ROOT_SPAN,
      parentSpanId: null,
      name: 'GET /orders/:id',
      kind: 'server',
      service: 'checkout',
      serviceVersion: '1.4.2',
      environment: 'production',
      release: '1.4.2',
      startMs: T0,
      endMs: T0 + 250,
      durationMs: 250,
      status: 'unset',
      attributes: {
        'http.request.method': 'GET',
        'http.route': '/orders/:id',
        'http.response.status_code': 200,
        'url.path': '/orders/42',
      },
      events: [{ name: 'exception', timeMs: T0 + 100, attributes: { 'exception.type': 'TypeError', 'exception.message': 'x is undefined' } }],
      links: [{ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), attributes: { reason: 'batch' } }],
      http: { method: 'GET', route: '/orders/:id', statusCode: 200, path: '/orders/42' },
      isSegment: true,
      category: 'http',
      source: 'otlp',
    });
    expect(query).toMatchObject({
      parentSpanId: ROOT_SPAN,
      kind: 'client',
      status: 'error',
      statusMessage: 'connection reset',
      durationMs: 20,
      isSegment: false,
      category: 'db',
      peerService: 'postgres',
      db: {
        system: 'postgresql',
        statement: 'SELECT * FROM orders WHERE id = $1',
        operation: 'SELECT',
        collection: 'orders',
        namespace: 'shop',
        serverAddress: 'db.internal',
      },
    });
    // Nested lists flatten to dotted keys; an empty array element is kept as null.
    expect(query?.attributes).toMatchObject({ 'db.params.limit': 10, 'db.params.order': 'desc', tags: ['a', null, true] });
    for (const span of spans) expect(spanRecord.parse(JSON.parse(JSON.stringify(span)))).toBeTruthy();
  });

  it('decodes the OTLP/JSON form of the same request to the same records', () => {
    const request = traceRequest();
    expect(decodeTraces(jsonOf(request), 'json')).toEqual(decodeTraces(protobufOf(types.traces, request), 'protobuf'));
  });

  it('reads current semconv names before deprecated ones', () => {
    const request = oneSpan({
      kind: 3,
      attributes: [
        str('db.system.name', 'mongodb'),
        str('db.system', 'mongo-old'),
        str('db.query.text', 'find'),
        str('db.operation.name', 'find'),
        str('db.collection.name', 'users'),
        str('db.namespace', 'app'),
        str('service.peer.name', 'users-db'),
        str('peer.service', 'old-peer'),
      ],
    });
    const [span] = decodeTraces(jsonOf(request), 'json').spans;
    expect(span?.db).toEqual({ system: 'mongodb', statement: 'find', operation: 'find', collection: 'users', namespace: 'app' });
    expect(span?.peerService).toBe('users-db');

    const legacyHttp = oneSpan({
      kind: 2,
      attributes: [str('http.method', 'POST'), int('http.status_code', '201'), str('http.target', '/cart?item=3')],
    });
    const [server] = decodeTraces(protobufOf(types.traces, legacyHttp), 'protobuf').spans;
    expect(server?.http).toEqual({ method: 'POST', statusCode: 201, path: '/cart' });

    const messaging = oneSpan({
      kind: 4,
      attributes: [str('messaging.system', 'kafka'), str('messaging.destination.name', 'orders'), str('messaging.operation', 'publish')],
    });
    const [producer] = decodeTraces(jsonOf(messaging), 'json').spans;
    expect(producer).toMatchObject({ category: 'messaging', messaging: { system: 'kafka', destination: 'orders', operation: 'publish' } });
  });

  it('takes the environment from the deprecated resource name and defaults the service to unknown_service', () => {
    const [span] = decodeTraces(jsonOf(oneSpan({}, [str('deployment.environment', 'staging')])), 'json').spans;
    expect(span).toMatchObject({ service: 'unknown_service', environment: 'staging' });
    expect(span?.serviceVersion).toBeUndefined();
  });

  it('counts HTTP server spans as errors only on 5xx or an explicit error status', () => {
    const statusOf = (span: Json) => decodeTraces(jsonOf(oneSpan(span)), 'json').spans[0]?.status;
    const server = (code: number) => ({ kind: 2, attributes: [int('http.response.status_code', code)] });
    expect(statusOf(server(500))).toBe('error');
    expect(statusOf(server(503))).toBe('error');
    expect(statusOf(server(404))).toBe('unset');
    expect(statusOf({ ...server(404), status: { code: 2 } })).toBe('error');
    expect(statusOf({ ...server(200), status: { code: 1 } })).toBe('ok');
    // A client span's status is the SDK's; 5xx on a call out does not make it an error here.
    expect(statusOf({ kind: 3, attributes: [int('http.response.status_code', 500)] })).toBe('unset');
  });

  it('reads JSON int64 as strings or numbers and hex ids in any case', () => {
    const request = oneSpan({
      traceId: TRACE_ID.toUpperCase(),
      startTimeUnixNano: T0 * 1e6,
      endTimeUnixNano: '1700000000002500000',
      attributes: [int('count', '42'), int('big', '9007199254740993'), { key: 'ratio', value: { doubleValue: 'NaN' } }],
    });
    const [span] = decodeTraces(jsonOf(request), 'json').spans;
    expect(span).toMatchObject({ traceId: TRACE_ID, startMs: T0, endMs: T0 + 2.5, durationMs: 2.5 });
    expect(span?.attributes).toEqual({ count: 42, big: '9007199254740993', ratio: 'NaN' });
  });

  it('reads protobuf int64s exactly and unset oneof members as absent', () => {
    const request = oneSpan({
      endTimeUnixNano: '1700000000002500001',
      attributes: [int('big', '9007199254740993'), int('negative', '-5'), { key: 'off', value: { boolValue: false } }, { key: 'empty', value: {} }],
    });
    const [span] = decodeTraces(protobufOf(types.traces, request), 'protobuf').spans;
    expect(span).toMatchObject({ startMs: T0, endMs: T0 + 2.500001 });
    expect(span?.attributes).toEqual({ big: '9007199254740993', negative: -5, off: false });
    const histogram = { name: 'h', histogram: { aggregationTemporality: 1, dataPoints: [{ timeUnixNano: nanos(T0), count: '2', bucketCounts: ['2'] }] } };
    const [point] = decodeMetrics(protobufOf(types.metrics, { resourceMetrics: [{ scopeMetrics: [{ metrics: [histogram] }] }] }), 'protobuf').points;
    expect(point).toMatchObject({ count: 2, bucketCounts: [2], explicitBounds: [] });
    expect([point?.sum, point?.min, point?.max]).toEqual([undefined, undefined, undefined]);
  });

  it('uses the remote-parent flag when the SDK sends it', () => {
    const [remoteChild] = decodeTraces(jsonOf(oneSpan({ kind: 1, parentSpanId: CHILD_SPAN, flags: 0x301 })), 'json').spans;
    expect(remoteChild?.isSegment).toBe(true);
    const [localServer] = decodeTraces(jsonOf(oneSpan({ kind: 2, parentSpanId: CHILD_SPAN, flags: 0x101 })), 'json').spans;
    expect(localServer?.isSegment).toBe(false);
  });

  it('rejects and counts spans with invalid ids, keeping the rest', () => {
    const request = traceRequest() as { resourceSpans: [{ scopeSpans: [{ spans: Json[] }] }] };
    const spans = request.resourceSpans[0].scopeSpans[0].spans;
    const valid = spans[0] as Json;
    spans.push(
      { ...valid, traceId: TRACE_ID.slice(2) }, // 15 bytes
      { ...valid, spanId: 'eee19b7ec3c1b1' }, // 7 bytes
      { ...valid, traceId: '0'.repeat(32) }, // the invalid trace id
      { ...valid, parentSpanId: 'abc' },
      { ...valid, traceId: Buffer.from(TRACE_ID, 'hex').toString('base64') }, // base64 is not OTLP/JSON
    );
    const json = decodeTraces(jsonOf(request), 'json');
    expect(json.spans).toHaveLength(2);
    expect(json.rejected).toBe(5);
    expect(json.errors[0]).toMatch(/resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[2\]\.traceId/);

    const binary = decodeTraces(protobufOf(types.traces, { resourceSpans: [{ scopeSpans: [{ spans: spans.slice(0, 5) }] }] }), 'protobuf');
    expect(binary.spans.map((span) => span.spanId)).toEqual([ROOT_SPAN, CHILD_SPAN]);
    expect(binary.rejected).toBe(3);
  });

  it('drops links with invalid ids but keeps the span', () => {
    const [span] = decodeTraces(jsonOf(oneSpan({ links: [{ traceId: 'xyz', spanId: ROOT_SPAN }] })), 'json').spans;
    expect(span?.links).toEqual([]);
  });

  it('answers malformed bodies with invalid_request', () => {
    const valid = protobufOf(types.traces, traceRequest());
    expectInvalidRequest(() => decodeTraces(valid.subarray(0, valid.length - 7), 'protobuf'), /does not decode/);
    expectInvalidRequest(() => decodeTraces(Buffer.from('{"resourceSpans": ['), 'json'), /not JSON/);
    expectInvalidRequest(() => decodeTraces(Buffer.from('[]'), 'json'), /JSON object/);
    expectInvalidRequest(() => decodeTraces(Buffer.from(''), 'json'));
    expectInvalidRequest(() => decodeTraces(jsonOf({ resourceSpans: {} }), 'json'), /resourceSpans must be an array/);
    expectInvalidRequest(() => decodeTraces(jsonOf(oneSpan({ name: 5 })), 'json'), /spans\[0\]\.name must be a string/);
    // OTLP/JSON allows only integer enums.
    expectInvalidRequest(() => decodeTraces(jsonOf(oneSpan({ kind: 'SPAN_KIND_SERVER' })), 'json'), /kind/);
    expectInvalidRequest(() => decodeTraces(jsonOf(oneSpan({ startTimeUnixNano: '17e17' })), 'json'), /startTimeUnixNano/);
  });

  it('refuses values nested deeper than any real attribute', () => {
    let value: Json = { stringValue: 'bottom' };
    for (let depth = 0; depth < 20; depth++) value = { arrayValue: { values: [value] } };
    const request = oneSpan({ attributes: [{ key: 'deep', value }] });
    const json = jsonOf(request);
    const binary = protobufOf(types.traces, request);
    expectInvalidRequest(() => decodeTraces(json, 'json'), /nested at most/);
    expectInvalidRequest(() => decodeTraces(binary, 'protobuf'), /nested at most/);
  });

  it('ignores snake_case keys as unknown fields', () => {
    expect(decodeTraces(jsonOf({ resource_spans: traceRequest().resourceSpans }), 'json').spans).toEqual([]);
  });
});

function logRequest(): Json {
  return {
    resourceLogs: [
      {
        resource: { attributes: [str('service.name', 'worker'), str('deployment.environment', 'staging'), str('sentry.release', 'worker@2.0.0')] },
        scopeLogs: [
          {
            logRecords: [
              {
                timeUnixNano: nanos(T0),
                observedTimeUnixNano: nanos(T0 + 5),
                severityNumber: 17,
                severityText: 'ERROR',
                body: { stringValue: 'payment failed for order 42' },
                attributes: [str('sentry.message.template', 'payment failed for order %s'), int('order.id', 42)],
                traceId: TRACE_ID,
                spanId: ROOT_SPAN,
              },
              {
                observedTimeUnixNano: nanos(T0 + 7),
                severityText: 'Warning',
                body: { kvlistValue: { values: [str('event', 'retry'), int('attempt', 3)] } },
              },
              { body: { intValue: '7' } },
            ],
          },
        ],
      },
    ],
  };
}

describe('decodeLogs', () => {
  const receivedMs = T0 + 60_000;

  it('maps protobuf and JSON log records alike', () => {
    const request = logRequest();
    const binary = decodeLogs(protobufOf(types.logs, request), 'protobuf', receivedMs);
    expect(decodeLogs(jsonOf(request), 'json', receivedMs)).toEqual(binary);
    expect(binary.rejected).toBe(0);
    const [payment, retry, bare] = binary.logs;
    expect(payment).toEqual({
      timeMs: T0,
      observedTimeMs: T0 + 5,
      severityNumber: 17,
      level: 'error',
      body: 'payment failed for order 42',
      attributes: { 'sentry.message.template': 'payment failed for order %s', 'order.id': 42 },
      traceId: TRACE_ID,
      spanId: ROOT_SPAN,
      service: 'worker',
      environment: 'staging',
      release: 'worker@2.0.0',
      template: 'payment failed for order %s',
      source: 'otlp',
    });
    // No event time: the observed time; no severity number: the severity text.
    expect(retry).toMatchObject({ timeMs: T0 + 7, severityNumber: 13, level: 'warn', body: '{"event":"retry","attempt":3}' });
    expect(retry?.traceId).toBeUndefined();
    // Nothing at all: received now, at info.
    expect(bare).toMatchObject({ timeMs: receivedMs, severityNumber: 9, level: 'info', body: '7' });
    for (const log of binary.logs) expect(logRecord.parse(JSON.parse(JSON.stringify(log)))).toBeTruthy();
  });

  it('maps every severity range to its level', () => {
    const levels = [1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24].map((severityNumber) => {
      const request = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: nanos(T0), severityNumber }] }] }] };
      return decodeLogs(jsonOf(request), 'json').logs[0]?.level;
    });
    expect(levels).toEqual(['trace', 'trace', 'debug', 'debug', 'info', 'info', 'warn', 'warn', 'error', 'error', 'fatal', 'fatal']);
  });

  it('a severity text naming an object property is just an unknown severity', () => {
    for (const severityText of ['constructor', '__proto__', 'toString']) {
      const request = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: nanos(T0), severityText, body: { stringValue: 'x' } }] }] }] };
      const [log] = decodeLogs(jsonOf(request), 'json').logs;
      expect(logRecord.parse(log)).toMatchObject({ severityNumber: 9, level: 'info' });
    }
  });

  it('rejects records with malformed ids and treats all-zero ids as no trace context', () => {
    const request = {
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                { timeUnixNano: nanos(T0), traceId: 'abcd' },
                { timeUnixNano: nanos(T0), spanId: TRACE_ID },
                { timeUnixNano: nanos(T0), traceId: '0'.repeat(32), spanId: '0'.repeat(16) },
              ],
            },
          ],
        },
      ],
    };
    const { logs, rejected, errors } = decodeLogs(jsonOf(request), 'json');
    expect(rejected).toBe(2);
    expect(errors).toHaveLength(2);
    expect(logs).toHaveLength(1);
    expect(logs[0]?.traceId).toBeUndefined();
    expect(logs[0]?.service).toBe('unknown_service');
  });

  it('answers malformed bodies with invalid_request', () => {
    expectInvalidRequest(() => decodeLogs(Buffer.from([0x0a, 0x05, 0x12]), 'protobuf'));
    expectInvalidRequest(() => decodeLogs(Buffer.from('nope'), 'json'));
    expectInvalidRequest(() => decodeLogs(jsonOf({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: 1.5 }] }] }] }), 'json'));
  });
});

function metricRequest(): Json {
  const attributes = [str('host', 'web-1')];
  const times = { startTimeUnixNano: nanos(T0 - 60_000), timeUnixNano: nanos(T0) };
  return {
    resourceMetrics: [
      {
        resource: { attributes: [str('service.name', 'web'), str('deployment.environment.name', 'production')] },
        scopeMetrics: [
          {
            metrics: [
              { name: 'process.memory', unit: 'By', gauge: { dataPoints: [{ ...times, attributes, asInt: '52428800' }] } },
              {
                name: 'http.requests',
                unit: '{request}',
                sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints: [{ ...times, attributes, asDouble: 1234 }] },
              },
              {
                name: 'http.server.duration',
                unit: 'ms',
                histogram: {
                  aggregationTemporality: 1,
                  dataPoints: [{ ...times, attributes, count: '6', sum: 410, min: 5, max: 200, bucketCounts: ['1', '3', '2'], explicitBounds: [10, 100] }],
                },
              },
              {
                name: 'queue.latency',
                exponentialHistogram: {
                  aggregationTemporality: 2,
                  dataPoints: [{ ...times, count: '4', sum: 12.5, scale: 3, zeroCount: '1', positive: { offset: -2, bucketCounts: ['2', '1'] }, negative: {} }],
                },
              },
              {
                name: 'gc.pause',
                summary: { dataPoints: [{ ...times, count: '3', sum: 9, quantileValues: [{ quantile: 0.5, value: 2 }, { quantile: 1, value: 5 }] }] },
              },
            ],
          },
        ],
      },
    ],
  };
}

describe('decodeMetrics', () => {
  it('keeps each point\'s time to the nanosecond: points of one millisecond stay in order', () => {
    // an SDK batching a counter's points (telemetrygen sends 20 in one request) stamps them microseconds apart
    const point = (at: string, value: number) => ({ startTimeUnixNano: nanos(T0 - 60_000), timeUnixNano: at, asInt: String(value) });
    const dataPoints = [point(`${T0}000001`, 1), point(`${T0}000999`, 2), point(`${T0 + 1}000000`, 3)];
    const request = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'jobs.done', sum: { aggregationTemporality: 2, isMonotonic: true, dataPoints } }] }] }] };
    for (const decoded of [decodeMetrics(protobufOf(types.metrics, request), 'protobuf'), decodeMetrics(jsonOf(request), 'json')]) {
      expect(decoded.points.map((p) => [Math.floor(p.timeMs), p.timeUnixNano])).toEqual([
        [T0, `${T0}000001`],
        [T0, `${T0}000999`],
        [T0 + 1, `${T0 + 1}000000`],
      ]);
    }
  });

  it('maps every metric type from protobuf and JSON alike, keeping temporality', () => {
    const request = metricRequest();
    const binary = decodeMetrics(protobufOf(types.metrics, request), 'protobuf');
    expect(decodeMetrics(jsonOf(request), 'json')).toEqual(binary);
    expect(binary.rejected).toBe(0);
    const common = { timeMs: T0, timeUnixNano: nanos(T0), startTimeMs: T0 - 60_000, service: 'web', environment: 'production', source: 'otlp' };
    const [gauge, sum, histogram, exponential, summary] = binary.points;
    expect(gauge).toEqual({ ...common, name: 'process.memory', unit: 'By', type: 'gauge', value: 52428800, attributes: { host: 'web-1' } });
    expect(sum).toEqual({
      ...common,
      name: 'http.requests',
      unit: '{request}',
      type: 'sum',
      temporality: 'cumulative',
      isMonotonic: true,
      value: 1234,
      attributes: { host: 'web-1' },
    });
    expect(histogram).toEqual({
      ...common,
      name: 'http.server.duration',
      unit: 'ms',
      type: 'histogram',
      temporality: 'delta',
      count: 6,
      sum: 410,
      min: 5,
      max: 200,
      bucketCounts: [1, 3, 2],
      explicitBounds: [10, 100],
      attributes: { host: 'web-1' },
    });
    expect(exponential).toEqual({
      ...common,
      name: 'queue.latency',
      type: 'exponential_histogram',
      temporality: 'cumulative',
      count: 4,
      sum: 12.5,
      exponential: { scale: 3, zeroCount: 1, positive: { offset: -2, bucketCounts: [2, 1] }, negative: { offset: 0, bucketCounts: [] } },
      attributes: {},
    });
    expect(summary).toEqual({
      ...common,
      name: 'gc.pause',
      type: 'summary',
      count: 3,
      sum: 9,
      quantiles: [
        { quantile: 0.5, value: 2 },
        { quantile: 1, value: 5 },
      ],
      attributes: {},
    });
    for (const point of binary.points) expect(metricPoint.parse(JSON.parse(JSON.stringify(point)))).toBeTruthy();
  });

  it('rejects points without a value, with mismatched buckets or non-finite values, and skips no-value markers', () => {
    const request = {
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                { name: 'a', gauge: { dataPoints: [{ timeUnixNano: nanos(T0) }, { timeUnixNano: nanos(T0), asDouble: 'Infinity' }, { flags: 1 }] } },
                { name: 'b', histogram: { dataPoints: [{ timeUnixNano: nanos(T0), count: 3, bucketCounts: [1, 2], explicitBounds: [1, 2] }] } },
                { name: '', sum: { dataPoints: [{ asInt: 1 }, { asInt: 2 }] } },
                { name: 'c', gauge: { dataPoints: [{ timeUnixNano: nanos(T0), asInt: 3 }] } },
              ],
            },
          ],
        },
      ],
    };
    const { points, rejected, errors } = decodeMetrics(jsonOf(request), 'json');
    expect(points.map((point) => [point.name, point.value])).toEqual([['c', 3]]);
    expect(rejected).toBe(5);
    expect(errors.join('\n')).toMatch(/neither asDouble nor asInt/);
    expect(errors.join('\n')).toMatch(/one more entry than explicitBounds/);
  });

  it('answers malformed bodies with invalid_request', () => {
    expectInvalidRequest(() => decodeMetrics(Buffer.from([0xff, 0xff, 0xff]), 'protobuf'));
    expectInvalidRequest(() => decodeMetrics(jsonOf({ resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'x', gauge: [] }] }] }] }), 'json'));
  });
});

describe('exportResponse', () => {
  it('encodes full and partial success as protobuf', () => {
    expect(exportResponse('traces', 'protobuf')).toHaveLength(0);
    const partial = types.tracesResponse.toObject(types.tracesResponse.decode(exportResponse('traces', 'protobuf', 3, 'bad ids')), { longs: Number });
    expect(partial).toEqual({ partialSuccess: { rejectedSpans: 3, errorMessage: 'bad ids' } });
  });

  it('encodes full and partial success as JSON', () => {
    expect(exportResponse('logs', 'json').toString()).toBe('{}');
    expect(JSON.parse(exportResponse('metrics', 'json', 2, 'no value').toString())).toEqual({
      partialSuccess: { rejectedDataPoints: '2', errorMessage: 'no value' },
    });
  });
});

describe('decoding arbitrary input', () => {
  const decoders = [
    { decode: decodeTraces, list: 'spans', schema: spanRecord },
    { decode: decodeLogs, list: 'logs', schema: logRecord },
    { decode: decodeMetrics, list: 'points', schema: metricPoint },
  ] as const;
  const contentTypes: OtlpContentType[] = ['protobuf', 'json'];

  /** Either records that satisfy the job payload schema, or invalid_request; never another error. */
  function decodesOrRejects(decoder: (typeof decoders)[number], body: Buffer, contentType: OtlpContentType) {
    let result: Record<string, unknown>;
    try {
      result = decoder.decode(body, contentType) as unknown as Record<string, unknown>;
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'invalid_request') throw error;
      return;
    }
    for (const record of result[decoder.list] as unknown[]) decoder.schema.parse(JSON.parse(JSON.stringify(record)));
  }

  it('handles random bytes as either content type', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), fc.constantFrom(...decoders), fc.constantFrom(...contentTypes), (bytes, decoder, type) =>
        decodesOrRejects(decoder, Buffer.from(bytes), type),
      ),
      { numRuns: 2000 },
    );
  });

  it('handles random JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(...decoders), (value, decoder) => decodesOrRejects(decoder, jsonOf(value), 'json')),
      { numRuns: 500 },
    );
  });

  // Valid requests with one value swapped for an arbitrary one reach the deeper readers.
  const samples = [
    { decoder: decoders[0], request: traceRequest(), type: types.traces },
    { decoder: decoders[1], request: logRequest(), type: types.logs },
    { decoder: decoders[2], request: metricRequest(), type: types.metrics },
  ];

  function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
    if (typeof value !== 'object' || value === null) return [prefix];
    const keys = Array.isArray(value) ? value.map((_, index) => index) : Object.keys(value);
    return [prefix, ...keys.flatMap((key) => pathsOf((value as Record<string | number, unknown>)[key], [...prefix, key]))];
  }

  function replaced(request: Json, at: (string | number)[], value: unknown): unknown {
    if (at.length === 0) return value;
    const copy = structuredClone(request) as Record<string | number, unknown>;
    let parent = copy;
    for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    parent[at[at.length - 1] as string | number] = value;
    return copy;
  }

  it('handles valid JSON requests with one value replaced', () => {
    const cases = fc.constantFrom(...samples).chain((sample) =>
      fc.record({ sample: fc.constant(sample), at: fc.constantFrom(...pathsOf(sample.request)), value: fc.jsonValue({ maxDepth: 3 }) }),
    );
    fc.assert(
      fc.property(cases, ({ sample, at, value }) => decodesOrRejects(sample.decoder, jsonOf(replaced(sample.request, at, value)), 'json')),
      { numRuns: 1000 },
    );
  });

  it('handles valid protobuf requests with bytes overwritten', () => {
    const cases = fc.constantFrom(...samples).chain((sample) => {
      const bytes = protobufOf(sample.type, sample.request);
      return fc.record({
        sample: fc.constant(sample),
        bytes: fc.constant(bytes),
        edits: fc.array(fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
      });
    });
    fc.assert(
      fc.property(cases, ({ sample, bytes, edits }) => {
        const mutated = Buffer.from(bytes);
        for (const [index, byte] of edits) mutated[index] = byte;
        decodesOrRejects(sample.decoder, mutated, 'protobuf');
      }),
      { numRuns: 1000 },
    );
  });
});
