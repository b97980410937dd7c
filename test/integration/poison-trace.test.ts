/**
 * A "poison trace": anyone with a DSN can send one trace of tens of thousands of spans. Opening it must
 * stay a bounded read that leaves the process free for other requests. In a file of its own, on a
 * database of its own, so its 40,000 spans do not weigh on the other trace tests (and not in the SQLite
 * subset, whose backend reads every span of the database for any span lookup).
 */
import { signUp, type Account } from '../support/factories/accounts.js';
import { hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
});

describe('a trace of 40,000 spans', () => {
  const SPANS = 40_000;
  const PAGE = 2_000;
  let project: ProjectWithDsn;
  const traceId = hex(16);
  const root = hex(8);
  const t = Date.now() - 5 * 60_000;

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    // one root with 39,999 children (every one a sibling of the others), two of them failing, sent as four exports
    const spans: OtlpSpan[] = Array.from({ length: SPANS }, (_, i) => ({
      traceId,
      id: i === 0 ? root : hex(8),
      ...(i > 0 && { parent: root }),
      name: i === 0 ? 'GET /poison' : `child ${i}`,
      kind: i === 0 ? 'server' : 'internal',
      startMs: i === 0 ? t : t + (i % 1000),
      durationMs: i === 0 ? 5_000 : 3,
      status: i === 17 || i === 39_017 ? 'error' : 'ok',
    }));
    for (let i = 0; i < SPANS; i += SPANS / 4) {
      const body = JSON.stringify(otlpTraces({ [`svc-${i}`]: spans.slice(i, i + SPANS / 4) }));
      const reply = await h.ingest.request('POST', '/v1/traces', body, { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
      expect(reply.status).toBe(200);
    }
    await eventually(async () => ((await owner.client.get(`/v1/traces/${traceId}?limit=1`)).body.span_count === SPANS ? true : undefined), 'every span stored', 110_000);
  }, 120_000);

  test('opening it answers a page of 2,000 spans quickly, figures of the whole trace, and /healthz stays quick meanwhile', async () => {
    const started = Date.now();
    const opening = owner.client.get(`/v1/traces/${traceId}`);
    const health: number[] = [];
    for (let i = 0; i < 3; i++) {
      const asked = Date.now();
      expect((await h.api.get('/healthz')).status).toBe(200);
      health.push(Date.now() - asked);
    }
    const reply = await opening;
    const took = Date.now() - started;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ trace_id: traceId, span_count: SPANS, error_count: 2, duration_ms: 5_000, services: ['svc-0', 'svc-10000', 'svc-20000', 'svc-30000'] });
    expect(reply.body.spans).toHaveLength(PAGE);
    expect(reply.body.spans[0]).toMatchObject({ span_id: root, depth: 0 });
    expect(typeof reply.body.next_cursor).toBe('string');
    // the whole trace read at once took 30 s and held the process for 13 s
    expect(took).toBeLessThan(8_000);
    expect(Math.max(...health)).toBeLessThan(1_000);
  });

  test('paging reaches every span exactly once, each page capped', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const reply: { status: number; body: { spans: { span_id: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/traces/${traceId}${cursor ? `?cursor=${cursor}` : ''}`);
      expect(reply.status).toBe(200);
      expect(reply.body.spans.length).toBeLessThanOrEqual(PAGE);
      for (const span of reply.body.spans) seen.push(span.span_id);
      cursor = reply.body.next_cursor;
      pages++;
    } while (cursor && pages < 30);
    expect(cursor).toBeNull();
    expect(seen).toHaveLength(SPANS);
    expect(new Set(seen).size).toBe(SPANS);
    const small = await owner.client.get(`/v1/traces/${traceId}?limit=10`);
    expect(small.body.spans).toHaveLength(10);
    for (const bad of ['limit=0', `limit=${PAGE + 1}`]) expect((await owner.client.get(`/v1/traces/${traceId}?${bad}`)).body.code).toBe('validation_failed');
    expect((await owner.client.get(`/v1/traces/${traceId}?cursor=not-ours`)).body.code).toBe('invalid_request');
  }, 90_000);
});
