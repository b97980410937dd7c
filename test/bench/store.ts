/**
 * `npm run bench:store`: how the local store holds up as it fills. For each backend it starts the
 * service (`node dist/main.js`, every role in one process) on a fresh database, sends telemetry
 * through the ingest service as SDKs would (Sentry envelopes with one error event each, OTLP/JSON
 * span and log batches) until the store holds each size in BENCH_SIZES, and at each size prints:
 *
 * - the store rate: records per second from the first request of a fixed probe load (BENCH_PROBE
 *   records) until the workers have stored all of it;
 * - the workers' batch time p50/p95 during that probe (BullMQ's processedOn → finishedOn);
 * - p50/p95 latency of reads through the API: the issue list, one issue, the events of an
 *   issue, one trace with its spans, the end-user list, the trace list, the services, the service
 *   map, a log search, the log patterns, the slow queries, the traffic series and the log surges.
 *
 * Backends (BENCH_BACKENDS): `sqlite` and `postgresql` are FerretDB on that backend as it comes;
 * `postgresql+gin` adds the GIN expression indexes and the table upkeep of
 * src/shared/clients/ferretdb-indexes.ts, as `npm start` does. A backend stops growing once its load
 * time passes BENCH_BUDGET_MINUTES, and the table says so. Figures go to stdout and to
 * bench-results/store-<backends>.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { connectMongo, ensureIndexes } from '../../src/shared/clients/mongo.js';
import { loadConfig } from '../../src/shared/config.js';
import { ensureLocalServices } from '../../src/shared/local-services.js';
import { createLogger } from '../../src/shared/logger.js';
import { Client, sessionCookieOf } from '../support/http.js';
import { envelope, errorEvent } from '../support/factories/telemetry.js';

const backends = (process.env.BENCH_BACKENDS ?? 'sqlite,postgresql,postgresql+gin').split(',');
const sizes = (process.env.BENCH_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const PROBE = Number(process.env.BENCH_PROBE ?? 10_000);
const BUDGET_MS = Number(process.env.BENCH_BUDGET_MINUTES ?? 30) * 60_000;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const READ_REPEATS = Number(process.env.BENCH_READ_REPEATS ?? 20);
/** Records are sent in chunks of this many, each stored before the next is sent, so Redis never holds a backlog. */
const CHUNK = 10_000;

/** The mix of what is sent, per 100 records: error events, spans (in traces of 5), logs. */
const MIX = { errors: 20, spans: 60, logs: 20 };
/**
 * Errors are spread as they are in the wild, a few issues taking most events: half go to HOT_ISSUES,
 * the rest over the others. The reads of one issue and of its events open the busiest issues, whose
 * newest page of events is full from the first size on, so each size compares answers of one size.
 */
const ISSUES = 200;
const HOT_ISSUES = 10;
const END_USERS = 1000;
const SPANS_PER_REQUEST = 100;
const LOGS_PER_REQUEST = 100;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const nanos = (ms: number) => String(BigInt(Math.round(ms)) * 1_000_000n);
const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Service {
  child: ChildProcess;
  api: Client;
  ingestUrl: string;
  queue: Queue;
  redis: Redis;
  stop(): Promise<void>;
}

/** `ferretdbPostgresUrl`: the service keeps up FerretDB's GIN indexes and tables there, as `npm start` does for its local store. */
async function startService(mongoUrl: string, redisUrl: string, ferretdbPostgresUrl?: string): Promise<Service> {
  const [apiPort, ingestPort] = [await freePort(), await freePort()];
  const prefix = `slk_bench_${hex(4)}`;
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: {
      ...process.env,
      MONGO_URL: mongoUrl,
      REDIS_URL: redisUrl,
      FERRETDB_POSTGRES_URL: ferretdbPostgresUrl ?? '',
      REDIS_PREFIX: prefix,
      PORT: String(apiPort),
      INGEST_PORT: String(ingestPort),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      INGEST_RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_API: '1000000',
      RATE_LIMIT_REGISTER: '1000',
      PASSWORD_HASH_COST: '12',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const api = new Client(`http://127.0.0.1:${apiPort}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await api.get('/readyz').catch(() => undefined);
    const ingestReady = await fetch(`http://127.0.0.1:${ingestPort}/readyz`).then((r) => r.ok).catch(() => false);
    if (ready?.status === 200 && ingestReady) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('the service did not become ready');
    await new Promise((r) => setTimeout(r, 250));
  }
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('telemetry', { connection: redis, prefix });
  return {
    child,
    api,
    ingestUrl: `http://127.0.0.1:${ingestPort}`,
    queue,
    redis,
    stop: async () => {
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
      redis.disconnect();
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

interface Target {
  apiKey: string;
  projectId: string;
  projectNumber: number;
  publicKey: string;
}

async function setUp(service: Service): Promise<Target> {
  const email = `bench-${hex(4)}@example.test`;
  const password = 'correct horse battery staple';
  await service.api.post('/v1/auth/register', { email, password });
  const login = await service.api.post('/v1/auth/login', { email, password });
  const dashboard = service.api.with({ cookie: sessionCookieOf(login.headers)!, origin: 'http://localhost:3000' });
  const key = await dashboard.post('/v1/api-keys', { name: 'bench' });
  const project = await dashboard.post('/v1/projects', { name: 'bench' });
  const dsns = await dashboard.get(`/v1/projects/${project.body.id}/dsns`);
  return { apiKey: key.body.secret, projectId: project.body.id, projectNumber: project.body.number, publicKey: dsns.body.data[0].public_key };
}

/** The last thousand trace ids sent (to open), and how many records were numbered, for the backend being measured. */
const recentTraces: string[] = [];
let sequence = 0;

/** The requests that carry `records` more records of the mix. */
function requestsFor(target: Target, ingestUrl: string, records: number): (() => Promise<Response>)[] {
  const requests: (() => Promise<Response>)[] = [];
  const errors = Math.round((records * MIX.errors) / 100);
  const spans = Math.round((records * MIX.spans) / 100);
  const logs = records - errors - spans;
  const envelopeUrl = `${ingestUrl}/api/${target.projectNumber}/envelope/?sentry_key=${target.publicKey}`;
  const otlp = { 'content-type': 'application/json', authorization: `Bearer ${target.publicKey}` };
  for (let i = 0; i < errors; i++) {
    const n = sequence++;
    const kind = n % 2 === 0 ? (n / 2) % HOT_ISSUES : HOT_ISSUES + (((n - 1) / 2) % (ISSUES - HOT_ISSUES));
    const event = errorEvent(
      { user: { id: `user-${n % END_USERS}`, email: `user-${n % END_USERS}@example.test` }, contexts: { trace: { trace_id: hex(16), span_id: hex(8) } }, tags: { region: `eu-${n % 3}` } },
      { type: `BenchError${kind}`, value: `failure ${kind} while handling order ${n}`, fn: `handler${kind}` },
    );
    requests.push(() => fetch(envelopeUrl, { method: 'POST', body: envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]) }));
  }
  for (let sent = 0; sent < spans; sent += SPANS_PER_REQUEST) {
    const count = Math.min(SPANS_PER_REQUEST, spans - sent);
    const now = Date.now();
    const spanList = [];
    for (let s = 0; s < count; s++) {
      if (s % 5 === 0) recentTraces.push(hex(16));
      const traceId = recentTraces.at(-1)!;
      const root = s % 5 === 0;
      spanList.push({
        traceId,
        spanId: hex(8),
        ...(!root && { parentSpanId: hex(8) }),
        name: root ? `GET /api/items/{id}` : `SELECT items ${s % 5}`,
        kind: root ? 2 : 3,
        startTimeUnixNano: nanos(now + s),
        endTimeUnixNano: nanos(now + s + 5 + (s % 40)),
        attributes: root
          ? [{ key: 'http.route', value: { stringValue: '/api/items/{id}' } }]
          : [
              { key: 'db.system', value: { stringValue: 'postgresql' } },
              { key: 'db.query.text', value: { stringValue: `SELECT * FROM items_${s % 5} WHERE id = ${sent + s}` } },
            ],
        status: { code: s % 50 === 0 ? 2 : 0 },
      });
    }
    if (recentTraces.length > 1000) recentTraces.splice(0, recentTraces.length - 1000);
    const body = JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${sent % 5}` } }] }, scopeSpans: [{ spans: spanList }] }] });
    requests.push(() => fetch(`${ingestUrl}/v1/traces`, { method: 'POST', body, headers: otlp }));
  }
  for (let sent = 0; sent < logs; sent += LOGS_PER_REQUEST) {
    const count = Math.min(LOGS_PER_REQUEST, logs - sent);
    const now = Date.now();
    const logRecords = Array.from({ length: count }, (_, l) => {
      const n = sequence++;
      return { timeUnixNano: nanos(now + l), severityNumber: 9 + (n % 3) * 4, body: { stringValue: `request ${n} for route ${n % 20} took ${n % 977} ms` } };
    });
    const body = JSON.stringify({ resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc-logs' } }] }, scopeLogs: [{ logRecords }] }] });
    requests.push(() => fetch(`${ingestUrl}/v1/logs`, { method: 'POST', body, headers: otlp }));
  }
  return requests;
}

async function send(requests: (() => Promise<Response>)[]): Promise<void> {
  let next = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const response = await requests[next++]!();
        await response.arrayBuffer();
        if (response.status !== 200) refused++;
      }
    }),
  );
  if (refused > 0) throw new Error(`${refused} requests were not accepted`);
}

/** Waits until the workers have finished every batch in the queue. */
async function drained(queue: Queue): Promise<void> {
  for (;;) {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
    if (counts.failed) throw new Error(`${counts.failed} batches failed; see the service's log`);
    if (!counts.waiting && !counts.active && !counts.delayed && !counts.prioritized) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function load(service: Service, target: Target, records: number): Promise<void> {
  for (let done = 0; done < records; done += CHUNK) {
    await send(requestsFor(target, service.ingestUrl, Math.min(CHUNK, records - done)));
    await drained(service.queue);
  }
}

/** How long the workers took over each batch (of every kind, and per kind) created since `since`. */
async function batchTimes(queue: Queue, since: number): Promise<Map<string, number[]>> {
  const jobs = await queue.getJobs(['completed'], 0, 999);
  const times = new Map<string, number[]>([['all', []]]);
  for (const job of jobs.filter((j) => j.timestamp >= since && j.processedOn && j.finishedOn)) {
    const took = job.finishedOn! - job.processedOn!;
    times.get('all')!.push(took);
    times.set(job.name, [...(times.get(job.name) ?? []), took]);
  }
  return times;
}

async function timeReads(service: Service, target: Target): Promise<Record<string, { p50: number; p95: number }>> {
  const api = service.api.with({ bearer: target.apiKey });
  const issues = (await api.get(`/v1/issues?project=${target.projectId}&sort=events&limit=${HOT_ISSUES}`)).body.data as { id: string }[];
  const pick = <T>(values: T[], i: number) => values[(i * 7919) % values.length]!;
  const reads: Record<string, (i: number) => string> = {
    'issue list': () => `/v1/issues?project=${target.projectId}&limit=50`,
    'one issue': (i) => `/v1/issues/${pick(issues, i).id}`,
    'events of an issue': (i) => `/v1/issues/${pick(issues, i).id}/events?limit=50`,
    'one trace': (i) => `/v1/traces/${pick(recentTraces, i)}`,
    'user list': () => `/v1/users?project=${target.projectId}&limit=50`,
    'trace list': () => `/v1/traces?project=${target.projectId}&limit=50`,
    services: () => `/v1/services?project=${target.projectId}`,
    'service map': () => `/v1/services/map?project=${target.projectId}`,
    'log search': (i) => `/v1/logs?project=${target.projectId}&q=took%20${(i * 37) % 977}&limit=50`,
    'log patterns': () => `/v1/logs/patterns?project=${target.projectId}`,
    'slow queries': () => `/v1/database/slow-queries?project=${target.projectId}`,
    traffic: () => `/v1/traffic?project=${target.projectId}`,
    'log surges': () => `/v1/logs/surges?project=${target.projectId}`,
  };
  const figures: Record<string, { p50: number; p95: number }> = {};
  for (const [name, path] of Object.entries(reads)) {
    const times: number[] = [];
    for (let i = 0; i < READ_REPEATS; i++) {
      const started = performance.now();
      const reply = await api.get(path(i));
      times.push(performance.now() - started);
      if (reply.status !== 200) throw new Error(`${name}: ${reply.status} ${reply.text}`);
    }
    figures[name] = { p50: percentile(times, 50), p95: percentile(times, 95) };
  }
  return figures;
}

interface Checkpoint {
  size: number;
  storeRate: number;
  batchMs: { p50: number; p95: number; batches: number };
  byKind: Record<string, { p50: number; p95: number; batches: number }>;
  reads: Record<string, { p50: number; p95: number }>;
}

interface BackendResult {
  backend: string;
  checkpoints: Checkpoint[];
  stopped?: string;
}

async function benchBackend(backend: string): Promise<BackendResult> {
  const base = loadConfig();
  const store = backend === 'sqlite' ? 'sqlite' : 'postgresql';
  const urls = await ensureLocalServices({ ...base, MONGO_URL: undefined, LOCAL_STORE: store });
  const database = `slk_bench_${backend.replace(/\W/g, '_')}`;
  const mongoUrl = urls.mongoUrl.replace(/\/[^/]*$/, `/${database}`);
  await connectMongo(mongoUrl, createLogger('silent'));
  await mongoose.connection.dropDatabase();
  const ferretdbPostgresUrl = backend === 'postgresql+gin' ? urls.ferretdbPostgresUrl : undefined;
  await ensureIndexes(ferretdbPostgresUrl);
  const service = await startService(mongoUrl, urls.redisUrl, ferretdbPostgresUrl);
  const result: BackendResult = { backend, checkpoints: [] };
  recentTraces.length = 0;
  sequence = 0;
  const began = performance.now();
  try {
    const target = await setUp(service);
    let stored = 0;
    for (const size of sizes) {
      const grow = size - PROBE - stored;
      if (grow > 0) {
        // the time this growth would take at the last probe's rate, against what is left of the budget
        const last = result.checkpoints.at(-1);
        const left = BUDGET_MS - (performance.now() - began);
        if (last && (grow / last.storeRate) * 1000 > left) {
          result.stopped = `growing to ${size} records would take about ${Math.round(grow / last.storeRate / 60)} min at ${Math.round(last.storeRate)} records/s, past the ${BUDGET_MS / 60_000}-min budget`;
          break;
        }
        await load(service, target, grow);
      }
      const since = Date.now();
      const started = performance.now();
      await load(service, target, PROBE);
      const seconds = (performance.now() - started) / 1000;
      stored = size;
      const times = await batchTimes(service.queue, since);
      const batches = times.get('all')!;
      const checkpoint: Checkpoint = {
        size,
        storeRate: PROBE / seconds,
        batchMs: { p50: percentile(batches, 50), p95: percentile(batches, 95), batches: batches.length },
        byKind: Object.fromEntries([...times].filter(([kind]) => kind !== 'all').map(([kind, took]) => [kind, { p50: percentile(took, 50), p95: percentile(took, 95), batches: took.length }])),
        reads: await timeReads(service, target),
      };
      result.checkpoints.push(checkpoint);
      const kinds = Object.entries(checkpoint.byKind).map(([kind, t]) => `${kind} ${t.batches}× p50 ${t.p50} ms`).join(', ');
      console.log(`${backend} @ ${size}: ${Math.round(checkpoint.storeRate)} records/s; batches p50 ${checkpoint.batchMs.p50} ms, p95 ${checkpoint.batchMs.p95} ms (${kinds}); ${Math.round((performance.now() - began) / 1000)} s so far`);
    }
  } finally {
    await service.stop();
    await mongoose.connection.dropDatabase().catch(() => {});
    await mongoose.disconnect();
  }
  return result;
}

function table(results: BackendResult[]): string {
  const readNames = ['issue list', 'one issue', 'events of an issue', 'one trace', 'user list', 'trace list', 'services', 'service map', 'log search', 'log patterns'];
  const ms = (value: number) => (Number.isNaN(value) ? '–' : value < 10 ? value.toFixed(1) : Math.round(value).toString());
  const lines = [
    `| backend | records | store rate (records/s) | batch p50 / p95 (ms) | ${readNames.map((name) => `${name} p50 / p95 (ms)`).join(' | ')} |`,
    `|---|---:|---:|---:|${readNames.map(() => '---:').join('|')}|`,
  ];
  for (const result of results) {
    for (const c of result.checkpoints) {
      lines.push(`| ${result.backend} | ${c.size.toLocaleString('en')} | ${Math.round(c.storeRate)} | ${ms(c.batchMs.p50)} / ${ms(c.batchMs.p95)} | ${readNames.map((name) => `${ms(c.reads[name]!.p50)} / ${ms(c.reads[name]!.p95)}`).join(' | ')} |`);
    }
    if (result.stopped) lines.push(`| ${result.backend} | stopped | ${result.stopped} | | ${readNames.map(() => '').join(' | ')} |`);
  }
  return lines.join('\n');
}

function verdicts(results: BackendResult[]): string[] {
  const gin = results.find((result) => result.backend === 'postgresql+gin');
  const first = gin?.checkpoints[0];
  const last = gin?.checkpoints.at(-1);
  if (!gin || !first || !last || first === last) return [];
  const out = [`postgresql+gin, ${first.size} → ${last.size} records: store rate ×${(last.storeRate / first.storeRate).toFixed(2)} (target ≥ 0.8)`];
  for (const [name, read] of Object.entries(last.reads)) out.push(`  ${name}: p50 ×${(read.p50 / first.reads[name]!.p50).toFixed(2)}, p95 ×${(read.p95 / first.reads[name]!.p95).toFixed(2)} (target ≤ 2)`);
  return out;
}

async function main() {
  const results: BackendResult[] = [];
  for (const backend of backends) results.push(await benchBackend(backend));
  const text = table(results);
  console.log(`\n${text}\n`);
  for (const line of verdicts(results)) console.log(line);
  mkdirSync('bench-results', { recursive: true });
  writeFileSync(`bench-results/store-${backends.join('-').replace(/\W/g, '_')}.json`, `${JSON.stringify({ at: new Date().toISOString(), sizes, probe: PROBE, mix: MIX, results }, null, 2)}\n`);
}

await main();
