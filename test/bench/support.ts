/**
 * What both benchmarks need: a fresh database on the local store, the service started from dist/ (all
 * roles in one process, or api, ingest and workers as processes of their own), an account and project
 * to send to, the record mix that fills the store, and the timed reads through the API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { connectMongo, ensureIndexes } from '../../src/shared/clients/mongo.js';
import { loadConfig, type Config } from '../../src/shared/config.js';
import { ensureLocalServices, type LocalServices } from '../../src/shared/local-services.js';
import { createLogger } from '../../src/shared/logger.js';
import { PendingCount } from '../../src/shared/telemetry/storage.js';
import { createApiKey, signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, nanos, projectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { deleteKeys } from '../support/redis-keys.js';

export const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** A comma-separated list from the environment, or the default. */
export const listFromEnv = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map((value) => value.trim()).filter(Boolean);
export const numberFromEnv = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Store extends LocalServices {
  /** MONGO_URL of the fresh database. */
  databaseUrl: string;
  /** Drops the database and disconnects the bench's own connection. */
  drop(): Promise<void>;
}

/**
 * A fresh database on the local store (`backend` picks FerretDB's backend, as LOCAL_STORE does), with the
 * service's indexes made before any service process starts, so its processes do not race to make them.
 * The bench keeps a Mongoose connection to it for counting what the workers stored. With `keep`, the
 * database is not dropped first; `local` overrides the settings the local servers are found or started by
 * (DATA_DIR, LOCAL_POSTGRES_URL).
 */
export async function freshDatabase(
  database: string,
  backend: 'sqlite' | 'postgresql' | 'auto',
  gin: boolean,
  { keep = false, local = {} }: { keep?: boolean; local?: Partial<Pick<Config, 'DATA_DIR' | 'LOCAL_POSTGRES_URL'>> } = {},
): Promise<Store> {
  const urls = await ensureLocalServices({ ...loadConfig(), MONGO_URL: undefined, LOCAL_STORE: backend, ...local });
  const databaseUrl = urls.mongoUrl.replace(/\/[^/]*$/, `/${database}`);
  await connectMongo(databaseUrl, createLogger('silent'));
  // `keep`: reuse what an earlier run stored there (test/bench/reads.ts times reads of one seeding many times)
  if (!keep) await mongoose.connection.dropDatabase();
  const ferretdbPostgresUrl = gin ? urls.ferretdbPostgresUrl : undefined;
  await ensureIndexes(ferretdbPostgresUrl);
  return {
    ...urls,
    ...(ferretdbPostgresUrl ? { ferretdbPostgresUrl } : { ferretdbPostgresUrl: undefined }),
    databaseUrl,
    drop: async () => {
      await mongoose.connection.dropDatabase().catch(() => {});
      await mongoose.disconnect();
    },
  };
}

export type Role = 'all' | 'api' | 'ingest' | 'workers';

export interface Service {
  /** Each process, by role. */
  processes: Map<Role, ChildProcess>;
  api: Client;
  ingestUrl: string;
  prefix: string;
  queue: Queue;
  redis: Redis;
  stop(): Promise<void>;
}

/**
 * The built service (`node dist/main.js`) on `store`'s database with a Redis prefix of its own: one
 * process per role in `roles` (`['all']` is `npm start`, without ROLE; api, ingest and workers is production's split).
 * Ready once the API and ingest answer /readyz and a worker listens on the telemetry queue. `stop`
 * ends the processes and deletes every Redis key under the prefix.
 */
export async function startService(store: Store, roles: Role[], env: Record<string, string> = {}, nodeArgs: Partial<Record<Role, string[]>> = {}): Promise<Service> {
  const [apiPort, ingestPort] = [await freePort(), await freePort()];
  const prefix = `slk_bench_${hex(4)}`;
  const processes = new Map<Role, ChildProcess>();
  for (const role of roles) {
    const inherited = { ...process.env };
    delete inherited.ROLE;
    const child = spawn(process.execPath, [...(nodeArgs[role] ?? []), 'dist/main.js'], {
      env: {
        ...inherited,
        NODE_OPTIONS: '',
        ...(role !== 'all' && { ROLE: role }),
        MONGO_URL: store.databaseUrl,
        REDIS_URL: store.redisUrl,
        FERRETDB_POSTGRES_URL: store.ferretdbPostgresUrl ?? '',
        REDIS_PREFIX: prefix,
        PORT: String(apiPort),
        INGEST_PORT: String(ingestPort),
        WEB_PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        DASHBOARD_ORIGIN,
        INGEST_RATE_LIMIT_PER_SECOND: '1000000',
        RATE_LIMIT_API: '1000000',
        RATE_LIMIT_REGISTER: '1000',
        ...env,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    processes.set(role, child);
  }
  const api = new Client(`http://127.0.0.1:${apiPort}`);
  const ingestUrl = `http://127.0.0.1:${ingestPort}`;
  const redis = new Redis(store.redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue('telemetry', { connection: redis, prefix });
  const stop = async () => {
    await queue.close();
    for (const child of processes.values()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await deleteKeys(redis, `${prefix}:*`);
    redis.disconnect();
  };
  const answers = (url: string) => fetch(url).then((r) => r.ok).catch(() => false);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const ready = (await answers(`${api.baseUrl}/readyz`)) && (await answers(`${ingestUrl}/readyz`)) && (await queue.getWorkersCount()) > 0;
    if (ready) break;
    const exited = [...processes].find(([, child]) => child.exitCode !== null);
    if (Date.now() > deadline || exited) {
      await stop();
      throw new Error(exited ? `the service's ${exited[0]} process exited with ${exited[1].exitCode}` : 'the service did not become ready in 90 s');
    }
    await sleep(250);
  }
  return { processes, api, ingestUrl, prefix, queue, redis, stop };
}

export interface Target {
  apiKey: string;
  projectId: string;
  projectNumber: number;
  publicKey: string;
}

/** A new organisation, signed up through the API as a user would, with an API key and its first project. */
export async function setUp(service: Service): Promise<Target> {
  const account = await signUp({ api: service.api } as Harness, 'bench');
  const key = await createApiKey(account);
  const project = await projectWithDsn(account, service.ingestUrl);
  return { apiKey: key.secret, projectId: project.id, projectNumber: project.number, publicKey: project.publicKey };
}

/** Shares out of every 100 records of what fills the store. */
export interface Mix {
  errors: number;
  spans: number;
  logs: number;
  metrics: number;
}

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
const POINTS_PER_REQUEST = 100;
/** The metric the fill reports (a gauge per service and route), which the metric series read asks for. */
export const FILL_METRIC = 'bench.request.duration';

/** The filler of one store: the trace ids it sent last (to open) and how many records it numbered. */
export class Filler {
  readonly recentTraces: string[] = [];
  private sequence = 0;
  /** The next millisecond a metric point may take: a point is its series and time, so one sent twice is stored once. */
  private nextPointMs = 0;

  constructor(
    readonly target: Target,
    readonly ingestUrl: string,
    readonly mix: Mix,
  ) {}

  /** The requests that carry `records` more records of the mix. */
  requestsFor(records: number): (() => Promise<Response>)[] {
    const { target, ingestUrl, mix } = this;
    const total = mix.errors + mix.spans + mix.logs + mix.metrics;
    const errors = Math.round((records * mix.errors) / total);
    const spans = Math.round((records * mix.spans) / total);
    const metrics = Math.round((records * mix.metrics) / total);
    const logs = records - errors - spans - metrics;
    const requests: (() => Promise<Response>)[] = [];
    const envelopeUrl = `${ingestUrl}/api/${target.projectNumber}/envelope/?sentry_key=${target.publicKey}`;
    const otlp = (signal: string, body: unknown) => () =>
      fetch(`${ingestUrl}/v1/${signal}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${target.publicKey}` } });
    for (let i = 0; i < errors; i++) {
      const n = this.sequence++;
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
        if (s % 5 === 0) this.recentTraces.push(hex(16));
        const root = s % 5 === 0;
        spanList.push({
          traceId: this.recentTraces.at(-1)!,
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
      if (this.recentTraces.length > 1000) this.recentTraces.splice(0, this.recentTraces.length - 1000);
      requests.push(otlp('traces', { resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${sent % 5}` } }] }, scopeSpans: [{ spans: spanList }] }] }));
    }
    for (let sent = 0; sent < logs; sent += LOGS_PER_REQUEST) {
      const count = Math.min(LOGS_PER_REQUEST, logs - sent);
      const now = Date.now();
      const logRecords = Array.from({ length: count }, (_, l) => {
        const n = this.sequence++;
        return { timeUnixNano: nanos(now + l), severityNumber: 9 + (n % 3) * 4, body: { stringValue: `request ${n} for route ${n % 20} took ${n % 977} ms` } };
      });
      requests.push(otlp('logs', { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'svc-logs' } }] }, scopeLogs: [{ logRecords }] }] }));
    }
    for (let sent = 0; sent < metrics; sent += POINTS_PER_REQUEST) {
      const count = Math.min(POINTS_PER_REQUEST, metrics - sent);
      // requests built within one millisecond would otherwise repeat each other's points
      const start = Math.max(Date.now(), this.nextPointMs);
      this.nextPointMs = start + count;
      // one point per series per request: series are a service and a route, points a millisecond apart
      const dataPoints = Array.from({ length: count }, (_, p) => ({
        timeUnixNano: nanos(start + p),
        asDouble: 5 + ((sent + p) % 97),
        attributes: [{ key: 'http.route', value: { stringValue: `/api/route-${p % 20}` } }],
      }));
      requests.push(
        otlp('metrics', {
          resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${sent % 5}` } }] }, scopeMetrics: [{ metrics: [{ name: FILL_METRIC, unit: 'ms', gauge: { dataPoints } }] }] }],
        }),
      );
    }
    return requests;
  }
}

/** Sends the requests, `concurrency` at a time, and fails unless every one was accepted. */
export async function send(requests: (() => Promise<Response>)[], concurrency: number): Promise<void> {
  let next = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < requests.length) {
        const response = await requests[next++]!();
        await response.arrayBuffer();
        if (response.status !== 200) refused++;
      }
    }),
  );
  if (refused > 0) throw new Error(`${refused} requests were not accepted`);
}

/**
 * Waits until the workers have finished every batch in the queue and counted every error event they
 * stored into its issue (a job completes before that: see placeErrorBatches); a failed batch ends the bench.
 */
export async function drained(queue: Queue, timeoutMs = 30 * 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'failed');
    if (counts.failed) throw new Error(`${counts.failed} batches failed; see the service's log`);
    if (!counts.waiting && !counts.active && !counts.delayed && !counts.prioritized && (await PendingCount.countDocuments()) === 0) return;
    if (Date.now() > deadline) throw new Error(`the telemetry queue did not drain in ${timeoutMs / 1000} s`);
    await sleep(100);
  }
}

/** Records are sent in chunks of this many, each stored before the next is sent, so Redis never holds a backlog. */
const CHUNK = 10_000;

/** Sends `records` more records of the filler's mix and waits until the workers have stored them. */
export async function fill(filler: Filler, queue: Queue, records: number, concurrency: number): Promise<void> {
  for (let done = 0; done < records; done += CHUNK) {
    await send(filler.requestsFor(Math.min(CHUNK, records - done)), concurrency);
    await drained(queue);
  }
}

/** The finished telemetry batches created since `since` (the queue keeps the last thousand). */
export async function finishedBatches(queue: Queue, since: number) {
  const jobs = await queue.getJobs(['completed'], 0, 999);
  return jobs.filter((job) => job.timestamp >= since && job.processedOn && job.finishedOn);
}

/** How long the workers took over each batch (of every kind, and per kind) created since `since`. */
export async function batchTimes(queue: Queue, since: number): Promise<Map<string, number[]>> {
  const times = new Map<string, number[]>([['all', []]]);
  for (const job of await finishedBatches(queue, since)) {
    const took = job.finishedOn! - job.processedOn!;
    times.get('all')!.push(took);
    times.set(job.name, [...(times.get(job.name) ?? []), took]);
  }
  return times;
}

export interface Latency {
  p50: number;
  p95: number;
}

/** Every read the benchmarks time, by name: the path it asks for, given the issues and traces to open. */
function readPaths(target: Target, issues: { id: string }[], traces: string[]): Record<string, (i: number) => string> {
  const pick = <T>(values: T[], i: number) => values[(i * 7919) % values.length]!;
  const project = `project=${target.projectId}`;
  return {
    'issue list': () => `/v1/issues?${project}&limit=50`,
    'one issue': (i) => `/v1/issues/${pick(issues, i).id}`,
    'events of an issue': (i) => `/v1/issues/${pick(issues, i).id}/events?limit=50`,
    'one trace': (i) => `/v1/traces/${pick(traces, i)}`,
    'user list': () => `/v1/users?${project}&limit=50`,
    'trace list': () => `/v1/traces?${project}&limit=50`,
    services: () => `/v1/services?${project}`,
    'service map': () => `/v1/services/map?${project}`,
    'log search': (i) => `/v1/logs?${project}&q=took%20${(i * 37) % 977}&limit=50`,
    'log patterns': () => `/v1/logs/patterns?${project}`,
    'slow queries': () => `/v1/database/slow-queries?${project}`,
    traffic: () => `/v1/traffic?${project}`,
    'log surges': () => `/v1/logs/surges?${project}`,
    'metric series': () => `/v1/metrics/series?${project}&name=${FILL_METRIC}`,
  };
}

/** p50/p95 of `repeats` calls of each read in `names`, one at a time, with the target's API key. */
export async function timeReads(service: Service, filler: Filler, names: string[], repeats: number): Promise<Record<string, Latency>> {
  const { target } = filler;
  const api = service.api.with({ bearer: target.apiKey });
  const issues = (await api.get(`/v1/issues?project=${target.projectId}&sort=events&limit=${HOT_ISSUES}`)).body.data as { id: string }[];
  const reads = readPaths(target, issues, filler.recentTraces);
  const figures: Record<string, Latency> = {};
  for (const name of names) {
    const path = reads[name];
    if (!path) throw new Error(`no read named "${name}"`);
    const times: number[] = [];
    for (let i = 0; i < repeats; i++) {
      const started = performance.now();
      const reply = await api.get(path(i));
      times.push(performance.now() - started);
      if (reply.status !== 200) throw new Error(`${name}: ${reply.status} ${reply.text}`);
    }
    figures[name] = { p50: percentile(times, 50), p95: percentile(times, 95) };
  }
  return figures;
}

/** Writes `bench-results/<name>.json`. */
export function writeResults(name: string, results: unknown): string {
  mkdirSync('bench-results', { recursive: true });
  const path = `bench-results/${name}.json`;
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
