import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { eventually } from '../support/wait.js';
import mongoose from 'mongoose';
import { pageUnpagedSpans } from '../../src/shared/features/traces/store.js';

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
});

interface SpanSpec {
  id: string;
  parent?: string;
  service: string;
  name: string;
  startMs: number;
  durationMs: number;
  /** An error status and an exception event. */
  error?: boolean;
  /** Server by default. */
  kind?: OtlpSpan['kind'];
  attributes?: Record<string, string | number>;
}

/** Sends one trace's spans as an OTLP/JSON exporter would, each named by its route, with an exception event when it failed. */
async function sendSpans(project: ProjectWithDsn, traceId: string, spans: SpanSpec[]) {
  const byService: Record<string, OtlpSpan[]> = {};
  for (const span of spans) {
    (byService[span.service] ??= []).push({
      traceId,
      id: span.id,
      ...(span.parent && { parent: span.parent }),
      name: span.name,
      kind: span.kind ?? 'server',
      startMs: span.startMs,
      durationMs: span.durationMs,
      attributes: { 'http.route': span.name, ...span.attributes },
      events: span.error ? [{ name: 'exception', timeMs: span.startMs + 1, attributes: { 'exception.type': 'TimeoutError' } }] : [],
      status: span.error ? 'error' : 'ok',
    });
  }
  const body = otlpTraces(byService);
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
      return reply.status === 200 && reply.body.spans.length === 5 && reply.body.span_count === 5 && reply.body.issues.length === 1 ? reply.body : undefined;
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
    // the trace names the issue once its event is stored; the issue is listed once counted, a moment later
    const issue = await eventually(async () => (await owner.client.get(`/v1/issues?project=${project.id}&q=ChargeError`)).body.data[0], 'the issue listed');
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
  test('spans stored before traces were read by page are listed again once the workers upgrade them', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const traceId = hex(16);
    const root = hex(8);
    await sendSpans(project, traceId, [
      { id: root, service: 'web', name: 'GET /old', startMs: Date.now() - 2000, durationMs: 9 },
      { id: hex(8), parent: root, service: 'web', name: 'SELECT old', startMs: Date.now() - 1999, durationMs: 3, kind: 'client' },
    ]);
    await eventually(async () => ((await owner.client.get(`/v1/traces/${traceId}`)).body.spans?.length === 2 ? true : undefined), 'the trace');
    // as a release before paging stored them
    await mongoose.connection.collection('spans').updateMany({ traceId }, { $unset: { page: 1 } });
    expect((await owner.client.get(`/v1/traces/${traceId}`)).body.spans).toEqual([]);
    expect(await pageUnpagedSpans()).toBe(2);
    const reopened = await owner.client.get(`/v1/traces/${traceId}`);
    expect(reopened.body.spans.map((span: { name: string; depth: number }) => [span.name, span.depth])).toEqual([['GET /old', 0], ['SELECT old', 1]]);
  });
});

describe('GET /v1/traces', () => {
  const t = Date.now() - 10 * 60_000;
  let project: ProjectWithDsn;
  const ids = { slowGold: hex(16), fastGold: hex(16), silverError: hex(16) };

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    const trace = (traceId: string, at: number, api: Omit<SpanSpec, 'id' | 'parent' | 'service' | 'startMs'> & { startMs?: number }) => {
      const root = hex(8);
      return sendSpans(project, traceId, [
        { id: root, service: 'web', name: '/checkout', startMs: at, durationMs: 400 },
        { id: hex(8), parent: root, service: 'api', startMs: at + 5, ...api },
      ]);
    };
    await trace(ids.slowGold, t, { name: '/orders', durationMs: 300, error: true, attributes: { 'http.response.status_code': 500, 'customer.tier': 'gold' } });
    await trace(ids.fastGold, t + 1000, { name: '/orders', durationMs: 20, attributes: { 'http.response.status_code': 200, 'customer.tier': 'gold' } });
    await trace(ids.silverError, t + 2000, { name: '/orders', durationMs: 10, error: true, attributes: { 'http.response.status_code': 500, 'customer.tier': 'silver' } });
    await eventually(async () => ((await owner.client.get(`/v1/traces?project=${project.id}`)).body.data?.length === 3 ? true : undefined), 'three traces listed');
  });

  const listed = async (filters: string) => {
    const reply = await owner.client.get(`/v1/traces?project=${project.id}&from=${t - 30 * 60_000}&to=${t + 30 * 60_000}&${filters}`);
    expect(reply.status).toBe(200);
    return reply.body.data.map((row: { trace_id: string }) => row.trace_id);
  };

  test('each row is a whole trace, newest first', async () => {
    const reply = await owner.client.get(`/v1/traces?project=${project.id}`);
    expect(reply.body.data.map((row: { trace_id: string }) => row.trace_id)).toEqual([ids.silverError, ids.fastGold, ids.slowGold]);
    expect(reply.body.data[2]).toEqual({
      trace_id: ids.slowGold,
      project_id: project.id,
      root_service: 'web',
      root_name: '/checkout',
      start: new Date(t).toISOString(),
      duration_ms: 400,
      span_count: 2,
      error_count: 1,
      services: ['api', 'web'],
    });
  });

  test('filters apply to spans: one span must match them all, and the whole trace is listed', async () => {
    expect(await listed('attribute=customer.tier:gold')).toEqual([ids.fastGold, ids.slowGold]);
    expect(await listed('service=api&status=error')).toEqual([ids.silverError, ids.slowGold]);
    expect(await listed('http_status=500')).toEqual([ids.silverError, ids.slowGold]);
    expect(await listed('service=api&status=error&attribute=customer.tier:gold')).toEqual([ids.slowGold]);
    expect(await listed('min_duration_ms=100&service=api')).toEqual([ids.slowGold]);
    // the web spans are fine: an error elsewhere in the trace does not make them match
    expect(await listed('service=web&status=error')).toEqual([]);
    // the web span lasts 400 ms, but no api span lasts 100 ms in these two traces
    expect(await listed('min_duration_ms=100&attribute=customer.tier:silver')).toEqual([]);
    expect(await listed('name=/checkout&kind=server')).toHaveLength(3);
    expect(await listed('name=/nowhere')).toEqual([]);
  });

  test('pages follow one another without repeats; bad filters answer the contract’s error body', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const reply: { body: { data: { trace_id: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/traces?project=${project.id}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...reply.body.data.map((row) => row.trace_id));
      cursor = reply.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([ids.silverError, ids.fastGold, ids.slowGold]);
    for (const bad of ['http_status=abc', 'attribute=no-colon', 'kind=sideways', 'min_duration_ms=-1']) {
      const reply = await owner.client.get(`/v1/traces?${bad}`);
      expect({ bad, status: reply.status, code: reply.body.code }).toEqual({ bad, status: 400, code: 'validation_failed' });
    }
    expect((await owner.client.get('/v1/traces?cursor=not-ours')).body.code).toBe('invalid_request');
  });

  test('a busy minute is read five seconds at a time: its pages still follow one another, newest first, without repeats', async () => {
    const busy = await projectWithDsn(owner, h.ingest.baseUrl);
    const minute = Math.floor((Date.now() - 30 * 60_000) / 60_000) * 60_000;
    // 240 one-span traces in one minute (more requests than the list reads a minute at once for),
    // and one trace in each neighbouring minute
    const traces = [
      { traceId: hex(16), startMs: minute - 30_000 },
      ...Array.from({ length: 240 }, (_, i) => ({ traceId: hex(16), startMs: minute + i * 250 })),
      { traceId: hex(16), startMs: minute + 90_000 },
    ];
    const body = otlpTraces({ busy: traces.map(({ traceId, startMs }) => ({ traceId, id: hex(8), name: 'GET /busy', kind: 'server', startMs, durationMs: 5 })) });
    const reply = await h.ingest.request('POST', '/v1/traces', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${busy.publicKey}` });
    expect(reply.status).toBe(200);
    const window = `project=${busy.id}&from=${minute - 60_000}&to=${minute + 120_000}`;
    const pages = async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { data: { trace_id: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/traces?${window}&limit=50${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...page.body.data.map((row) => row.trace_id));
        cursor = page.body.next_cursor;
      } while (cursor);
      return seen;
    };
    // the workers store the batch in parts: page through once all of it is there
    const seen = await eventually(async () => {
      const listed = await pages();
      return listed.length >= traces.length ? listed : undefined;
    }, 'every trace listed');
    expect(seen).toEqual([...traces].reverse().map((trace) => trace.traceId));
  });

  test('another organisation lists none of them, and naming the project answers like a missing one', async () => {
    const intruder = await signUp(h, 'intruder');
    // the hour around the planted traces: a default 24-hour window reads 1,440 minutes, a full scan each on SQLite
    expect((await intruder.client.get(`/v1/traces?from=${t - 30 * 60_000}&to=${t + 30 * 60_000}`)).body.data).toEqual([]);
    const named = await intruder.client.get(`/v1/traces?project=${project.id}`);
    expect(named.status).toBe(404);
    expect(named.body.code).toBe('not_found');
  });
});
