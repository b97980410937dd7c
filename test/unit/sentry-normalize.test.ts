import { deflateSync, gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { parseEnvelope, type Envelope } from '../../src/ingest/sentry/envelope.js';
import { normalizeEnvelope, normalizeStoreEvent, type NormalizedRecords } from '../../src/ingest/sentry/normalize.js';
import { AppError } from '../../src/shared/errors.js';
import { recordKinds, recordSchemas } from '../../src/shared/telemetry/records.js';

// Payloads below are what @sentry/node 11.12 put on the wire (captured from a local server, trimmed of
// context noise), and what @sentry/browser builds for replays and feedback (sentry-javascript sources).

type Json = Record<string, unknown>;

const NOW = 1_795_311_400_000;
const TRACE_ID = '16e8fe622b5e44209127b467514895c3';
const ROOT_SPAN = '91d0c0de55bed4b5';
const DB_SPAN = '95f26ab3de95f5dc';
const FETCH_SPAN = 'acb68466f6c367cb';
const EVENT_ID = '93d71c339fac45478f224c77f866b37f';
const REPLAY_ID = 'c4a0a3bb0e8c4d0ba3d1b4c7e0f5a6b9';
const sdk = { name: 'sentry.javascript.node', version: '11.12.0' };
const dsc = { environment: 'staging', release: 'shop@2.4.1', public_key: 'abc123', trace_id: TRACE_ID };

/** Serialises items as SDKs do (JSON without `length`, bytes with it) and parses them back, as ingest does. */
function envelope(header: Json, ...items: [Json, unknown][]): Envelope {
  const parts: Buffer[] = [Buffer.from(`${JSON.stringify(header)}\n`)];
  for (const [itemHeader, payload] of items) {
    const body = Buffer.isBuffer(payload) ? payload : Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
    const withLength = Buffer.isBuffer(payload) ? { ...itemHeader, length: body.length } : itemHeader;
    parts.push(Buffer.from(`${JSON.stringify(withLength)}\n`), body, Buffer.from('\n'));
  }
  return parseEnvelope(Buffer.concat(parts));
}

const normalize = (env: Envelope, replayCapture = true) => normalizeEnvelope(env, { nowMs: NOW, replayCapture });

/** Every record of every kind passes its schema: what the queue carries is always valid. */
function expectValid(records: NormalizedRecords): void {
  for (const kind of recordKinds) {
    for (const record of records[kind]) expect(recordSchemas[kind].safeParse(record).error).toBeUndefined();
  }
}

function counts(records: NormalizedRecords): Partial<Record<string, number>> {
  return Object.fromEntries(recordKinds.filter((kind) => records[kind].length > 0).map((kind) => [kind, records[kind].length]));
}

const exceptionEvent = {
  exception: {
    values: [
      {
        type: 'TypeError',
        value: "Cannot read properties of undefined (reading 'total')",
        stacktrace: {
          frames: [
            { filename: 'node:internal/modules/run_main', module: 'run_main', function: 'asyncRunEntryPointWithESMLoader', lineno: 117, colno: 5, in_app: false },
            {
              filename: '/srv/shop/app.mjs',
              module: 'app',
              function: 'failInCheckout',
              lineno: 12,
              colno: 74,
              in_app: true,
              pre_context: ['  serverName: \'web-1\','],
              context_line: 'function failInCheckout(orderId) { const order = undefined; return order.total + orderId; }',
              post_context: ['try { failInCheckout(1); } catch (e) { Sentry.captureException(e); }'],
            },
          ],
        },
        mechanism: { type: 'generic', handled: true },
      },
    ],
  },
  event_id: EVENT_ID,
  level: 'error',
  platform: 'node',
  contexts: { trace: { trace_id: TRACE_ID, span_id: 'a20000cb3fb61252' }, runtime: { name: 'node', version: 'v20.20.2' } },
  server_name: 'web-1',
  timestamp: 1795311375.459,
  environment: 'staging',
  release: 'shop@2.4.1',
  sdk: { ...sdk, integrations: ['Http', 'Express'] },
  breadcrumbs: [{ timestamp: 1795311375.45, category: 'console', level: 'log', message: 'starting checkout' }],
};

const transactionEvent = {
  contexts: {
    trace: {
      span_id: ROOT_SPAN,
      trace_id: TRACE_ID,
      data: {
        'sentry.origin': 'manual',
        'sentry.op': 'http.server',
        'sentry.segment.name.source': 'custom',
        'sentry.sample_rate': 1,
        'http.request.method': 'GET',
        'http.response.status_code': 503,
      },
      op: 'http.server',
      status: 'ok',
      origin: 'manual',
    },
    runtime: { name: 'node', version: 'v20.20.2' },
    response: { status_code: 503 },
  },
  spans: [
    {
      data: { 'sentry.origin': 'manual', 'sentry.op': 'db', 'db.system': 'postgresql' },
      description: 'SELECT * FROM carts WHERE id = ?',
      op: 'db',
      parent_span_id: ROOT_SPAN,
      span_id: DB_SPAN,
      start_timestamp: 1795311375.4742317,
      status: 'ok',
      timestamp: 1795311375.4824903,
      trace_id: TRACE_ID,
      origin: 'manual',
    },
    {
      data: { 'sentry.origin': 'manual', 'sentry.op': 'http.client' },
      description: 'GET https://api.example.com/v1/x',
      op: 'http.client',
      parent_span_id: ROOT_SPAN,
      span_id: FETCH_SPAN,
      start_timestamp: 1795311375.4829297,
      status: 'deadline_exceeded',
      timestamp: 1795311375.486064,
      trace_id: TRACE_ID,
      origin: 'manual',
    },
  ],
  start_timestamp: 1795311375.4729311,
  timestamp: 1795311375.4883783,
  transaction: 'GET /cart',
  type: 'transaction',
  transaction_info: { source: 'custom' },
  platform: 'node',
  server_name: 'web-1',
  event_id: '534aee6111e145948b0606a3d8c0e2f5',
  environment: 'staging',
  release: 'shop@2.4.1',
  sdk,
};

/** The db span both the transaction and the span v2 container describe: the two forms read alike. */
const dbSpanFields = {
  traceId: TRACE_ID,
  spanId: DB_SPAN,
  parentSpanId: ROOT_SPAN,
  name: 'SELECT * FROM carts WHERE id = ?',
  kind: 'client',
  category: 'db',
  status: 'ok',
  isSegment: false,
  service: 'shop',
  serviceVersion: '2.4.1',
  release: 'shop@2.4.1',
  environment: 'staging',
  db: { system: 'postgresql', statement: 'SELECT * FROM carts WHERE id = ?' },
};

const str = (value: string) => ({ value, type: 'string' });
const streamedCommon = {
  'sentry.origin': str('manual'),
  'sentry.trace_lifecycle': str('stream'),
  'sentry.segment.name': str('GET /cart'),
  'sentry.segment.id': str(ROOT_SPAN),
  'sentry.sdk.name': str('sentry.javascript.node'),
  'sentry.sdk.version': str('11.12.0'),
  'sentry.release': str('shop@2.4.1'),
  'sentry.environment': str('staging'),
  'sentry.is_localhost': { value: false, type: 'boolean' },
};
const spanContainer = {
  version: 2,
  items: [
    {
      name: 'SELECT * FROM carts WHERE id = ?',
      span_id: DB_SPAN,
      trace_id: TRACE_ID,
      parent_span_id: ROOT_SPAN,
      start_timestamp: 1795311378.743654,
      end_timestamp: 1795311378.7602797,
      is_segment: false,
      status: 'ok',
      attributes: { ...streamedCommon, 'sentry.op': str('db'), 'db.system': str('postgresql') },
    },
    {
      name: 'GET /cart',
      span_id: ROOT_SPAN,
      trace_id: TRACE_ID,
      start_timestamp: 1795311378.7424462,
      end_timestamp: 1795311378.7694554,
      is_segment: true,
      status: 'ok',
      attributes: {
        ...streamedCommon,
        'sentry.op': str('http.server'),
        'sentry.sample_rate': { value: 1, type: 'integer' },
        'http.request.method': str('GET'),
        'http.response.status_code': { value: 503, type: 'integer' },
        'sentry.sdk.integrations': { value: ['Http', 'Express', 'SpanStreaming'], type: 'array' },
        'device.memory_size': { value: 25276514304, type: 'integer' },
      },
    },
  ],
};
const spanHeader = { type: 'span', item_count: 2, content_type: 'application/vnd.sentry.items.span.v2+json' };

const logContainer = {
  version: 2,
  items: [
    {
      timestamp: 1795311375.4870815,
      level: 'info',
      body: 'cart c-77 loaded with 3 items',
      trace_id: TRACE_ID,
      severity_number: 9,
      attributes: {
        'sentry.release': str('shop@2.4.1'),
        'sentry.environment': str('staging'),
        'sentry.sdk.name': str('sentry.javascript.node'),
        'sentry.sdk.version': str('11.12.0'),
        'sentry.message.template': str('cart %s loaded with %s items'),
        'sentry.message.parameter.0': str('c-77'),
        'sentry.message.parameter.1': { value: 3, type: 'integer' },
        'sentry.trace.parent_span_id': str(ROOT_SPAN),
        'server.address': str('web-1'),
        'sentry.timestamp.sequence': { value: 0, type: 'integer' },
      },
    },
    {
      timestamp: 1795311375.4882212,
      level: 'warn',
      body: 'inventory low for sku-9',
      trace_id: TRACE_ID,
      severity_number: 13,
      attributes: { 'sentry.release': str('shop@2.4.1'), 'sentry.environment': str('staging'), 'server.address': str('web-1') },
    },
  ],
};
const logHeader = { type: 'log', item_count: 2, content_type: 'application/vnd.sentry.items.log+json' };

const metricAttributes = {
  'server.address': str('web-1'),
  'sentry.release': str('shop@2.4.1'),
  'sentry.environment': str('staging'),
  'sentry.sdk.name': str('sentry.javascript.node'),
  'sentry.sdk.version': str('11.12.0'),
};
const metricContainer = {
  version: 2,
  items: [
    { timestamp: 1795311375.48912, trace_id: TRACE_ID, name: 'cart.loaded', type: 'counter', value: 1, attributes: { ...metricAttributes, shop: str('eu') } },
    { timestamp: 1795311375.4895618, trace_id: TRACE_ID, name: 'queue.depth', type: 'gauge', unit: 'none', value: 17, attributes: metricAttributes },
    { timestamp: 1795311375.4897754, trace_id: TRACE_ID, name: 'checkout.duration', type: 'distribution', unit: 'millisecond', value: 123.4, attributes: metricAttributes },
  ],
};
const metricHeader = { type: 'trace_metric', item_count: 3, content_type: 'application/vnd.sentry.items.trace-metric+json' };

const CHECK_IN_ID = '6d49bd0d5bee480380e752d7b0e0c22c';
const checkInStart = {
  check_in_id: CHECK_IN_ID,
  monitor_slug: 'nightly-report',
  status: 'in_progress',
  release: 'shop@2.4.1',
  environment: 'staging',
  monitor_config: { schedule: { type: 'crontab', value: '0 3 * * *' }, checkin_margin: 5, max_runtime: 30, timezone: 'Europe/Berlin' },
  contexts: { trace: { trace_id: TRACE_ID, span_id: 'a088119ce492b98b' } },
};
const checkInEnd = {
  check_in_id: CHECK_IN_ID,
  monitor_slug: 'nightly-report',
  status: 'ok',
  release: 'shop@2.4.1',
  environment: 'staging',
  duration: 12.5,
  contexts: { trace: { trace_id: TRACE_ID, span_id: '8ff3a27051f79e3d' } },
};

const session = (fields: Json) => ({
  sid: 'ee245f3dd7384d80b796ff107d963fac',
  init: true,
  started: '2026-11-22T01:36:39.644Z',
  timestamp: '2026-11-22T01:36:39.664Z',
  status: 'ok',
  errors: 0,
  duration: 0.02,
  attrs: { release: 'shop@2.4.1', environment: 'staging' },
  ...fields,
});
const SESSION_STARTED_MS = Date.parse('2026-11-22T01:36:39.644Z');

const FEEDBACK_ID = 'bb3594388b0e44ff82ad238cd3f1e45e';
const ASSOCIATED_ID = '7d7f1b98908342ffbf2e8a61c6d3488c';
const feedbackEvent = {
  contexts: {
    trace: { trace_id: 'a9b53aa972ed44b7bb68301d945a58e4', span_id: '86e50f0ead21b5ce' },
    feedback: {
      contact_email: 'ada@example.com',
      name: 'Ada',
      message: 'The checkout button does nothing',
      url: 'https://shop.example.com/cart',
      associated_event_id: ASSOCIATED_ID,
    },
  },
  type: 'feedback',
  level: 'info',
  platform: 'node',
  event_id: FEEDBACK_ID,
  timestamp: 1795311399.651,
  environment: 'staging',
  release: 'shop@2.4.1',
  sdk,
};

// @sentry/browser's replay: `createEventEnvelopeHeaders` puts the replay id in the envelope's event_id.
const replayEvent = {
  type: 'replay_event',
  replay_start_timestamp: 1795311300.125,
  timestamp: 1795311360.5,
  error_ids: [EVENT_ID],
  trace_ids: [TRACE_ID],
  urls: ['https://shop.example.com/cart', 'https://shop.example.com/checkout'],
  replay_id: REPLAY_ID,
  segment_id: 3,
  replay_type: 'session',
  platform: 'javascript',
  event_id: REPLAY_ID,
  environment: 'production',
  release: 'web@5.0.0',
  user: { id: 42, email: 'ada@example.com', username: 'ada', ip_address: '203.0.113.7' },
  request: { url: 'https://shop.example.com/checkout', headers: { 'User-Agent': 'Mozilla/5.0' } },
  sdk: { name: 'sentry.javascript.browser', version: '11.12.0', integrations: ['BrowserTracing', 'Replay'] },
  contexts: {},
};
const rrwebEvents = JSON.stringify([{ type: 4, data: { href: 'https://shop.example.com/cart', width: 1280, height: 720 }, timestamp: 1795311300125 }]);
const recordingOf = (segmentId: number, events: Buffer) => Buffer.concat([Buffer.from(`${JSON.stringify({ segment_id: segmentId })}\n`), events]);
const browserSdk = { name: 'sentry.javascript.browser', version: '11.12.0' };

describe('normalizeEnvelope: events', () => {
  it('keeps an error event whole and settles its id and time', async () => {
    const { records, eventId, dropped } = await normalize(envelope({ event_id: EVENT_ID, sdk, trace: dsc }, [{ type: 'event' }, exceptionEvent]));
    expect(records.errors).toEqual([{ eventId: EVENT_ID, timeMs: 1795311375459, event: exceptionEvent }]);
    expect(eventId).toBe(EVENT_ID);
    expect(dropped).toBe(0);
    expect(counts(records)).toEqual({ errors: 1 });
    expectValid(records);
  });

  it('reads hyphenated uppercase UUIDs and RFC 3339 timestamps', async () => {
    const event = { ...exceptionEvent, event_id: '93D71C33-9FAC-4547-8F22-4C77F866B37F', timestamp: '2026-11-22T01:36:15.459Z' };
    const { records } = await normalize(envelope({}, [{ type: 'event' }, event]));
    expect(records.errors[0]).toMatchObject({ eventId: EVENT_ID, timeMs: Date.parse('2026-11-22T01:36:15.459Z') });
  });

  it('falls back to the envelope id, then a random one, and to the receive time', async () => {
    const { event_id: _id, timestamp: _time, ...bare } = exceptionEvent;
    const fromHeader = await normalize(envelope({ event_id: EVENT_ID }, [{ type: 'event' }, bare]));
    expect(fromHeader.records.errors[0]).toMatchObject({ eventId: EVENT_ID, timeMs: NOW });

    const generated = await normalize(envelope({}, [{ type: 'event' }, { ...bare, event_id: 'not-an-id', timestamp: 'yesterday' }]));
    expect(generated.records.errors[0]!.eventId).toMatch(/^[0-9a-f]{32}$/);
    expect(generated.records.errors[0]!.timeMs).toBe(NOW);
    // Relay answers with the envelope's id; without one, the first event's id is the useful answer.
    expect(generated.eventId).toBe(generated.records.errors[0]!.eventId);
  });

  it('drops an event over 1 MiB and counts it', async () => {
    const huge = { ...exceptionEvent, extra: { blob: 'x'.repeat(1024 * 1024) } };
    const { records, dropped } = await normalize(envelope({ event_id: EVENT_ID }, [{ type: 'event' }, huge], [{ type: 'event' }, exceptionEvent]));
    expect(records.errors).toHaveLength(1);
    expect(dropped).toBe(1);
  });

  it('sends an event item that says it is a transaction to spans', async () => {
    const { records } = await normalize(envelope({}, [{ type: 'event' }, transactionEvent]));
    expect(counts(records)).toEqual({ spans: 3 });
  });
});

describe('normalizeEnvelope: transactions', () => {
  it('turns the transaction into its segment span and each child span', async () => {
    const header = { event_id: transactionEvent.event_id, sdk, trace: { ...dsc, transaction: 'GET /cart', sampled: 'true' } };
    const { records, eventId, dropped } = await normalize(envelope(header, [{ type: 'transaction' }, transactionEvent]));
    expect(eventId).toBe('534aee6111e145948b0606a3d8c0e2f5');
    expect(dropped).toBe(0);
    expectValid(records);
    const [segment, db, fetch] = records.spans;

    expect(segment).toEqual({
      traceId: TRACE_ID,
      spanId: ROOT_SPAN,
      parentSpanId: null,
      name: 'GET /cart',
      kind: 'server',
      service: 'shop',
      serviceVersion: '2.4.1',
      environment: 'staging',
      release: 'shop@2.4.1',
      startMs: 1795311375472.9312,
      endMs: 1795311375488.3782,
      durationMs: expect.closeTo(15.447, 3),
      // The SDK left the status at ok, but a server answering 503 failed.
      status: 'error',
      // The data holds primitives only, so the attributes are the data as sent.
      attributes: transactionEvent.contexts.trace.data,
      events: [],
      links: [],
      http: { method: 'GET', route: undefined, statusCode: 503, path: '/cart' },
      isSegment: true,
      category: 'http',
      source: 'sentry',
    });

    expect(db).toMatchObject({
      ...dbSpanFields,
      startMs: 1795311375474.2317,
      attributes: { 'db.system': 'postgresql', 'sentry.op': 'db', 'sentry.segment.name': 'GET /cart', 'sentry.segment.id': ROOT_SPAN },
    });
    expect(fetch).toMatchObject({
      kind: 'client',
      category: 'http',
      status: 'error',
      statusMessage: 'deadline_exceeded',
      http: { method: 'GET', path: '/v1/x' },
    });
  });

  it.each([
    ['ok', 'ok'],
    ['cancelled', 'ok'],
    [undefined, 'unset'],
    ['internal_error', 'error'],
    ['unknown_error', 'error'],
    ['not_found', 'error'],
    ['resource_exhausted', 'error'],
  ])('maps span status %p to %p', async (sentryStatus, status) => {
    const child = { ...transactionEvent.spans[0], status: sentryStatus };
    const { records } = await normalize(envelope({}, [{ type: 'transaction' }, { ...transactionEvent, spans: [child] }]));
    expect(records.spans[1]).toMatchObject({ status, statusMessage: status === 'error' ? sentryStatus : undefined });
  });

  it('lets a server span\'s HTTP status decide, as OTel conventions do', async () => {
    const serverSpan = (code: number, status: string) => ({
      ...transactionEvent,
      contexts: { trace: { ...transactionEvent.contexts.trace, status, data: { 'http.request.method': 'GET', 'http.response.status_code': code } } },
      spans: [],
    });
    const notFound = await normalize(envelope({}, [{ type: 'transaction' }, serverSpan(404, 'not_found')]));
    expect(notFound.records.spans[0]).toMatchObject({ status: 'ok', statusMessage: undefined });
    const unavailable = await normalize(envelope({}, [{ type: 'transaction' }, serverSpan(503, 'unavailable')]));
    expect(unavailable.records.spans[0]).toMatchObject({ status: 'error', statusMessage: 'unavailable' });
  });

  it.each([
    ['http.server', 'server', 'http'],
    ['http.client', 'client', 'http'],
    ['http.client.stream', 'client', 'http'],
    ['db', 'client', 'db'],
    ['db.sql.query', 'client', 'db'],
    ['cache.get', 'client', 'db'],
    ['queue.publish', 'producer', 'messaging'],
    ['queue.create', 'producer', 'messaging'],
    ['queue.receive', 'consumer', 'messaging'],
    ['queue.process', 'consumer', 'messaging'],
    ['queue.task.celery', 'consumer', 'messaging'],
    ['grpc.client', 'client', 'other'],
    ['ui.react.render', 'internal', 'other'],
    ['function', 'internal', 'other'],
  ])('maps op %p to kind %p and category %p', async (op, kind, category) => {
    const child = { span_id: DB_SPAN, parent_span_id: ROOT_SPAN, op, description: 'work', start_timestamp: 1795311375.48, timestamp: 1795311375.481, status: 'ok' };
    const { records } = await normalize(envelope({}, [{ type: 'transaction' }, { ...transactionEvent, spans: [child] }]));
    expect(records.spans[1]).toMatchObject({ kind, category, traceId: TRACE_ID, attributes: { 'sentry.op': op } });
  });

  it('reads messaging and peer fields with the OTel convention names', async () => {
    const child = {
      span_id: DB_SPAN,
      op: 'queue.publish',
      description: 'orders',
      start_timestamp: 1795311375.48,
      timestamp: 1795311375.481,
      data: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation': 'publish', 'peer.service': 'billing' },
      tags: { queue: 'orders' },
    };
    const { records } = await normalize(envelope({}, [{ type: 'transaction' }, { ...transactionEvent, spans: [child] }]));
    // A child that names no parent hangs under the transaction.
    expect(records.spans[1]).toMatchObject({
      parentSpanId: ROOT_SPAN,
      messaging: { system: 'rabbitmq', destination: 'orders', operation: 'publish' },
      peerService: 'billing',
      attributes: { queue: 'orders' },
    });
  });

  it('takes the service from service.name when the SDK sets one, else unknown_service without a package release', async () => {
    const named = {
      ...transactionEvent,
      contexts: { trace: { ...transactionEvent.contexts.trace, data: { 'service.name': 'cart-api', 'service.version': '9' } } },
    };
    const { records } = await normalize(envelope({}, [{ type: 'transaction' }, named]));
    expect(records.spans.map((span) => [span.service, span.serviceVersion])).toEqual([
      ['cart-api', '9'],
      ['cart-api', '9'],
      ['cart-api', '9'],
    ]);

    const unnamed = await normalize(envelope({}, [{ type: 'transaction' }, { ...transactionEvent, release: '3f2a91c' }]));
    expect(unnamed.records.spans[0]).toMatchObject({ service: 'unknown_service', serviceVersion: undefined, release: '3f2a91c' });
  });

  it('drops a transaction without a valid trace context with its spans, and single spans without an end', async () => {
    const broken = { ...transactionEvent, contexts: { trace: { ...transactionEvent.contexts.trace, trace_id: 'xyz' } } };
    const brokenResult = await normalize(envelope({}, [{ type: 'transaction' }, broken]));
    expect(brokenResult.records.spans).toEqual([]);
    expect(brokenResult.dropped).toBe(3);

    const { timestamp: _end, ...unfinished } = transactionEvent.spans[0]!;
    const partial = await normalize(envelope({}, [{ type: 'transaction' }, { ...transactionEvent, spans: [unfinished, transactionEvent.spans[1], 'junk'] }]));
    expect(partial.records.spans.map((span) => span.spanId)).toEqual([ROOT_SPAN, FETCH_SPAN]);
    expect(partial.dropped).toBe(2);
  });
});

describe('normalizeEnvelope: span items', () => {
  it('unwraps v2 span attributes and reads op, segment, release and environment from them', async () => {
    const { records, dropped } = await normalize(envelope({ sdk, trace: dsc }, [spanHeader, spanContainer]));
    expect(dropped).toBe(0);
    expectValid(records);
    const [db, segment] = records.spans;
    expect(db).toMatchObject({
      ...dbSpanFields,
      startMs: expect.closeTo(1795311378743.654, 3),
      endMs: expect.closeTo(1795311378760.2797, 3),
      attributes: { 'sentry.op': 'db', 'sentry.segment.name': 'GET /cart', 'sentry.is_localhost': false },
    });
    expect(segment).toMatchObject({
      parentSpanId: null,
      isSegment: true,
      kind: 'server',
      status: 'error',
      http: { method: 'GET', statusCode: 503, path: '/cart' },
      attributes: {
        'sentry.sample_rate': 1,
        'sentry.sdk.integrations': ['Http', 'Express', 'SpanStreaming'],
        'device.memory_size': 25276514304,
      },
    });
  });

  it('keeps links and the status message, and drops invalid spans of a container alone', async () => {
    const linked = {
      ...spanContainer.items[0],
      status: 'error',
      attributes: { ...spanContainer.items[0]!.attributes, 'sentry.status.message': str('connection reset') },
      links: [
        { trace_id: 'a9b53aa972ed44b7bb68301d945a58e4', span_id: '86e50f0ead21b5ce', sampled: true, attributes: { 'sentry.link.type': str('previous_trace') } },
        { trace_id: 'nope', span_id: '86e50f0ead21b5ce' },
      ],
    };
    const invalid = { ...spanContainer.items[1], span_id: '0000000000000000' };
    const { records, dropped } = await normalize(envelope({}, [spanHeader, { version: 2, items: [linked, invalid, 7] }]));
    expect(dropped).toBe(2);
    expect(records.spans).toHaveLength(1);
    expect(records.spans[0]).toMatchObject({
      status: 'error',
      statusMessage: 'connection reset',
      links: [{ traceId: 'a9b53aa972ed44b7bb68301d945a58e4', spanId: '86e50f0ead21b5ce', attributes: { 'sentry.link.type': 'previous_trace' } }],
    });
  });

  it('reads a standalone v1 span (browser web vitals) that is not a container', async () => {
    const inp = {
      data: { 'sentry.origin': 'auto.http.browser.inp', 'sentry.op': 'ui.interaction.click', 'sentry.exclusive_time': 120, transaction: '/checkout' },
      description: 'body > button.pay',
      op: 'ui.interaction.click',
      span_id: 'b1c2d3e4f5a6b7c8',
      trace_id: TRACE_ID,
      start_timestamp: 1795311375.1,
      timestamp: 1795311375.22,
      is_segment: true,
      segment_id: 'b1c2d3e4f5a6b7c8',
    };
    const { records } = await normalize(envelope({ trace: { ...dsc, release: 'web@5.0.0' } }, [{ type: 'span' }, inp]));
    expect(records.spans).toEqual([
      expect.objectContaining({
        spanId: 'b1c2d3e4f5a6b7c8',
        name: 'body > button.pay',
        kind: 'internal',
        category: 'other',
        isSegment: true,
        durationMs: expect.closeTo(120, 3),
        service: 'web',
        release: 'web@5.0.0',
        environment: 'staging',
      }),
    ]);
  });
});

describe('normalizeEnvelope: logs and trace metrics', () => {
  it('maps each log of a container', async () => {
    const { records } = await normalize(envelope({ sdk }, [logHeader, logContainer]));
    expectValid(records);
    expect(records.logs[0]).toEqual({
      timeMs: 1795311375487.0815,
      severityNumber: 9,
      level: 'info',
      body: 'cart c-77 loaded with 3 items',
      attributes: {
        'sentry.release': 'shop@2.4.1',
        'sentry.environment': 'staging',
        'sentry.sdk.name': 'sentry.javascript.node',
        'sentry.sdk.version': '11.12.0',
        'sentry.message.template': 'cart %s loaded with %s items',
        'sentry.message.parameter.0': 'c-77',
        'sentry.message.parameter.1': 3,
        'sentry.trace.parent_span_id': ROOT_SPAN,
        'server.address': 'web-1',
        'sentry.timestamp.sequence': 0,
      },
      traceId: TRACE_ID,
      // The JS SDK names the active span only in an attribute.
      spanId: ROOT_SPAN,
      service: 'shop',
      environment: 'staging',
      release: 'shop@2.4.1',
      template: 'cart %s loaded with %s items',
      source: 'sentry',
    });
    expect(records.logs[1]).toMatchObject({ level: 'warn', severityNumber: 13, body: 'inventory low for sku-9', template: undefined, spanId: undefined });
  });

  it('derives severity from the level, stringifies structured bodies and drops logs with bad ids', async () => {
    const logs = [
      { timestamp: 1795311375.5, level: 'fatal', body: { order: 7, items: ['a'] }, trace_id: TRACE_ID },
      { timestamp: 1795311375.5, level: 'constructor', body: 'odd level' },
      { timestamp: 1795311375.5, level: 'info', body: 'bad trace', trace_id: 'zz' },
    ];
    const { records, dropped } = await normalize(envelope({}, [logHeader, { items: logs }]));
    expect(dropped).toBe(1);
    expect(records.logs).toMatchObject([
      { level: 'fatal', severityNumber: 21, body: '{"order":7,"items":["a"]}', service: 'unknown_service' },
      { level: 'info', severityNumber: 9, body: 'odd level', traceId: undefined },
    ]);
  });

  it('maps counters, gauges and distributions', async () => {
    const { records, dropped } = await normalize(envelope({ sdk }, [metricHeader, metricContainer]));
    expect(dropped).toBe(0);
    expectValid(records);
    const base = { service: 'shop', environment: 'staging', release: 'shop@2.4.1', source: 'sentry' };
    expect(records.metrics).toEqual([
      { ...base, name: 'cart.loaded', type: 'counter', temporality: 'delta', value: 1, timeMs: 1795311375489.12, unit: undefined, attributes: expect.objectContaining({ shop: 'eu', 'server.address': 'web-1' }) },
      { ...base, name: 'queue.depth', type: 'gauge', value: 17, unit: 'none', timeMs: 1795311375489.5618, attributes: expect.any(Object) },
      {
        ...base,
        name: 'checkout.duration',
        type: 'distribution',
        unit: 'millisecond',
        value: 123.4,
        count: 1,
        sum: 123.4,
        min: 123.4,
        max: 123.4,
        timeMs: 1795311375489.7754,
        attributes: expect.any(Object),
      },
    ]);
  });

  it('drops metrics without a name, a finite value or a known type', async () => {
    const items = [
      { name: '', type: 'counter', value: 1 },
      { name: 'x', type: 'set', value: 1 },
      { name: 'x', type: 'gauge', value: '3' },
      { name: 'x', type: 'gauge', value: 3 },
    ];
    const { records, dropped } = await normalize(envelope({}, [metricHeader, { items }]));
    expect(dropped).toBe(3);
    expect(records.metrics).toMatchObject([{ name: 'x', type: 'gauge', value: 3, timeMs: NOW }]);
  });
});

describe('normalizeEnvelope: check-ins, sessions, feedback', () => {
  it('maps a check-in pair, keeping the monitor config', async () => {
    const start = await normalize(envelope({ sdk, trace: dsc }, [{ type: 'check_in' }, checkInStart]));
    const end = await normalize(envelope({ sdk, trace: dsc }, [{ type: 'check_in' }, { ...checkInEnd, check_in_id: '6D49BD0D-5BEE-4803-80E7-52D7B0E0C22C' }]));
    expectValid(start.records);
    expect(start.records.checkins).toEqual([
      { checkInId: CHECK_IN_ID, monitorSlug: 'nightly-report', status: 'in_progress', durationMs: undefined, environment: 'staging', monitorConfig: checkInStart.monitor_config, timeMs: NOW },
    ]);
    expect(end.records.checkins).toEqual([
      { checkInId: CHECK_IN_ID, monitorSlug: 'nightly-report', status: 'ok', durationMs: 12500, environment: 'staging', monitorConfig: undefined, timeMs: NOW },
    ]);
  });

  it('drops check-ins with a missed or unknown status, no slug or no id, and cuts long slugs', async () => {
    const { records, dropped } = await normalize(
      envelope(
        {},
        [{ type: 'check_in' }, { ...checkInEnd, status: 'missed' }],
        [{ type: 'check_in' }, { ...checkInEnd, monitor_slug: '' }],
        [{ type: 'check_in' }, { ...checkInEnd, check_in_id: undefined }],
        [{ type: 'check_in' }, { ...checkInEnd, monitor_slug: 'm'.repeat(300) }],
      ),
    );
    expect(dropped).toBe(3);
    expect(records.checkins.map((checkIn) => checkIn.monitorSlug)).toEqual(['m'.repeat(128)]);
  });

  it('counts a session as started on init and in one outcome at its end', async () => {
    const updates = [
      session({ init: true, status: 'ok' }),
      session({ init: false, status: 'exited', errors: 0 }),
      session({ init: false, status: 'exited', errors: 2 }),
      session({ init: true, status: 'crashed', errors: 1 }),
      session({ init: false, status: 'abnormal' }),
      session({ init: false, status: 'errored' }),
      // An update that changes no count is not kept.
      session({ init: false, status: 'ok', errors: 3 }),
    ];
    const { records, dropped } = await normalize(envelope({ sdk }, ...updates.map((update): [Json, unknown] => [{ type: 'session' }, update])));
    expect(dropped).toBe(0);
    expectValid(records);
    const base = { release: 'shop@2.4.1', environment: 'staging', startedMs: SESSION_STARTED_MS };
    expect(records.sessions).toEqual([
      { ...base, started: 1, exited: 0, errored: 0, crashed: 0, abnormal: 0 },
      { ...base, started: 0, exited: 1, errored: 0, crashed: 0, abnormal: 0 },
      { ...base, started: 0, exited: 0, errored: 1, crashed: 0, abnormal: 0 },
      { ...base, started: 1, exited: 0, errored: 0, crashed: 1, abnormal: 0 },
      { ...base, started: 0, exited: 0, errored: 0, crashed: 0, abnormal: 1 },
      { ...base, started: 0, exited: 0, errored: 1, crashed: 0, abnormal: 0 },
    ]);
  });

  it('drops sessions without a release or start', async () => {
    const { records, dropped } = await normalize(
      envelope({}, [{ type: 'session' }, session({ attrs: { environment: 'staging' } })], [{ type: 'session' }, session({ started: 'soon' })]),
    );
    expect(records.sessions).toEqual([]);
    expect(dropped).toBe(2);
  });

  it('turns each aggregate bucket into one record whose outcomes add up to the sessions started', async () => {
    const aggregates = {
      attrs: { release: 'api@1.0.0', environment: 'production' },
      aggregates: [
        { started: '2026-11-22T01:36:00.000Z', exited: 12, errored: 2, crashed: 1 },
        { started: '2026-11-22T01:37:00.000Z', exited: 4, abnormal: 1 },
        { started: '2026-11-22T01:38:00.000Z', exited: -1 },
      ],
    };
    const { records, dropped } = await normalize(envelope({ sdk }, [{ type: 'sessions' }, aggregates]));
    expect(dropped).toBe(1);
    expectValid(records);
    expect(records.sessions).toEqual([
      { release: 'api@1.0.0', environment: 'production', startedMs: Date.parse('2026-11-22T01:36:00.000Z'), started: 15, exited: 12, errored: 2, crashed: 1, abnormal: 0 },
      { release: 'api@1.0.0', environment: 'production', startedMs: Date.parse('2026-11-22T01:37:00.000Z'), started: 5, exited: 4, errored: 0, crashed: 0, abnormal: 1 },
    ]);
  });

  it('maps feedback, linking the event and replay it is about', async () => {
    const withReplay = { ...feedbackEvent, contexts: { ...feedbackEvent.contexts, feedback: { ...feedbackEvent.contexts.feedback, source: 'widget', replay_id: REPLAY_ID } } };
    const { records, eventId } = await normalize(envelope({ event_id: FEEDBACK_ID, sdk, trace: dsc }, [{ type: 'feedback' }, withReplay]));
    expectValid(records);
    expect(eventId).toBe(FEEDBACK_ID);
    expect(records.feedback).toEqual([
      {
        feedbackId: FEEDBACK_ID,
        message: 'The checkout button does nothing',
        contactEmail: 'ada@example.com',
        name: 'Ada',
        url: 'https://shop.example.com/cart',
        associatedEventId: ASSOCIATED_ID,
        replayId: REPLAY_ID,
        environment: 'staging',
        release: 'shop@2.4.1',
        source: 'feedback',
        timeMs: 1795311399651,
      },
    ]);
  });

  it('cuts long messages, leaves out over-long optional fields and drops empty feedback', async () => {
    const long = { ...feedbackEvent, contexts: { feedback: { message: 'é'.repeat(5000), contact_email: `${'a'.repeat(260)}@example.com` } } };
    const empty = { ...feedbackEvent, contexts: { feedback: { message: '' } } };
    const { records, dropped } = await normalize(envelope({}, [{ type: 'feedback' }, long], [{ type: 'feedback' }, empty]));
    expect(dropped).toBe(1);
    expect(records.feedback[0]!.message).toHaveLength(4096);
    expect(records.feedback[0]!.contactEmail).toBeUndefined();
  });

  it('maps a legacy user report onto feedback about its event', async () => {
    const report = { event_id: ASSOCIATED_ID, email: 'ada@example.com', name: 'Ada', comments: 'It crashed when I paid' };
    const { records, dropped } = await normalize(envelope({ trace: dsc }, [{ type: 'user_report' }, report], [{ type: 'user_report' }, { ...report, comments: '' }]));
    expect(dropped).toBe(1);
    expectValid(records);
    expect(records.feedback).toEqual([
      {
        feedbackId: expect.stringMatching(/^[0-9a-f]{32}$/),
        message: 'It crashed when I paid',
        contactEmail: 'ada@example.com',
        name: 'Ada',
        associatedEventId: ASSOCIATED_ID,
        environment: 'staging',
        release: 'shop@2.4.1',
        source: 'user_report',
        timeMs: NOW,
      },
    ]);
    // The same report sent again gets the same id, so it is stored once; another comment gets another.
    const again = await normalize(envelope({ trace: dsc }, [{ type: 'user_report' }, report], [{ type: 'user_report' }, { ...report, comments: 'And again' }]));
    expect(again.records.feedback[0]!.feedbackId).toBe(records.feedback[0]!.feedbackId);
    expect(again.records.feedback[1]!.feedbackId).not.toBe(records.feedback[0]!.feedbackId);
  });
});

describe('normalizeEnvelope: replays', () => {
  const replayEnvelope = (recording: Buffer) =>
    envelope({ event_id: REPLAY_ID, sent_at: '2026-11-22T01:36:00.600Z', sdk: browserSdk }, [{ type: 'replay_event' }, replayEvent], [{ type: 'replay_recording' }, recording]);

  it('maps the replay event and keeps the gzip recording as it came', async () => {
    const compressed = gzipSync(rrwebEvents);
    const { records, eventId, dropped } = await normalize(replayEnvelope(recordingOf(3, compressed)));
    expect(dropped).toBe(0);
    expect(eventId).toBe(REPLAY_ID);
    expectValid(records);
    expect(records.replay_events).toEqual([
      {
        replayId: REPLAY_ID,
        segmentId: 3,
        replayType: 'session',
        startMs: 1795311300125,
        timeMs: 1795311360500,
        urls: ['https://shop.example.com/cart', 'https://shop.example.com/checkout'],
        traceIds: [TRACE_ID],
        errorIds: [EVENT_ID],
        user: { id: '42', email: 'ada@example.com', username: 'ada', ipAddress: '203.0.113.7' },
        release: 'web@5.0.0',
        environment: 'production',
      },
    ]);
    expect(records.replay_recordings).toEqual([{ replayId: REPLAY_ID, segmentId: 3, payloadBase64: compressed.toString('base64'), timeMs: NOW }]);
  });

  it('accepts zlib and plain rrweb JSON', async () => {
    for (const events of [deflateSync(rrwebEvents), Buffer.from(rrwebEvents)]) {
      const { records } = await normalize(replayEnvelope(recordingOf(0, events)));
      expect(records.replay_recordings.map((recording) => Buffer.from(recording.payloadBase64, 'base64'))).toEqual([events]);
    }
  });

  it('drops recordings that do not decode, are not rrweb JSON or have no segment header', async () => {
    const corrupt = Buffer.concat([gzipSync(rrwebEvents).subarray(0, 20), Buffer.from('garbage')]);
    const cases = [recordingOf(1, corrupt), recordingOf(1, Buffer.from('{"not":"events"}')), Buffer.from(rrwebEvents), recordingOf(-1, gzipSync(rrwebEvents))];
    for (const recording of cases) {
      const { records, dropped } = await normalize(replayEnvelope(recording));
      expect(records.replay_recordings).toEqual([]);
      expect(dropped).toBe(1);
    }
  });

  it('skips replay items when replay capture is off', async () => {
    const { records, dropped, skipped } = await normalize(replayEnvelope(recordingOf(3, gzipSync(rrwebEvents))), false);
    expect(counts(records)).toEqual({});
    expect({ dropped, skipped }).toEqual({ dropped: 0, skipped: 2 });
  });
});

describe('normalizeEnvelope: skipped and malformed items', () => {
  it('skips client reports, attachments, profiles and unknown types', async () => {
    const clientReport = { timestamp: 1795311400.1, discarded_events: [{ reason: 'ratelimit_backoff', category: 'transaction', quantity: 3 }] };
    const { records, dropped, skipped } = await normalize(
      envelope(
        { event_id: EVENT_ID },
        [{ type: 'event' }, exceptionEvent],
        [{ type: 'attachment', filename: 'core.bin', attachment_type: 'event.attachment' }, Buffer.from([0, 10, 255])],
        [{ type: 'client_report' }, clientReport],
        [{ type: 'profile' }, { version: '1' }],
        [{ type: 'statsd' }, 'cart.loaded:1|c'],
        [{ type: 'something_new' }, {}],
      ),
    );
    expect(counts(records)).toEqual({ errors: 1 });
    expect({ dropped, skipped }).toEqual({ dropped: 0, skipped: 5 });
  });

  it('drops items that are not JSON objects, as Relay does, and keeps the rest', async () => {
    const { records, dropped } = await normalize(
      envelope(
        {},
        [{ type: 'event' }, '{"event_id": '],
        [{ type: 'transaction' }, '[1,2]'],
        [{ type: 'check_in' }, 'null'],
        [logHeader, { items: 'nope' }],
        [{ type: 'event' }, exceptionEvent],
      ),
    );
    expect(counts(records)).toEqual({ errors: 1 });
    expect(dropped).toBe(4);
  });

  it('refuses an envelope whose header event_id is no UUID, as Relay does', async () => {
    await expect(normalize(envelope({ event_id: 'abc' }, [{ type: 'event' }, exceptionEvent]))).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
  });

  it('flattens attribute values without prototype tricks', async () => {
    const data = '{"nested":{"a":{"b":1}},"list":[1,{"x":2}],"huge":1e400,"__proto__":["polluted"]}';
    const child = { ...transactionEvent.spans[0], data: 'DATA' };
    const payload = JSON.stringify({ ...transactionEvent, spans: [child] }).replace('"DATA"', data);
    const { records } = await normalize(envelope({}, [{ type: 'transaction' }, payload]));
    expectValid(records);
    const { attributes } = records.spans[1]!;
    expect(attributes).toMatchObject({ 'nested.a.b': 1, list: [1, '{"x":2}'], huge: 'Infinity' });
    expect(Object.getPrototypeOf(attributes)).toBe(Object.prototype);
  });

  it('drops JSON nested deeper than Relay reads (128 levels), which would exhaust the stack downstream', async () => {
    const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    const event = (depth: number) => JSON.stringify({ ...exceptionEvent, extra: 'EXTRA' }).replace('"EXTRA"', nested(depth));
    const { records, dropped } = await normalize(envelope({}, [{ type: 'event' }, event(126)], [{ type: 'event' }, event(100_000)]));
    expect(records.errors).toHaveLength(1);
    expect(dropped).toBe(1);
    expect(normalizeStoreEvent(JSON.parse(event(100_000)), NOW)).toMatchObject({ records: { errors: [] }, dropped: 1 });
  });
});

describe('normalizeStoreEvent', () => {
  it('maps a legacy store event to an error record', () => {
    const { records, eventId } = normalizeStoreEvent(exceptionEvent, NOW);
    expect(eventId).toBe(EVENT_ID);
    expect(records.errors).toEqual([{ eventId: EVENT_ID, timeMs: 1795311375459, event: exceptionEvent }]);
  });

  it('maps a transaction sent to store to spans, and answers with an id even without one', () => {
    const { event_id: _id, ...anonymous } = transactionEvent;
    const { records, eventId } = normalizeStoreEvent(anonymous, NOW);
    expect(counts(records)).toEqual({ spans: 3 });
    expect(eventId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('normalizeEnvelope on arbitrary input', () => {
  const itemTypes = ['event', 'transaction', 'feedback', 'span', 'log', 'trace_metric', 'check_in', 'session', 'sessions', 'user_report', 'replay_event', 'replay_recording', 'client_report'];
  const keys = [
    'event_id', 'timestamp', 'start_timestamp', 'end_timestamp', 'type', 'items', 'trace_id', 'span_id', 'parent_span_id', 'name', 'op',
    'description', 'status', 'is_segment', 'attributes', 'data', 'tags', 'links', 'spans', 'contexts', 'trace', 'feedback', 'message',
    'level', 'body', 'severity_number', 'value', 'unit', 'check_in_id', 'monitor_slug', 'duration', 'monitor_config', 'init', 'started',
    'errors', 'attrs', 'release', 'environment', 'aggregates', 'exited', 'crashed', 'comments', 'replay_id', 'segment_id', 'urls', 'user',
    'transaction', '__proto__', 'constructor',
  ];
  const idLike = fc.oneof(
    fc.constantFrom(TRACE_ID, ROOT_SPAN, '0000000000000000', '93D71C33-9FAC-4547-8F22-4C77F866B37F', ''),
    fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF-') }),
  );
  const leaf = fc.oneof(fc.jsonValue({ maxDepth: 2 }), idLike, fc.double(), fc.constantFrom('ok', 'error', 'exited', 'crashed', 'counter', 'gauge', 'distribution', 'http.server', 'db', 'in_progress'));
  const { node } = fc.letrec<{ node: Json }>((tie) => ({
    node: fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string()), fc.oneof({ depthSize: 'small' }, leaf, tie('node'), fc.array(tie('node'), { maxLength: 3 })), {
      maxKeys: 8,
    }),
  }));

  it('never throws for any item payload, and every record it returns is valid', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...itemTypes), fc.oneof(node, fc.uint8Array().map(Buffer.from)), fc.option(idLike, { nil: undefined }), async (type, payload, eventId) => {
        const items: [Json, unknown][] = [[{ type }, payload]];
        if (type === 'replay_recording') items.push([{ type }, recordingOf(0, Buffer.isBuffer(payload) ? payload : Buffer.from(JSON.stringify(payload)))]);
        const header = eventId === undefined ? {} : { event_id: eventId };
        let result;
        try {
          result = await normalize(envelope(header, ...items));
        } catch (error) {
          // Only an unreadable envelope event_id refuses the request.
          expect(error).toBeInstanceOf(AppError);
          expect(error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('event_id') });
          return;
        }
        expectValid(result.records);
        if (result.eventId !== undefined) expect(result.eventId).toMatch(/^[0-9a-f]{32}$/);
      }),
      { numRuns: 400 },
    );
  });

  it('never throws for any store event', () => {
    fc.assert(
      fc.property(node, (event) => {
        const { records, eventId } = normalizeStoreEvent(event, NOW);
        expect(eventId).toMatch(/^[0-9a-f]{32}$/);
        expectValid(records);
      }),
      { numRuns: 200 },
    );
  });
});
