/**
 * The views computed from spans — GET /v1/traffic, /v1/queues, /v1/database/slow-queries and
 * /query-patterns, /v1/endpoints/surges — over spans sent as an OTLP/JSON exporter sends them. Every
 * planted time is minute `m` of one past hour H (`at(m)`), and each area has a project of its own:
 *
 * - traffic (minutes 0–9, projects trafficA and trafficB): the entry spans in TRAFFIC, failing by
 *   span status or by a 5xx answer (404s are no failure); each request also has a client child and
 *   an in-process server child (local parent), neither of which is a request.
 * - queues (minutes 10–19): 12 messages api → `orders` (rabbitmq) → worker, the consumer span a child
 *   of the producer span (messages 0–9) or linking to it (10–11); the consumers of even messages are
 *   sent before any producer, those of odd ones after. Message 3's processing fails, message 0 is
 *   also fetched by a `receive` span, one more message is processed by a Sentry-style consumer that
 *   states its wait, 3 are never consumed; `emails` (kafka) gets 2 messages and no consumer.
 * - database (minutes 20–29): the statements in DB_CALLS (four PostgreSQL patterns, from `api` and
 *   `billing`) and Redis calls without a statement.
 * - endpoint surges (minutes 30–49): `auth` POST /login gets 30 requests (1 × 401) in the baseline
 *   window and 120 (90 × 401) in the next, each of those carrying a caller's address, user ids,
 *   bearer token and query token; GET /profile stays at 40 (10 × 403) in both; `web` spans named by
 *   raw URL /reset/<token>/confirm?token=<token> (no route) appear 25 times in the second window only.
 */
import mongoose from 'mongoose';
import { bucketsOf, percentile } from '../../src/shared/telemetry/histogram.js';
import { createApiKey, createProject, signUp, type Account } from '../support/factories/accounts.js';
import { hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import type { Client, Reply } from '../support/http.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let stranger: Account;
/** The owner's organisation read with a member API key, as a script would. */
let reader: Client;
const projects = {} as Record<'trafficA' | 'trafficB' | 'queues' | 'database' | 'surges', ProjectWithDsn>;
useHarness((started) => (h = started), {}, { workers: true });

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** The start of the hour two hours back. */
const H = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
const at = (minute: number, ms = 0) => H + minute * MINUTE + ms;
const iso = (ms: number) => new Date(ms).toISOString();
/** The window [at(from), at(to)): `from` as ISO, `to` as epoch milliseconds (the API takes both). */
const minutes = (from: number, to: number) => `from=${iso(at(from))}&to=${at(to)}`;
/** A percentile as the API answers it: the histogram bucket's representative, to 2 decimals. */
const pct = (durations: number[], p: number) => Number(percentile(bucketsOf(durations), p)!.toFixed(2));

type SpanSpec = OtlpSpan;

/** A span of a new trace unless `more` says otherwise. */
const span = (kind: SpanSpec['kind'], startMs: number, durationMs: number, more: Partial<SpanSpec> = {}): SpanSpec => ({
  traceId: hex(16),
  id: hex(8),
  name: kind,
  kind,
  startMs,
  durationMs,
  ...more,
});

/** One OTLP/JSON export request to a project's DSN, each service's spans under a resource of its own; every span must be accepted. */
async function send(project: ProjectWithDsn, byService: Record<string, SpanSpec[]>) {
  const reply = await h.ingest.request('POST', '/v1/traces', JSON.stringify(otlpTraces(byService)), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
  expect(reply.body).toEqual({});
}

beforeAll(async () => {
  owner = await signUp(h);
  stranger = await signUp(h, 'stranger');
  reader = h.api.with({ bearer: (await createApiKey(owner, 'member')).secret });
  for (const name of ['trafficA', 'trafficB', 'queues', 'database', 'surges'] as const) projects[name] = await projectWithDsn(owner, h.ingest.baseUrl);
});

describe('GET /v1/traffic', () => {
  /** Requests (entry spans) per project, service and minute; the first `errors` of them fail. */
  const TRAFFIC = [
    { project: 'trafficA', service: 'web', minute: 1, requests: 5, errors: 1 },
    { project: 'trafficA', service: 'api', minute: 1, requests: 2, errors: 0 },
    { project: 'trafficA', service: 'web', minute: 3, requests: 3, errors: 0 },
    { project: 'trafficA', service: 'api', minute: 3, requests: 4, errors: 2 },
    { project: 'trafficA', service: 'api', minute: 7, requests: 1, errors: 0 },
    { project: 'trafficB', service: 'shop', minute: 2, requests: 6, errors: 0 },
    { project: 'trafficB', service: 'shop', minute: 9, requests: 2, errors: 1 },
  ] as const;
  /** Points from per-step counts, steps of `stepMs` from at(0). */
  const points = (requests: number[], errors: number[], stepMs = MINUTE) => requests.map((count, i) => ({ t: iso(at(0) + i * stepMs), requests: count, errors: errors[i] }));
  const ofBoth = () => `project=${projects.trafficA.id}&project=${projects.trafficB.id}`;

  beforeAll(async () => {
    for (const project of ['trafficA', 'trafficB'] as const) {
      const byService: Record<string, SpanSpec[]> = {};
      for (const row of TRAFFIC.filter((r) => r.project === project)) {
        for (let i = 0; i < row.requests; i++) {
          // a failure is an error status (answering 200) or, every other one, a 503 although the app set the status OK
          const failing = i < row.errors;
          const status = failing ? (i % 2 === 0 ? 200 : 503) : i === row.requests - 1 ? 404 : 200;
          const http = { 'http.request.method': 'GET', 'http.route': `/${row.service}`, 'http.response.status_code': status };
          const entry = span('server', at(row.minute, i * 1000 + 100), 50, { name: `GET /${row.service}`, status: failing ? (i % 2 === 0 ? 'error' : 'ok') : undefined, attributes: http });
          const inner = { traceId: entry.traceId, parent: entry.id };
          (byService[row.service] ??= []).push(
            entry,
            // a server span whose parent is local (flags: has-is-remote, not remote) is no request
            span('server', entry.startMs + 5, 20, { ...inner, flags: 0x100, attributes: { ...http, 'http.route': '/inner' } }),
            span('client', entry.startMs + 10, 10, { ...inner, attributes: { 'http.request.method': 'GET', 'server.address': 'cdn.example.test' } }),
          );
        }
      }
      await send(projects[project], byService);
    }
    await eventually(async () => {
      const reply = await reader.get(`/v1/traffic?${ofBoth()}&${minutes(0, 10)}`);
      const total = (reply.body.series ?? []).reduce((sum: number, series: { requests: number }) => sum + series.requests, 0);
      return total >= 23 ? true : undefined;
    }, 'the 23 requests counted');
  });

  test('two projects: a series each, busiest first, every minute present with its requests and failures', async () => {
    const reply = await reader.get(`/v1/traffic?${ofBoth()}&${minutes(0, 10)}&step=60`);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      from: iso(at(0)),
      to: iso(at(10)),
      step: 60,
      series: [
        { project_id: projects.trafficA.id, requests: 15, points: points([0, 7, 0, 7, 0, 0, 0, 1, 0, 0], [0, 1, 0, 2, 0, 0, 0, 0, 0, 0]) },
        { project_id: projects.trafficB.id, requests: 8, points: points([0, 0, 6, 0, 0, 0, 0, 0, 0, 2], [0, 0, 0, 0, 0, 0, 0, 0, 0, 1]) },
      ],
    });

    const fiveMinutes = await reader.get(`/v1/traffic?${ofBoth()}&${minutes(0, 10)}&step=300`);
    expect(fiveMinutes.body.step).toBe(300);
    expect(fiveMinutes.body.series).toEqual([
      { project_id: projects.trafficA.id, requests: 15, points: points([14, 1], [3, 0], 5 * MINUTE) },
      { project_id: projects.trafficB.id, requests: 8, points: points([6, 2], [0, 1], 5 * MINUTE) },
    ]);
  });

  test('one project named: a series per service of it', async () => {
    const reply = await reader.get(`/v1/traffic?project=${projects.trafficA.id}&${minutes(0, 10)}&step=60`);
    expect(reply.status).toBe(200);
    expect(reply.body.series).toEqual([
      { project_id: projects.trafficA.id, service: 'web', requests: 8, points: points([0, 5, 0, 3, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]) },
      { project_id: projects.trafficA.id, service: 'api', requests: 7, points: points([0, 2, 0, 4, 0, 0, 0, 1, 0, 0], [0, 0, 0, 2, 0, 0, 0, 0, 0, 0]) },
    ]);
  });

  test('a window of 5,000 steps is answered, one step more is refused, as is a step under 10 s', async () => {
    const project = `project=${projects.trafficA.id}`;
    const most = await reader.get(`/v1/traffic?${project}&from=${at(0)}&to=${at(0) + 5_000 * 10_000}&step=10`);
    expect(most.status).toBe(200);
    expect(most.body.series.map((series: { points: unknown[] }) => series.points.length)).toEqual([5_000, 5_000]);
    expect(most.body.series.map((series: { requests: number }) => series.requests)).toEqual([8, 7]);

    const tooMany = await reader.get(`/v1/traffic?${project}&from=${at(0)}&to=${at(0) + 5_001 * 10_000}&step=10`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ code: 'validation_failed', details: [{ path: 'query.step', message: 'too small for the window' }] });
    const month = await reader.get(`/v1/traffic?from=${at(0) - 30 * 86_400_000}&to=${at(0)}&step=10`);
    expect(month.status).toBe(400);
    expect(month.body.code).toBe('validation_failed');

    const tiny = await reader.get(`/v1/traffic?${project}&${minutes(0, 10)}&step=5`);
    expect(tiny.status).toBe(400);
    expect(tiny.body.code).toBe('validation_failed');
    expect(tiny.body.details).toEqual([expect.objectContaining({ path: 'query.step' })]);
  });
});

describe('GET /v1/queues', () => {
  const MESSAGES = 12;
  /** Per message: from the producer span's start to the consumer span's start, and the consumer's duration. */
  const WAITS = Array.from({ length: MESSAGES }, (_, i) => 200 + 150 * i);
  const PROCESSING = Array.from({ length: MESSAGES }, (_, i) => 20 + 10 * i);
  /** The Sentry-style consumer states a wait of 40 ms although it starts 3 s after its producer span. */
  const SENTRY = { stated: 40, gap: 3_000, processing: 900 };
  const orders = (operation: string) => ({ 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation.type': operation });
  const ordersIn = async () => {
    const reply = await reader.get(`/v1/queues?project=${projects.queues.id}&${minutes(10, 20)}&queue=orders`);
    return (reply.body.data?.[0] ?? { published: 0, processed: 0, waits_measured: 0 }) as { published: number; processed: number; waits_measured: number };
  };

  beforeAll(async () => {
    const producers: SpanSpec[] = [];
    const consumersFirst: SpanSpec[] = [];
    const consumersAfter: SpanSpec[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      const publish = span('producer', at(10, i * 20_000), 3, { name: 'orders publish', attributes: orders('publish') });
      const toProducer = i < 10 ? { traceId: publish.traceId, parent: publish.id } : { links: [{ traceId: publish.traceId, spanId: publish.id }] };
      const process = span('consumer', publish.startMs + WAITS[i]!, PROCESSING[i]!, { name: 'orders process', status: i === 3 ? 'error' : undefined, attributes: orders('process'), ...toProducer });
      producers.push(publish);
      (i % 2 === 0 ? consumersFirst : consumersAfter).push(process);
      // a receive span only fetches the message: neither processed nor a wait
      if (i === 0) consumersFirst.push(span('consumer', process.startMs - 10, 5_000, { name: 'orders receive', attributes: orders('receive'), ...toProducer }));
    }
    const sentryPublish = span('producer', at(15), 3, { name: 'orders publish', attributes: orders('publish') });
    producers.push(sentryPublish, ...[0, 1, 2].map((k) => span('producer', at(18, k * 1000), 3, { name: 'orders publish', attributes: orders('publish') })));
    const sentryProcess = span('consumer', sentryPublish.startMs + SENTRY.gap, SENTRY.processing, {
      traceId: sentryPublish.traceId,
      parent: sentryPublish.id,
      name: 'queue.process',
      attributes: { ...orders('process'), 'messaging.message.receive.latency': SENTRY.stated },
    });
    const emails = [0, 1].map((k) => span('producer', at(19, k * 1000), 2, { name: 'emails publish', attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'emails', 'messaging.operation.type': 'publish' } }));

    // each request counted before the next is sent, so the two orders of arrival are certain
    await send(projects.queues, { worker: consumersFirst });
    await eventually(async () => ((await ordersIn()).processed >= 6 ? true : undefined), 'the early consumer spans counted');
    expect((await ordersIn()).waits_measured).toBe(0);
    await send(projects.queues, { api: producers, mailer: emails });
    await eventually(async () => ((await ordersIn()).published >= 16 ? true : undefined), 'the producer spans counted');
    await send(projects.queues, { worker: consumersAfter, 'sentry-worker': [sentryProcess] });
    await eventually(async () => ((await ordersIn()).processed >= 13 ? true : undefined), 'the late consumer spans counted');
  });

  const emailsRow = () => ({
    queue: 'emails',
    system: 'kafka',
    project_ids: [projects.queues.id],
    producers: ['mailer'],
    consumers: [],
    published: 2,
    processed: 0,
    failed: 0,
    failure_rate: 0,
    p50_processing_ms: null,
    p95_processing_ms: null,
    p95_wait_ms: null,
    waits_measured: 0,
    backlog_growth_per_min: 0.2,
  });

  test('published, processed, failures, processing and wait percentiles, backlog growth, busiest queue first', async () => {
    const reply = await reader.get(`/v1/queues?project=${projects.queues.id}&${minutes(10, 20)}`);
    expect(reply.status).toBe(200);
    const processing = [...PROCESSING, SENTRY.processing];
    const waits = [...WAITS, SENTRY.stated];
    expect(reply.body).toEqual({
      from: iso(at(10)),
      to: iso(at(20)),
      data: [
        {
          queue: 'orders',
          system: 'rabbitmq',
          project_ids: [projects.queues.id],
          producers: ['api'],
          consumers: ['sentry-worker', 'worker'],
          // 12 paired messages, the Sentry consumer's, 3 never consumed
          published: 16,
          // the receive span is not processing
          processed: 13,
          failed: 1,
          failure_rate: Number((1 / 13).toFixed(4)),
          p50_processing_ms: pct(processing, 50),
          p95_processing_ms: pct(processing, 95),
          // consumers first and producers first alike, by parent or by link, and the stated wait instead of the gap
          p95_wait_ms: pct(waits, 95),
          waits_measured: 13,
          backlog_growth_per_min: 0.3,
        },
        emailsRow(),
      ],
    });
    // the slowest wait, 1850 ms (message 11, paired by its link), within the histogram's 5%
    expect(Math.abs(reply.body.data[0].p95_wait_ms - 1_850) / 1_850).toBeLessThanOrEqual(0.05);
  });

  test('`queue` narrows to one queue', async () => {
    const reply = await reader.get(`/v1/queues?project=${projects.queues.id}&${minutes(10, 20)}&queue=emails`);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual([emailsRow()]);
  });
});

describe('GET /v1/database/slow-queries and /query-patterns', () => {
  const P = {
    byId: 'select * from users where id = ?',
    inList: 'select name from orders where id in (?)',
    insert: 'insert into events (a, b) values (?)',
    reports: 'select * from reports where created_at > ?',
    redis: 'hgetall',
  };
  /** Each call: its service, statement (or Redis operation), duration and minute. */
  const DB_CALLS = [
    { service: 'api', statement: 'SELECT * FROM users WHERE id = 1', ms: 12, minute: 21 },
    { service: 'billing', statement: 'select *  from users\n  where id=2', ms: 30, minute: 21 },
    { service: 'api', statement: 'SELECT name FROM orders WHERE id IN (1,2,3)', ms: 40, minute: 22 },
    { service: 'api', statement: 'select name from orders where id in ( 4 )', ms: 60, minute: 22, error: true },
    { service: 'api', statement: "INSERT INTO events (a, b) VALUES (1, 'x'), (2, 'y')", ms: 20, minute: 23 },
    { service: 'api', statement: 'INSERT INTO events (a,b) VALUES ($1, $2)', ms: 21, minute: 23 },
    { service: 'api', statement: "insert into events (a, b) values (3, 'z'), (4, 'w'), (5, 'it''s')", ms: 22, minute: 23 },
    // two calls a minute in minutes 20–24, 100 ms to 1 s: the minutes' slowest are 200, 400, … 1000 ms
    ...Array.from({ length: 10 }, (_, k) => ({ service: 'api', statement: k % 2 ? "SELECT * FROM reports WHERE created_at > '2024-01-01'" : 'select * from reports where created_at > $1 -- nightly', ms: 100 * (k + 1), minute: 20 + Math.floor(k / 2) })),
    ...[1, 2, 2, 3].map((ms) => ({ service: 'cache-worker', operation: 'HGETALL', ms, minute: 25 })),
  ];
  const REPORT_MS = Array.from({ length: 10 }, (_, k) => 100 * (k + 1));
  /** The trace of each call, by its duration and service. */
  const traceOf = new Map<string, string>();
  const window = () => `project=${projects.database.id}&${minutes(20, 30)}`;
  const statementsOf = (body: { data: { statement?: string; pattern?: string }[] }) => body.data.map((row) => row.statement ?? row.pattern);

  beforeAll(async () => {
    const byService: Record<string, SpanSpec[]> = {};
    for (const [i, call] of DB_CALLS.entries()) {
      const attributes = 'operation' in call ? { 'db.system': 'redis', 'db.operation.name': call.operation! } : { 'db.system': 'postgresql', [i % 2 ? 'db.statement' : 'db.query.text']: call.statement! };
      const s = span('client', at(call.minute, i * 100), call.ms, { parent: hex(8), name: 'db', status: 'error' in call ? 'error' : undefined, attributes });
      traceOf.set(`${call.service}:${call.ms}`, s.traceId);
      (byService[call.service] ??= []).push(s);
    }
    // one request: each minute's example trace is its slowest call
    await send(projects.database, byService);
    await eventually(async () => {
      const reply = await reader.get(`/v1/database/query-patterns?${window()}`);
      const calls = (reply.body.data ?? []).reduce((sum: number, row: { calls: number }) => sum + row.calls, 0);
      return calls >= DB_CALLS.length ? true : undefined;
    }, 'every database call counted');
  });

  test('slow queries: statements normalised, slowest p95 first, with percentiles, slowest call, totals and example traces', async () => {
    const reply = await reader.get(`/v1/database/slow-queries?${window()}`);
    expect(reply.status).toBe(200);
    expect(reply.body.next_cursor).toBeNull();
    expect(statementsOf(reply.body)).toEqual([P.reports, P.inList, P.byId, P.insert, P.redis]);
    const [reports, inList, byId, insert, redis] = reply.body.data;
    expect(reports).toEqual({
      statement: P.reports,
      system: 'postgresql',
      calls: 10,
      errors: 0,
      total_ms: 5_500,
      mean_ms: 550,
      services: ['api'],
      project_ids: [projects.database.id],
      p50_ms: pct(REPORT_MS, 50),
      p95_ms: pct(REPORT_MS, 95),
      max_ms: 1_000,
      // the three slowest minutes' slowest calls, slowest first
      example_trace_ids: [traceOf.get('api:1000'), traceOf.get('api:800'), traceOf.get('api:600')],
    });
    expect(Math.abs(reports.p95_ms - 1_000) / 1_000).toBeLessThanOrEqual(0.05);
    expect(inList).toMatchObject({ calls: 2, errors: 1, total_ms: 100, mean_ms: 50, max_ms: 60, p50_ms: pct([40, 60], 50), p95_ms: pct([40, 60], 95) });
    expect(byId).toMatchObject({ calls: 2, errors: 0, total_ms: 42, services: ['api', 'billing'], max_ms: 30, example_trace_ids: [traceOf.get('billing:30'), traceOf.get('api:12')] });
    expect(insert).toMatchObject({ calls: 3, total_ms: 63, mean_ms: 21, max_ms: 22, p95_ms: pct([20, 21, 22], 95) });
    expect(redis).toMatchObject({ system: 'redis', calls: 4, total_ms: 8, mean_ms: 2, services: ['cache-worker'], max_ms: 3 });
  });

  test('query patterns: by total time by default, by calls with sort=calls', async () => {
    const byTime = await reader.get(`/v1/database/query-patterns?${window()}`);
    expect(byTime.status).toBe(200);
    expect(byTime.body.data.map((row: { pattern: string; total_ms: number }) => [row.pattern, row.total_ms])).toEqual([
      [P.reports, 5_500],
      [P.inList, 100],
      [P.insert, 63],
      [P.byId, 42],
      [P.redis, 8],
    ]);
    expect(byTime.body.data[3]).toEqual({ pattern: P.byId, system: 'postgresql', calls: 2, errors: 0, total_ms: 42, mean_ms: 21, services: ['api', 'billing'], project_ids: [projects.database.id] });
    const byCalls = await reader.get(`/v1/database/query-patterns?${window()}&sort=calls`);
    // equal calls (2 and 2) ranked by time
    expect(byCalls.body.data.map((row: { pattern: string; calls: number }) => [row.pattern, row.calls])).toEqual([
      [P.reports, 10],
      [P.redis, 4],
      [P.insert, 3],
      [P.inList, 2],
      [P.byId, 2],
    ]);
  });

  test('`system` and `service` narrow the calls counted', async () => {
    const redis = await reader.get(`/v1/database/slow-queries?${window()}&system=redis`);
    expect(statementsOf(redis.body)).toEqual([P.redis]);
    const postgres = await reader.get(`/v1/database/query-patterns?${window()}&system=postgresql`);
    expect(statementsOf(postgres.body)).toEqual([P.reports, P.inList, P.insert, P.byId]);
    const billing = await reader.get(`/v1/database/query-patterns?${window()}&service=billing`);
    expect(billing.body.data).toEqual([{ pattern: P.byId, system: 'postgresql', calls: 1, errors: 0, total_ms: 30, mean_ms: 30, services: ['billing'], project_ids: [projects.database.id] }]);
  });

  test('paged one statement at a time, the cursor leads through all of them in order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Reply<{ data: { statement: string }[]; next_cursor: string | null }> = await reader.get(`/v1/database/slow-queries?${window()}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data).toHaveLength(1);
      seen.push(page.body.data[0]!.statement);
      cursor = page.body.next_cursor;
    } while (cursor && seen.length < 10);
    expect(seen).toEqual([P.reports, P.inList, P.byId, P.insert, P.redis]);
    expect(cursor).toBeNull();

    const badSort = await reader.get(`/v1/database/query-patterns?${window()}&sort=slowest`);
    expect(badSort.status).toBe(400);
    expect(badSort.body).toMatchObject({ code: 'validation_failed', details: [expect.objectContaining({ path: 'query.sort' })] });
    const badCursor = await reader.get(`/v1/database/slow-queries?${window()}&cursor=not-ours`);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.code).toBe('invalid_request');
  });
});

describe('GET /v1/endpoints/surges', () => {
  /** Every caller identity the surge's spans carry: none may be stored in the rollups or answered. */
  const IDENTITIES: string[] = [];
  let surgeTrace = '';
  const window = () => `project=${projects.surges.id}&${minutes(40, 50)}`;
  const surgesOf = (body: { data: { service: string; method: string; route: string }[] }) => body.data.map((row) => `${row.service} ${row.method} ${row.route}`);
  const request = (route: string, method: string, status: number, startMs: number, attributes: Record<string, string> = {}) =>
    span('server', startMs, 15, { name: `${method} ${route}`, attributes: { 'http.request.method': method, 'http.route': route, 'http.response.status_code': status, ...attributes } });
  const planted = async () => (await mongoose.connection.db!.collection('endpoint_rollups').find({ projectId: new mongoose.Types.ObjectId(projects.surges.id) }).toArray()).reduce((sum, doc) => sum + doc.count, 0);

  beforeAll(async () => {
    const auth: SpanSpec[] = [];
    const web: SpanSpec[] = [];
    for (let i = 0; i < 30; i++) auth.push(request('/login', 'POST', i === 0 ? 401 : 200, at(30 + (i % 10), i * 100)));
    for (let i = 0; i < 120; i++) {
      const caller = { address: `198.51.100.${i + 1}`, user: `user-${hex(6)}`, enduser: `enduser-${hex(6)}`, bearer: hex(20), token: hex(20) };
      IDENTITIES.push(caller.address, caller.user, caller.enduser, caller.bearer, caller.token);
      const attributes = { 'client.address': caller.address, 'user.id': caller.user, 'enduser.id': caller.enduser, 'http.request.header.authorization': `Bearer ${caller.bearer}`, 'url.query': `token=${caller.token}` };
      auth.push(request('/login', 'POST', i < 90 ? 401 : 200, at(40 + (i % 10), i * 100), attributes));
    }
    surgeTrace = auth[30]!.traceId;
    for (const from of [30, 40]) for (let i = 0; i < 40; i++) auth.push(request('/profile', 'GET', i < 10 ? 403 : 200, at(from + (i % 10), 50 + i * 100)));
    // raw URL names, as Sentry names transactions when it knows no route
    for (let i = 0; i < 25; i++) {
      const [segment, token] = [hex(16), hex(20)];
      IDENTITIES.push(segment, token);
      web.push(span('server', at(40 + (i % 10), 70 + i * 100), 15, { name: `/reset/${segment}/confirm?token=${token}`, attributes: { 'http.request.method': 'GET', 'http.response.status_code': 200, 'url.full': `https://auth.example.test/reset/${segment}/confirm?token=${token}` } }));
    }
    await send(projects.surges, { auth, web });
    await eventually(async () => ((await planted()) >= 255 ? true : undefined), 'the 255 requests counted per endpoint');
  });

  test('the surging endpoints against the previous window, not the steady one', async () => {
    const reply = await reader.get(`/v1/endpoints/surges?${window()}`);
    expect(reply.status).toBe(200);
    expect(surgesOf(reply.body)).toEqual(['web GET /reset/*/confirm', 'auth POST /login']);
    const none = { count: 0, observed: 0, baseline: 0 };
    const [reset, login] = reply.body.data;
    expect(login).toEqual({
      service: 'auth',
      method: 'POST',
      route: '/login',
      project_ids: [projects.surges.id],
      requests: 120,
      baseline_requests: 30,
      ratio: 4,
      shares: { '4xx': { count: 90, observed: 0.75, baseline: 0.0333 }, '401': { count: 90, observed: 0.75, baseline: 0.0333 }, '403': none, '429': none },
      reasons: [
        expect.stringContaining('volume: 120 requests against 30 in the previous window'),
        // share reasons in the order of the shares: 4xx, 401, 403, 429
        expect.stringContaining('4xx share: 0.75 against 0.0333'),
        expect.stringContaining('401 share: 0.75 against 0.0333'),
      ],
    });
    expect(reset).toEqual({
      service: 'web',
      method: 'GET',
      route: '/reset/*/confirm',
      project_ids: [projects.surges.id],
      requests: 25,
      baseline_requests: 0,
      ratio: 25,
      shares: { '4xx': none, '401': none, '403': none, '429': none },
      reasons: [expect.stringContaining('volume: 25 requests against 0 in the previous window')],
    });

    const auth = await reader.get(`/v1/endpoints/surges?${window()}&service=auth`);
    expect(surgesOf(auth.body)).toEqual(['auth POST /login']);
    // the baseline window against the empty one before it: every endpoint with 20 requests is a volume surge
    const before = await reader.get(`/v1/endpoints/surges?project=${projects.surges.id}&${minutes(30, 40)}`);
    expect(surgesOf(before.body)).toEqual(['auth GET /profile', 'auth POST /login']);
  });

  test('no caller identity reaches the answer or the stored rollups, though the spans carried them', async () => {
    const answer = JSON.stringify((await reader.get(`/v1/endpoints/surges?${window()}`)).body);
    const stored = JSON.stringify(await mongoose.connection.db!.collection('endpoint_rollups').find().toArray());
    expect(await planted()).toBe(255);
    expect(IDENTITIES).toHaveLength(120 * 5 + 25 * 2);
    expect(IDENTITIES.filter((value) => answer.includes(value))).toEqual([]);
    expect(IDENTITIES.filter((value) => stored.includes(value))).toEqual([]);
    // the span itself kept them: the rollups left them out
    const trace = await reader.get(`/v1/traces/${surgeTrace}`);
    expect(trace.status).toBe(200);
    expect(JSON.stringify(trace.body)).toContain(IDENTITIES[0]);
  });
});

describe('every span view', () => {
  const VIEWS = ['/v1/traffic', '/v1/queues', '/v1/database/slow-queries', '/v1/database/query-patterns', '/v1/endpoints/surges'];
  const rowsOf = (body: { series?: unknown[]; data?: unknown[] }) => body.series ?? body.data;
  const withoutRequestId = ({ request_id: _, ...rest }: Record<string, unknown>) => rest;

  test('another organisation sees none of it, and naming one of our projects answers exactly like a missing project', async () => {
    const own = await createProject(stranger);
    for (const path of VIEWS) {
      const ours = await reader.get(`${path}?${minutes(0, 60)}`);
      expect(ours.status).toBe(200);
      expect(rowsOf(ours.body)!.length).toBeGreaterThan(0);
      const theirs = await stranger.client.get(`${path}?${minutes(0, 60)}`);
      expect(theirs.status).toBe(200);
      expect(rowsOf(theirs.body)).toEqual([]);
      const ownProject = await stranger.client.get(`${path}?project=${own.id}&${minutes(0, 60)}`);
      expect(ownProject.status).toBe(200);
      expect(rowsOf(ownProject.body)).toEqual([]);

      const missing = await stranger.client.get(`${path}?project=${hex(12)}&${minutes(0, 60)}`);
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('not_found');
      for (const project of Object.values(projects)) {
        for (const named of [`project=${project.id}`, `project=${own.id}&project=${project.id}`]) {
          const reply = await stranger.client.get(`${path}?${named}&${minutes(0, 60)}`);
          expect([path, reply.status, withoutRequestId(reply.body)]).toEqual([path, 404, withoutRequestId(missing.body)]);
        }
      }
    }
  });

  test('need credentials, and refuse a backwards window or an unknown parameter with the contract’s error body', async () => {
    for (const path of VIEWS) {
      const anonymous = await h.api.get(`${path}?${minutes(0, 60)}`);
      expect([path, anonymous.status, anonymous.body.code]).toEqual([path, 401, 'unauthenticated']);
      const backwards = await reader.get(`${path}?from=${at(10)}&to=${at(0)}`);
      expect([path, backwards.status]).toEqual([path, 400]);
      expect(backwards.body).toMatchObject({ code: 'validation_failed', message: expect.any(String), request_id: expect.any(String), details: [{ path: 'query.from', message: 'after to' }] });
      const unknown = await reader.get(`${path}?colour=blue`);
      expect([path, unknown.status, unknown.body.code]).toEqual([path, 400, 'invalid_request']);
    }
  });
});
