import { randomBytes } from 'node:crypto';
import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const nanos = (ms: number) => String(BigInt(ms) * 1_000_000n);

interface SpanSpec {
  id: string;
  parent?: string;
  service: string;
  name: string;
  startMs: number;
  durationMs: number;
  error?: boolean;
}

/** Sends spans as an OTLP/JSON exporter would: one resourceSpans per service. */
async function sendSpans(project: ProjectWithDsn, traceId: string, spans: SpanSpec[]) {
  const services = [...new Set(spans.map((span) => span.service))];
  const body = {
    resourceSpans: services.map((service) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeSpans: [
        {
          spans: spans
            .filter((span) => span.service === service)
            .map((span) => ({
              traceId,
              spanId: span.id,
              ...(span.parent && { parentSpanId: span.parent }),
              name: span.name,
              kind: 2,
              startTimeUnixNano: nanos(span.startMs),
              endTimeUnixNano: nanos(span.startMs + span.durationMs),
              attributes: [{ key: 'http.route', value: { stringValue: span.name } }],
              events: span.error ? [{ name: 'exception', timeUnixNano: nanos(span.startMs + 1), attributes: [{ key: 'exception.type', value: { stringValue: 'TimeoutError' } }] }] : [],
              status: { code: span.error ? 2 : 1 },
            })),
        },
      ],
    })),
  };
  const reply = await h.ingest.request('POST', '/v1/traces', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

describe('GET /v1/traces/{traceID}', () => {
  test('spans in tree order with depth, attributes and events; the issues of errors in the trace', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const traceId = hex(16);
    const [a, b, c, d, orphan] = Array.from({ length: 5 }, () => hex(8));
    const t = Date.now() - 60_000;
    await sendSpans(project, traceId, [
      { id: b!, parent: a, service: 'checkout', name: 'charge', startMs: t + 10, durationMs: 30, error: true },
      { id: d!, parent: b, service: 'payments', name: 'POST /charges', startMs: t + 12, durationMs: 20 },
      { id: a!, service: 'web', name: 'GET /checkout', startMs: t, durationMs: 50 },
      { id: orphan!, parent: hex(8), service: 'web', name: 'late child of a lost span', startMs: t + 1, durationMs: 2 },
      { id: c!, parent: a, service: 'checkout', name: 'load cart', startMs: t + 5, durationMs: 3 },
    ]);
    const inTrace = errorEvent({ contexts: { trace: { trace_id: traceId.toUpperCase(), span_id: b } } }, { type: 'ChargeError' });
    const elsewhere = errorEvent({ contexts: { trace: { trace_id: hex(16), span_id: hex(8) } } }, { type: 'UnrelatedError' });
    for (const event of [inTrace, elsewhere]) {
      const sent = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
      expect(sent.status).toBe(200);
    }

    const trace = await eventually(async () => {
      const reply = await owner.client.get(`/v1/traces/${traceId}`);
      return reply.status === 200 && reply.body.spans.length === 5 && reply.body.issues.length === 1 ? reply.body : undefined;
    }, 'the trace with its spans and issue');
    // roots by start (the span whose parent never arrived is one), each followed by its children by start
    expect(trace.spans.map((span: { span_id: string; depth: number }) => [span.span_id, span.depth])).toEqual([
      [a, 0],
      [c, 1],
      [b, 1],
      [d, 2],
      [orphan, 0],
    ]);
    expect(trace).toMatchObject({ trace_id: traceId, span_count: 5, error_count: 1, duration_ms: 50, services: ['checkout', 'payments', 'web'] });
    const charge = trace.spans.find((span: { span_id: string }) => span.span_id === b);
    expect(charge).toMatchObject({
      parent_span_id: a,
      service: 'checkout',
      name: 'charge',
      kind: 'server',
      status: 'error',
      duration_ms: 30,
      attributes: { 'http.route': 'charge' },
      events: [{ name: 'exception', attributes: { 'exception.type': 'TimeoutError' } }],
    });
    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}&q=ChargeError`)).body.data;
    expect(trace.issues).toEqual([issue.id]);
    // any case of the id finds it
    expect((await owner.client.get(`/v1/traces/${traceId.toUpperCase()}`)).body.trace_id).toBe(traceId);
  });

  test('another organisation’s trace answers exactly like a missing one; a malformed id too', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const traceId = hex(16);
    await sendSpans(project, traceId, [{ id: hex(8), service: 'web', name: 'GET /', startMs: Date.now() - 1000, durationMs: 5 }]);
    await eventually(async () => ((await owner.client.get(`/v1/traces/${traceId}`)).status === 200 ? true : undefined), 'the trace');
    const intruder = await signUp(h, 'intruder');
    const theirs = await intruder.client.get(`/v1/traces/${traceId}`);
    const missing = await intruder.client.get(`/v1/traces/${hex(16)}`);
    const malformed = await intruder.client.get('/v1/traces/not-a-trace');
    for (const reply of [theirs, missing, malformed]) {
      expect(reply.status).toBe(404);
      expect({ ...reply.body, request_id: '' }).toEqual({ ...missing.body, request_id: '' });
    }
    const dsn = h.api.with({ authorization: `DSN ${project.publicKey}` });
    expect((await dsn.get(`/v1/traces/${traceId}`)).status).toBe(403);
  });
});
