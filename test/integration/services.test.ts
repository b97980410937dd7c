/**
 * The service views (GET /v1/services, /map, /dependencies, /structure) over spans sent as an
 * OTLP/JSON exporter sends them, with controlled timestamps: web → api over HTTP (the client span
 * names only a host), api → PostgreSQL, api → the `orders` queue → worker, worker → api (naming its
 * peer, which closes a cycle), and api → an external payment host.
 */
import { bucketsOf, percentile } from '../../src/shared/telemetry/histogram.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, startHarness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let stranger: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });

type SpanSpec = OtlpSpan;

async function send(service: string, spans: SpanSpec[]) {
  const body = otlpTraces({ [service]: spans });
  const reply = await h.ingest.request('POST', '/v1/traces', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

const TRACES = 40;
/** Inside one hour, two hours ago, so the window is known exactly. */
const t0 = Math.floor((Date.now() - 2 * 3_600_000) / 3_600_000) * 3_600_000 + 10 * 60_000;
const windowQuery = () => `project=${project.id}&from=${new Date(t0 - 5 * 60_000).toISOString()}&to=${new Date(t0 + 30 * 60_000).toISOString()}`;
const webDurations = Array.from({ length: TRACES }, (_, i) => 100 + i * 7);

beforeAll(async () => {
  owner = await signUp(h);
  stranger = await signUp(h, 'stranger');
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  const byService: Record<string, SpanSpec[][]> = { web: [], api: [], worker: [] };
  for (let i = 0; i < TRACES; i++) {
    const traceId = hex(16);
    const at = t0 + i * 20_000;
    const ids = { web: hex(8), webCall: hex(8), api: hex(8), db: hex(8), publish: hex(8), pay: hex(8), consume: hex(8), callback: hex(8), apiAgain: hex(8) };
    byService.web!.push([
      { traceId, id: ids.web, name: 'GET /checkout', kind: 'server', startMs: at, durationMs: webDurations[i]!, attributes: { 'http.route': '/checkout', 'http.response.status_code': 200 } },
      { traceId, id: ids.webCall, parent: ids.web, name: 'GET', kind: 'client', startMs: at + 5, durationMs: 90, attributes: { 'http.request.method': 'GET', 'server.address': 'api.internal', 'url.full': 'http://api.internal:8080/orders' } },
    ]);
    byService.api!.push([
      // a quarter of the api's requests fail
      { traceId, id: ids.api, parent: ids.webCall, name: 'GET /orders', kind: 'server', startMs: at + 6, durationMs: 80, status: i % 4 === 0 ? 'error' : 'ok', attributes: { 'http.route': '/orders', 'http.response.status_code': i % 4 === 0 ? 500 : 200 } },
      { traceId, id: ids.db, parent: ids.api, name: 'SELECT orders', kind: 'client', startMs: at + 8, durationMs: 10, attributes: { 'db.system': 'postgresql', 'db.query.text': 'SELECT * FROM orders WHERE id = $1' } },
      { traceId, id: ids.publish, parent: ids.api, name: 'orders publish', kind: 'producer', startMs: at + 20, durationMs: 3, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } },
      { traceId, id: ids.pay, parent: ids.api, name: 'POST', kind: 'client', startMs: at + 25, durationMs: 40, attributes: { 'http.request.method': 'POST', 'server.address': 'payments.example.com' } },
    ]);
    byService.worker!.push([
      { traceId, id: ids.consume, parent: ids.publish, name: 'orders process', kind: 'consumer', startMs: at + 30, durationMs: 30, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } },
      { traceId, id: ids.callback, parent: ids.consume, name: 'POST', kind: 'client', startMs: at + 35, durationMs: 12, attributes: { 'http.request.method': 'POST', 'peer.service': 'api', 'server.address': 'api.internal' } },
    ]);
  }
  // the callee's spans arrive first for half the traces, the caller's first for the other half
  const half = TRACES / 2;
  await send('api', byService.api!.slice(0, half).flat());
  await send('web', byService.web!.flat());
  await send('api', byService.api!.slice(half).flat());
  await send('worker', byService.worker!.flat());
  await eventually(async () => {
    const reply = await owner.client.get(`/v1/services/dependencies?${windowQuery()}`);
    const calls = Object.fromEntries((reply.body.data ?? []).map((edge: { caller: string; callee: string; calls: number }) => [`${edge.caller}>${edge.callee}`, edge.calls]));
    return calls['web>api'] === TRACES && calls['worker>api'] === TRACES && calls['orders>worker'] === TRACES ? true : undefined;
  }, 'every call counted');
});

describe('GET /v1/services', () => {
  test('requests, errors, percentiles within the histogram’s error bound, throughput and health with its arithmetic', async () => {
    const reply = await owner.client.get(`/v1/services?${windowQuery()}`);
    expect(reply.status).toBe(200);
    const byName = Object.fromEntries(reply.body.data.map((service: { name: string }) => [service.name, service]));
    expect(Object.keys(byName).sort()).toEqual(['api', 'web', 'worker']);
    expect(byName.web).toMatchObject({ requests: TRACES, errors: 0, error_rate: 0, project_ids: [project.id], health: { status: 'healthy', reasons: [] } });
    expect(byName.web.throughput_per_min).toBeCloseTo(TRACES / 35, 3);
    const exact = (p: number) => [...webDurations].sort((a, b) => a - b)[Math.ceil((p / 100) * TRACES) - 1]!;
    for (const p of [50, 95, 99] as const) {
      expect(Math.abs(byName.web[`p${p}_ms`] - exact(p)) / exact(p)).toBeLessThanOrEqual(0.05);
      // the same figure the histogram module gives for the raw durations
      expect(byName.web[`p${p}_ms`]).toBeCloseTo(percentile(bucketsOf(webDurations), p)!, 2);
    }
    expect(byName.api).toMatchObject({ requests: TRACES, errors: TRACES / 4, error_rate: 0.25 });
    expect(byName.api.health).toEqual({
      status: 'critical',
      reasons: [{ rule: 'error_rate_threshold', metric: 'error_rate', observed: 0.25, threshold: 0.25, baseline: null, status: 'critical' }],
    });
    expect(byName.worker).toMatchObject({ requests: TRACES, errors: 0 });
  });

  test('a window without traffic lists nothing, and a bad window is refused with the contract’s error body', async () => {
    const empty = await owner.client.get(`/v1/services?project=${project.id}&from=${t0 - 4 * 3_600_000}&to=${t0 - 3 * 3_600_000}`);
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual([]);
    const backwards = await owner.client.get(`/v1/services?from=${t0}&to=${t0 - 1000}`);
    expect(backwards.status).toBe(400);
    expect(backwards.body.code).toBe('validation_failed');
    const unknown = await owner.client.get('/v1/services?colour=blue');
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('invalid_request');
  });
});

describe('GET /v1/services/map and /dependencies', () => {
  test('nodes typed from span attributes, edges from calls paired with their callee’s spans in either order', async () => {
    const reply = await owner.client.get(`/v1/services/map?${windowQuery()}`);
    expect(reply.status).toBe(200);
    expect(reply.body.nodes.map((node: { id: string }) => node.id)).toEqual([
      'database:postgresql',
      'external:payments.example.com',
      'messaging:orders',
      'service:api',
      'service:web',
      'service:worker',
    ]);
    expect(reply.body.nodes.find((node: { id: string }) => node.id === 'messaging:orders')).toEqual({ id: 'messaging:orders', name: 'orders', type: 'messaging' });
    const edges = Object.fromEntries(reply.body.edges.map((edge: { source: string; target: string }) => [`${edge.source}>${edge.target}`, edge]));
    expect(Object.keys(edges).sort()).toEqual([
      'messaging:orders>service:worker',
      'service:api>database:postgresql',
      'service:api>external:payments.example.com',
      'service:api>messaging:orders',
      'service:web>service:api',
      'service:worker>service:api',
    ]);
    // the web's calls named only the host api.internal: paired with the api's entry spans, none is left on the host
    expect(edges['service:web>service:api']).toMatchObject({ kind: 'http', calls: TRACES, errors: 0 });
    expect(Math.abs(edges['service:web>service:api'].p95_ms - 90) / 90).toBeLessThanOrEqual(0.05);
    expect(edges['service:api>database:postgresql']).toMatchObject({ kind: 'db', calls: TRACES });
    expect(edges['service:api>messaging:orders']).toMatchObject({ kind: 'messaging', calls: TRACES });
    expect(edges['messaging:orders>service:worker']).toMatchObject({ kind: 'messaging', calls: TRACES });
    expect(edges['service:api>external:payments.example.com']).toMatchObject({ kind: 'http', calls: TRACES });

    const dependencies = await owner.client.get(`/v1/services/dependencies?${windowQuery()}`);
    expect(dependencies.status).toBe(200);
    expect(dependencies.body.data).toContainEqual(
      expect.objectContaining({ caller: 'web', caller_type: 'service', callee: 'api', callee_type: 'service', kind: 'http', calls: TRACES, error_rate: 0 }),
    );
    expect(dependencies.body.data).toContainEqual(expect.objectContaining({ caller: 'api', callee: 'postgresql', callee_type: 'database', kind: 'db' }));
    expect(dependencies.body.data).toHaveLength(6);
  });
});

describe('GET /v1/services/structure', () => {
  test('entry points, leaves, the cycle through the queue, the single point of failure and the longest chain', async () => {
    const reply = await owner.client.get(`/v1/services/structure?${windowQuery()}`);
    expect(reply.status).toBe(200);
    expect(reply.body.entry_points).toEqual(['service:web']);
    expect(reply.body.leaves).toEqual(['database:postgresql', 'external:payments.example.com']);
    expect(reply.body.cycles).toEqual([['messaging:orders', 'service:worker', 'service:api']]);
    expect(reply.body.single_points_of_failure[0]).toEqual({ node: 'service:api', cut_pairs: expect.any(Number) });
    expect(reply.body.fan_in[0]).toEqual({ node: 'service:api', count: 2 });
    expect(reply.body.fan_out[0]).toEqual({ node: 'service:api', count: 3 });
    expect(reply.body.longest_chain).toEqual(['service:web', 'service:api', 'messaging:orders', 'service:worker']);
  });
});

describe('a 366-day window', () => {
  const DAY_MS = 86_400_000;
  /** Two days before the main traffic: the year's data lies on two days. */
  const earlier = t0 - 2 * DAY_MS;
  const EARLIER = 5;
  const yearQuery = () => {
    const now = Date.now();
    return `project=${project.id}&from=${new Date(now - 366 * DAY_MS).toISOString()}&to=${new Date(now).toISOString()}`;
  };
  const timed = async (path: string) => {
    const started = Date.now();
    const reply = await owner.client.get(path);
    return { reply, ms: Date.now() - started };
  };

  beforeAll(async () => {
    await send(
      'web',
      Array.from({ length: EARLIER }, (_, i): SpanSpec[] => {
        const traceId = hex(16);
        const web = hex(8);
        return [
          { traceId, id: web, name: 'GET /checkout', kind: 'server', startMs: earlier + i * 60_000, durationMs: 50, attributes: { 'http.route': '/checkout', 'http.response.status_code': 200 } },
          { traceId, id: hex(8), parent: web, name: 'SELECT carts', kind: 'client', startMs: earlier + i * 60_000 + 5, durationMs: 5, attributes: { 'db.system': 'postgresql' } },
        ];
      }).flat(),
    );
    await eventually(async () => {
      const reply = await owner.client.get(`/v1/services?${yearQuery()}`);
      return reply.body.data?.find((service: { name: string }) => service.name === 'web')?.requests === TRACES + EARLIER ? true : undefined;
    }, 'the earlier day counted');
  });

  test('the services list and the map read only the hours that hold traffic: each answers in well under 3 s, with both days', async () => {
    const list = await timed(`/v1/services?${yearQuery()}`);
    expect(list.reply.status).toBe(200);
    expect(list.ms).toBeLessThan(3000);
    const byName = Object.fromEntries(list.reply.body.data.map((service: { name: string; requests: number }) => [service.name, service.requests]));
    expect(byName).toEqual({ web: TRACES + EARLIER, api: TRACES, worker: TRACES });

    const map = await timed(`/v1/services/map?${yearQuery()}`);
    expect(map.reply.status).toBe(200);
    expect(map.ms).toBeLessThan(3000);
    const calls = Object.fromEntries(map.reply.body.edges.map((edge: { source: string; target: string; calls: number }) => [`${edge.source}>${edge.target}`, edge.calls]));
    expect(calls).toMatchObject({ 'service:web>service:api': TRACES, 'service:web>database:postgresql': EARLIER, 'service:api>database:postgresql': TRACES });
  });

  describe('with a deadline the request cannot meet', () => {
    let slow: Harness;
    beforeAll(async () => {
      slow = await startHarness({ REQUEST_DEADLINE_MS: '1' });
    });
    afterAll(async () => {
      await slow.close();
    });

    test('it answers 503 deadline_exceeded promptly, and the process keeps answering', async () => {
      const key = (await owner.client.post('/v1/api-keys', { name: 'deadline' })).body.secret as string;
      const started = Date.now();
      const reply = await slow.api.with({ bearer: key }).get(`/v1/services/map?${yearQuery()}`);
      expect(Date.now() - started).toBeLessThan(1000);
      expect(reply.status).toBe(503);
      expect(reply.body).toEqual({ code: 'deadline_exceeded', message: expect.any(String), request_id: reply.headers.get('x-request-id') });
      const health = await slow.api.get('/healthz');
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ status: 'ok' });
    });
  });
});

describe('tenancy', () => {
  test('another organisation sees none of it, and naming the project answers like a missing one', async () => {
    for (const path of ['/v1/services', '/v1/services/map', '/v1/services/dependencies', '/v1/services/structure']) {
      const own = await stranger.client.get(`${path}?from=${t0 - 60_000}&to=${t0 + 30 * 60_000}`);
      expect(own.status).toBe(200);
      expect(own.body.data ?? own.body.nodes ?? own.body.entry_points).toEqual([]);
      const named = await stranger.client.get(`${path}?${windowQuery()}`);
      expect(named.status).toBe(404);
      expect(named.body.code).toBe('not_found');
    }
  });
});
