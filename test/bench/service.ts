/**
 * `npm run bench`: the whole service under load, next to the ceilings it runs under. It builds the
 * service and starts api, ingest and workers as processes of their own (`ROLE=… node dist/main.js`,
 * as production runs them) on a fresh database of the local store (FerretDB, with the GIN indexes and
 * upkeep `npm start` gives it) and a Redis prefix of its own, both dropped at the end. The load comes
 * from a child process (load-generator.ts). Parts, each optional:
 *
 * - memory: RSS and PSS of api + ingest + workers + Redis + FerretDB (+ the PostgreSQL processes serving
 *   it) after start and BENCH_SETTLE_SECONDS (target PSS ≤ 600 MiB).
 * - accept: requests/s and p50/p99 of Sentry envelopes (one ~5 KB error event, gzipped, 500
 *   fingerprints) and OTLP span exports (protobuf, 20 spans) at each concurrency of BENCH_CONCURRENCIES,
 *   against the ingest service (the telemetry queue paused, so the workers do not share the CPU, and
 *   emptied as it fills, so that ingest does not see workers behind and linger) and against a bare node:http server that only reads, gunzips and parses
 *   the same bodies (ceiling-server.ts): the ratio is the service's share of the ceiling (target ≥ 0.6).
 *   Beside it, the CPU time each process spent per request (from /proc), which another load on the
 *   machine hardly moves, and the ceiling's CPU per request over the service's.
 * - e2e: BENCH_E2E_RECORDS error events, then as many spans, sent at BENCH_E2E_CONCURRENCY; records per
 *   second from the first request until the workers have stored them all and the queue is empty, and
 *   the store ceiling: the native driver's unordered insertMany of as many copies of a stored document
 *   of that kind (batches of 500, 4 at a time, as the workers write) into a bare collection of the same
 *   server. Targets: error events ≥ 1,000/s (each is grouped and counted, not only inserted), spans
 *   ≥ 0.5 of their ceiling. Needs nothing else.
 * - latency: Sentry envelopes at half the sustainable rate (the e2e error rate, or BENCH_RATE) for
 *   BENCH_OPEN_SECONDS, open loop: accept p50/p99 (target p99 < 50 ms) and queue lag (BullMQ job
 *   timestamp → processedOn).
 * - freshness: the same run again with every WATCH_EVERY-th envelope an event of one watched issue
 *   (freshness.ts): from each watched event's 200 until `GET /v1/issues/{id}/events` lists it, p50/p99
 *   (target p99 ≤ 2 s), with the queue lag beside it, and the p99 of the events answered in the run's first
 *   5 s (while the project's issues are created) and after them, apart.
 * - burst: BENCH_BURST_SPANS spans (OTLP, 20 a request) and BENCH_BURST_EVENTS error events, interleaved,
 *   at concurrency 32 (as fast as ingest takes them): the time from the last 200 until the queue is empty
 *   (target ≤ 15 s), stored = accepted, and an error event sent right after the last 200: the time from its
 *   200 until its issue's events list it (target ≤ 2 s).
 * - reads: fills a project to each size of BENCH_SIZES (the store bench's mix plus metric points), runs the
 *   store's upkeep (the vacuum and analysis the workers' maintenance job runs every minute), and
 *   times the issue list, trace list, services, service map, log search and metric series
 *   (BENCH_READ_REPEATS calls each): growth from the first size to the last (target < 2×); then, at each
 *   size, the workers' hourly retention cleanup as they run it (nothing has expired yet), timed once.
 * - single: after the parts above, with their service stopped: the service as `npm start` runs it (one
 *   process, no ROLE, the dashboard on) on a fresh database and Redis prefix of its own: its end-to-end
 *   error-event rate (as e2e), freshness at a steady BENCH_SINGLE_RATE events/s for BENCH_OPEN_SECONDS
 *   (as freshness; target p99 ≤ 2 s; it kept up when the queue emptied within 2 s of the last 200), then
 *   its PSS after BENCH_SETTLE_SECONDS idle with the local servers it uses (target ≤ 400 MiB). It starts
 *   on a fresh DATA_DIR with LOCAL_POSTGRES_URL=own, as on a laptop without PostgreSQL, so the store is
 *   FerretDB on a PostgreSQL cluster of its own, whose processes all count; both are ended and the DATA_DIR
 *   deleted at the end. With BENCH_SINGLE_OWN_POSTGRES=0 it uses the PostgreSQL the other parts use, and
 *   counts that server's postmaster, background processes and FerretDB's backends, which then carry the
 *   pages the other parts' writes went through.
 *
 * Environment: BENCH_PARTS (default memory,accept,e2e,latency,freshness,burst,reads,single),
 * BENCH_CONCURRENCIES (1,8,32,128), BENCH_REQUESTS (requests per accept step, 2000), BENCH_E2E_RECORDS
 * (10000), BENCH_E2E_CONCURRENCY (32), BENCH_OPEN_SECONDS (30), BENCH_RATE (sustainable events/s when e2e
 * is not run), BENCH_BURST_SPANS (40000), BENCH_BURST_EVENTS (5000), BENCH_SINGLE_RATE (100),
 * BENCH_SINGLE_OWN_POSTGRES (1), BENCH_SIZES (10000,100000,1000000), BENCH_READ_REPEATS (20), BENCH_FILL_CONCURRENCY (16),
 * BENCH_SETTLE_SECONDS (90), BENCH_CPU_PROFILE (a directory: the ingest, workers and single processes write V8 CPU
 * profiles into its ingest/, workers/ and single/ folders when they stop). A quick run (a few minutes):
 *
 *   BENCH_REQUESTS=300 BENCH_E2E_RECORDS=2000 BENCH_OPEN_SECONDS=10 BENCH_BURST_SPANS=4000 \
 *   BENCH_BURST_EVENTS=500 BENCH_SIZES=5000,20000 BENCH_READ_REPEATS=5 BENCH_SETTLE_SECONDS=10 npm run bench
 *
 * Prints a table of every figure with its ratio or target, and writes bench-results/<timestamp>.json.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Queue } from 'bullmq';
import mongoose from 'mongoose';
import { createBlobStore } from '../../src/shared/clients/blob.js';
import { vacuumStore } from '../../src/shared/clients/mongo.js';
import { loadConfig } from '../../src/shared/config.js';
import { ferretdbBinary } from '../../src/shared/local-services.js';
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { cleanup } from '../../src/shared/features/maintenance/service.js';
import { Span } from '../../src/shared/features/traces/model.js';
import { startCeilingServer, type CeilingServer } from './ceiling-server.js';
import { freshnessOf, OPENING_MS, watchIssue, type Freshness } from './freshness.js';
import { startLoadGenerator, type LoadGenerator, type LoadResult } from './load-generator.js';
import { clusterProcesses, cpuMsOf, ferretdbProcess, memoryOf, postgresProcesses, type ProcessMemory } from './memory.js';
import { sentryRequest, SPANS_PER_REQUEST, type Destination, type PayloadKind } from './payloads.js';
import { batchTimes, drained, fill, Filler, finishedBatches, freePort, freshDatabase, listFromEnv, numberFromEnv, percentile, setUp, sleep, startService, timeReads, writeResults, type Latency, type Service, type Store } from './support.js';

/** Error events stored end to end per second that the split deployment should reach. */
const ERROR_EVENTS_TARGET = 1000;
const PARTS = new Set(listFromEnv('BENCH_PARTS', 'memory,accept,e2e,latency,freshness,burst,reads,single'));
const CONCURRENCIES = listFromEnv('BENCH_CONCURRENCIES', '1,8,32,128').map(Number);
const REQUESTS = numberFromEnv('BENCH_REQUESTS', 2000);
const E2E_RECORDS = numberFromEnv('BENCH_E2E_RECORDS', 10_000);
const E2E_CONCURRENCY = numberFromEnv('BENCH_E2E_CONCURRENCY', 32);
const OPEN_SECONDS = numberFromEnv('BENCH_OPEN_SECONDS', 30);
const BURST_SPANS = numberFromEnv('BENCH_BURST_SPANS', 40_000);
const BURST_EVENTS = numberFromEnv('BENCH_BURST_EVENTS', 5_000);
const SINGLE_RATE = numberFromEnv('BENCH_SINGLE_RATE', 100);
const SINGLE_OWN_POSTGRES = process.env.BENCH_SINGLE_OWN_POSTGRES !== '0';
const SIZES = listFromEnv('BENCH_SIZES', '10000,100000,1000000').map(Number);
const READ_REPEATS = numberFromEnv('BENCH_READ_REPEATS', 20);
const FILL_CONCURRENCY = numberFromEnv('BENCH_FILL_CONCURRENCY', 16);
// long enough for FerretDB's pool to close idle PostgreSQL connections, which it checks every minute
const SETTLE_SECONDS = numberFromEnv('BENCH_SETTLE_SECONDS', 90);
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE;

/** The store bench's mix, with metric points for the metric series read. */
const MIX = { errors: 20, spans: 50, logs: 20, metrics: 10 };
const READS = ['issue list', 'trace list', 'services', 'service map', 'log search', 'metric series'];
/** Each insertMany of the store ceiling, and how many run at once: the ingest batch size and the workers' concurrency. */
const CEILING_BATCH = 500;
const CEILING_PARALLEL = 4;
/** Requests sent to each server before its first measured step, so both are measured warm. */
const WARM_UP = 200;
/** The issue's definition of a burst: as fast as ingest takes them, from this many clients. */
const BURST_CONCURRENCY = 32;
/**
 * One envelope in WATCH_EVERY of a freshness run is an event of WATCHED_ISSUE, whose events one poller
 * reads about ten times a second (freshness.ts): a sample large enough for a p99 over a 30 s run, in an
 * issue of its own so that watching costs one API read per poll whatever the rate.
 */
const WATCH_EVERY = 5;
const WATCHED_ISSUE = 'BenchWatched';
/** How long, once the queue is empty, the last watched events may take to be listed before they count as lost. */
const LISTED_WITHIN_MS = 30_000;
/** The single process kept up when its queue was empty this soon after the last 200. */
const KEPT_UP_SECONDS = 2;

const models = { sentry: ErrorEvent, otlp: Span } as const;
const recordName = { sentry: 'error events', otlp: 'spans' } as const;

interface AcceptStep {
  kind: PayloadKind;
  concurrency: number;
  ceiling: LoadResult;
  ingest: LoadResult;
  ratio: number;
  /** CPU ms each process spent per request it answered, and the ceiling's share of the service's. */
  cpu: { ingestMs: number; ceilingMs: number; ratio: number };
}

/** An end-to-end run: records per second from the first request until the queue is empty. */
interface Throughput {
  kind: PayloadKind;
  records: number;
  stored: number;
  seconds: number;
  perSecond: number;
  /** The workers' time per batch of this run (processedOn → finishedOn). */
  batchMs: Latency & { batches: number };
}

interface EndToEnd extends Throughput {
  ceilingPerSecond: number;
  ratio: number;
}

/** Each batch's wait in Redis, and then how long a worker held it until stored (for error events: placed and noted for their count). */
type QueueLag = Latency & { p99: number; batches: number; held: { p50: number; p99: number } };

interface OpenLoop {
  rate: number;
  load: LoadResult;
  stored: number;
  queueLag: QueueLag;
  /** Seconds from the last answer until the queue was empty. */
  drainSeconds: number;
  /** With watched events: from their 200 until the API listed them. */
  freshness?: Freshness;
}

interface Burst {
  /** Requests of each kind, sent interleaved at BURST_CONCURRENCY. */
  requests: Record<PayloadKind, number>;
  load: LoadResult;
  stored: Record<PayloadKind, number>;
  /** Seconds from the last 200 until the queue was empty. */
  drainSeconds: number;
  /** ms from the 200 of an error event sent right after the last 200 until its issue's events listed it. */
  nextEventListedMs: number;
  queueLag: QueueLag;
}

interface Memory {
  processes: ProcessMemory[];
  rssMiB: number;
  pssMiB: number;
  settleSeconds: number;
}

interface Results {
  at: string;
  settings: Record<string, unknown>;
  memory?: Memory;
  accept: AcceptStep[];
  endToEnd: EndToEnd[];
  halfRate?: OpenLoop;
  freshness?: OpenLoop;
  burst?: Burst;
  reads: { size: number; reads: Record<string, Latency>; cleanupMs: number }[];
  /** `npm start`'s one process. */
  single?: { ownPostgres: boolean; endToEnd: Throughput; steady: OpenLoop; memory: Memory };
  problems: string[];
}

/** A new organisation's project, as the load generator addresses it, with an API key to read it. */
async function benchProject(service: Service): Promise<{ to: Destination; projectId: string; apiKey: string }> {
  const target = await setUp(service);
  return { to: { baseUrl: service.ingestUrl, projectNumber: target.projectNumber, publicKey: target.publicKey }, projectId: target.projectId, apiKey: target.apiKey };
}
const storedCount = (kind: PayloadKind, projectId: string) => (models[kind] as typeof Span).countDocuments({ projectId: new mongoose.Types.ObjectId(projectId) });
/** How long each batch created since `since` waited in Redis before a worker took it (timestamp → processedOn), and was held then (→ finishedOn). */
async function queueLagSince(service: Service, since: number): Promise<QueueLag> {
  const jobs = await finishedBatches(service.queue, since);
  const lags = jobs.map((job) => job.processedOn! - job.timestamp);
  const held = jobs.map((job) => job.finishedOn! - job.processedOn!);
  return { p50: percentile(lags, 50), p95: percentile(lags, 95), p99: percentile(lags, 99), batches: lags.length, held: { p50: percentile(held, 50), p99: percentile(held, 99) } };
}

/**
 * RSS and PSS after `SETTLE_SECONDS` idle of the service's processes, Redis, FerretDB and the PostgreSQL
 * processes serving FerretDB's database, or, with `ownCluster`, every process of that cluster.
 */
async function idleMemory(service: Service, store: Store, ownCluster?: string): Promise<Memory> {
  await sleep(SETTLE_SECONDS * 1000);
  const own = [...service.processes].map(([role, child]) => memoryOf(child.pid!, `sluice ${role}`));
  const redisInfo = await service.redis.info('server');
  const redisPid = Number(/process_id:(\d+)/.exec(redisInfo)?.[1]);
  const ferretdb = ferretdbProcess(Number(new URL(store.databaseUrl).port));
  const postgres = ownCluster ? clusterProcesses(ownCluster) : store.ferretdbPostgresUrl ? postgresProcesses(new URL(store.ferretdbPostgresUrl).pathname.slice(1)) : [];
  const processes = [...own, memoryOf(redisPid, 'Redis'), ...(ferretdb ? [ferretdb] : []), ...postgres];
  const sum = (field: 'rssMiB' | 'pssMiB') => processes.reduce((total, p) => total + p[field], 0);
  return { processes, rssMiB: sum('rssMiB'), pssMiB: sum('pssMiB'), settleSeconds: SETTLE_SECONDS };
}

async function measureMemory(service: Service, store: Store, results: Results) {
  results.memory = await idleMemory(service, store);
  console.log(`memory after ${SETTLE_SECONDS} s idle: RSS ${results.memory.rssMiB.toFixed(0)} MiB, PSS ${results.memory.pssMiB.toFixed(0)} MiB over ${results.memory.processes.length} processes`);
}

/** How often the accept sweep empties the paused queue: often enough that ingest never sees the backlog it lingers for. */
const EMPTY_EVERY_MS = 50;

/**
 * Runs `load` while what it queues is thrown away as it comes, as if workers took every job at once
 * without sharing the CPU: the sweep measures ingest's own cost, not the linger that slows its clients
 * while the workers are behind (the latency, freshness and burst parts measure that).
 */
async function keptEmpty<T>(queue: Queue, load: () => Promise<T>): Promise<T> {
  let emptying: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    emptying = emptying.then(() => queue.drain());
  }, EMPTY_EVERY_MS);
  try {
    return await load();
  } finally {
    clearInterval(timer);
    await emptying;
  }
}

async function measureAccept(service: Service, ceiling: CeilingServer, generator: LoadGenerator, results: Results) {
  const ingestPid = (service.processes.get('ingest') ?? service.processes.get('all'))!.pid!;
  for (const kind of ['sentry', 'otlp'] as const) {
    const { to } = await benchProject(service);
    const toCeiling = { ...to, baseUrl: ceiling.baseUrl };
    await service.queue.pause();
    try {
      await generator.run({ kind, to: toCeiling, requests: WARM_UP, concurrency: 8 });
      await generator.run({ kind, to, requests: WARM_UP, concurrency: 8 });
      for (const concurrency of CONCURRENCIES) {
        const ceilingCpu = cpuMsOf(ceiling.pid);
        const bare = await generator.run({ kind, to: toCeiling, requests: REQUESTS, concurrency });
        const ceilingMs = (cpuMsOf(ceiling.pid) - ceilingCpu) / bare.sent;
        const ingestCpu = cpuMsOf(ingestPid);
        const ingest = await keptEmpty(service.queue, () => generator.run({ kind, to, requests: REQUESTS, concurrency }));
        const ingestMs = (cpuMsOf(ingestPid) - ingestCpu) / ingest.sent;
        if (ingest.accepted !== ingest.sent) results.problems.push(`accept ${kind} at ${concurrency}: ${ingest.sent - ingest.accepted} of ${ingest.sent} not accepted (${JSON.stringify(ingest.statuses)})`);
        const step = { kind, concurrency, ceiling: bare, ingest, ratio: ingest.perSecond / bare.perSecond, cpu: { ingestMs, ceilingMs, ratio: ceilingMs / ingestMs } };
        results.accept.push(step);
        console.log(`accept ${kind} ×${concurrency}: ingest ${ingest.perSecond.toFixed(0)} req/s (p50 ${ingest.p50.toFixed(1)}, p99 ${ingest.p99.toFixed(1)} ms, ${ingestMs.toFixed(3)} CPU ms each), ceiling ${bare.perSecond.toFixed(0)} req/s (${ceilingMs.toFixed(3)} CPU ms each), ratio ${step.ratio.toFixed(2)} (CPU ${step.cpu.ratio.toFixed(2)})`);
      }
    } finally {
      // what the sweep queued is not stored: the workers' part is measured by e2e
      await service.queue.obliterate({ force: true });
      await service.queue.resume();
    }
  }
}

/** Copies of one stored document of `kind` written with insertMany into a bare collection: documents per second. */
async function storeCeiling(kind: PayloadKind, projectId: string, count: number): Promise<number> {
  const sample = await models[kind].collection.findOne({ projectId: new mongoose.Types.ObjectId(projectId) });
  if (!sample) throw new Error(`no stored ${recordName[kind]} to copy`);
  const collection = mongoose.connection.db!.collection<{ _id: unknown }>(`bench_ceiling_${kind}`);
  await collection.drop().catch(() => {});
  const copy = (n: number) => ({ ...sample, _id: typeof sample._id === 'string' ? `${sample._id}-${n}` : new mongoose.Types.ObjectId() });
  const batches = Array.from({ length: Math.ceil(count / CEILING_BATCH) }, (_, b) => Array.from({ length: Math.min(CEILING_BATCH, count - b * CEILING_BATCH) }, (_, i) => copy(b * CEILING_BATCH + i)));
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CEILING_PARALLEL }, async () => {
      while (next < batches.length) await collection.insertMany(batches[next++]!, { ordered: false });
    }),
  );
  const perSecond = count / ((performance.now() - started) / 1000);
  await collection.drop();
  return perSecond;
}

/** `records` records of `kind` at E2E_CONCURRENCY into a new project, timed until the workers have stored them all. */
async function throughput(service: Service, generator: LoadGenerator, kind: PayloadKind, label: string, results: Results): Promise<Throughput & { projectId: string }> {
  const { to, projectId } = await benchProject(service);
  const since = Date.now();
  const requests = kind === 'sentry' ? E2E_RECORDS : Math.ceil(E2E_RECORDS / SPANS_PER_REQUEST);
  const load = await generator.run({ kind, to, requests, concurrency: E2E_CONCURRENCY });
  await drained(service.queue);
  const seconds = (Date.now() - load.startedAt) / 1000;
  const stored = await storedCount(kind, projectId);
  if (stored !== load.acceptedRecords) results.problems.push(`${label} ${kind}: ${load.acceptedRecords} ${recordName[kind]} accepted, ${stored} stored`);
  const batches = (await batchTimes(service.queue, since)).get('all')!;
  const batchMs = { p50: percentile(batches, 50), p95: percentile(batches, 95), batches: batches.length };
  return { projectId, kind, records: load.acceptedRecords, stored, seconds, perSecond: stored / seconds, batchMs };
}

async function measureEndToEnd(service: Service, generator: LoadGenerator, results: Results) {
  for (const kind of ['sentry', 'otlp'] as const) {
    const { projectId, ...run } = await throughput(service, generator, kind, 'e2e', results);
    const ceilingPerSecond = await storeCeiling(kind, projectId, run.stored);
    const row = { ...run, ceilingPerSecond, ratio: run.perSecond / ceilingPerSecond };
    results.endToEnd.push(row);
    console.log(`e2e ${kind}: ${row.stored} ${recordName[kind]} in ${row.seconds.toFixed(1)} s = ${row.perSecond.toFixed(0)}/s; store ceiling ${ceilingPerSecond.toFixed(0)}/s; ratio ${row.ratio.toFixed(2)}`);
  }
}

/**
 * Sentry envelopes at `rate` per second for `seconds`, open loop; then waits for the queue to empty. With
 * `watch`, one envelope in WATCH_EVERY is an event of WATCHED_ISSUE, timed from its 200 until listed.
 */
async function openLoop(service: Service, generator: LoadGenerator, rate: number, seconds: number, label: string, results: Results, { watch = false } = {}): Promise<OpenLoop> {
  const { to, projectId, apiKey } = await benchProject(service);
  // the watched issue's first event is sent (and stored) before the clock starts, so its id is known
  const watcher = watch ? await watchIssue(service.api.with({ bearer: apiKey }), to, projectId, WATCHED_ISSUE) : undefined;
  const since = Date.now();
  watcher?.start();
  let load: LoadResult;
  let freshness: Freshness | undefined;
  try {
    load = await generator.run({ kind: 'sentry', to, rate, seconds, ...(watcher && { watch: { every: WATCH_EVERY, issue: WATCHED_ISSUE } }) });
    await drained(service.queue);
    if (watcher) {
      const deadline = Date.now() + LISTED_WITHIN_MS;
      await watcher.waitFor(load.watched.map((w) => w.eventId), () => Date.now() > deadline);
      freshness = freshnessOf(load.watched, watcher);
      if (freshness.listed < freshness.watched) results.problems.push(`${label}: ${freshness.watched - freshness.listed} of ${freshness.watched} watched events were not listed within ${LISTED_WITHIN_MS / 1000} s of the queue emptying`);
    }
  } finally {
    await watcher?.stop();
  }
  const drainSeconds = (Date.now() - load.endedAt) / 1000;
  const stored = (await storedCount('sentry', projectId)) - (watcher ? 1 : 0);
  if (stored !== load.acceptedRecords) results.problems.push(`${label} at ${rate.toFixed(0)}/s: ${load.acceptedRecords} accepted, ${stored} stored`);
  if (load.accepted !== load.sent) results.problems.push(`${label} at ${rate.toFixed(0)}/s: ${load.sent - load.accepted} of ${load.sent} not accepted (${JSON.stringify(load.statuses)})`);
  return { rate, load, stored, drainSeconds, queueLag: await queueLagSince(service, since), ...(freshness && { freshness }) };
}

/** Half the rate the workers sustained in e2e (or BENCH_RATE). */
function halfTheSustainableRate(results: Results, part: string): number {
  const sustainable = results.endToEnd.find((row) => row.kind === 'sentry')?.perSecond ?? Number(process.env.BENCH_RATE);
  if (!(sustainable > 0)) throw new Error(`the ${part} part needs the e2e part or BENCH_RATE (events/s)`);
  return sustainable / 2;
}

async function measureLatency(service: Service, generator: LoadGenerator, results: Results) {
  const half = await openLoop(service, generator, halfTheSustainableRate(results, 'latency'), OPEN_SECONDS, 'half rate', results);
  results.halfRate = half;
  console.log(`half rate ${half.rate.toFixed(0)}/s: accept p50 ${half.load.p50.toFixed(1)} ms, p99 ${half.load.p99.toFixed(1)} ms; queue lag p50 ${half.queueLag.p50} ms, p99 ${half.queueLag.p99} ms`);
}

const freshnessLine = (run: OpenLoop) =>
  `listed p50 ${run.freshness!.p50} ms, p99 ${run.freshness!.p99} ms after the 200 (${run.freshness!.listed} of ${run.freshness!.watched} watched; in the first ${OPENING_MS / 1000} s p50 ${run.freshness!.opening.p50} / p99 ${run.freshness!.opening.p99} ms, after them p50 ${run.freshness!.after.p50} / p99 ${run.freshness!.after.p99} ms), the poller's reads p50 ${run.freshness!.read.p50} / p99 ${run.freshness!.read.p99} ms; queue lag p50 ${run.queueLag.p50} ms, p99 ${run.queueLag.p99} ms, then held p50 ${run.queueLag.held.p50} ms, p99 ${run.queueLag.held.p99} ms; queue empty ${run.drainSeconds.toFixed(1)} s after the last 200`;

async function measureFreshness(service: Service, generator: LoadGenerator, results: Results) {
  results.freshness = await openLoop(service, generator, halfTheSustainableRate(results, 'freshness'), OPEN_SECONDS, 'freshness', results, { watch: true });
  console.log(`freshness at ${results.freshness.rate.toFixed(0)}/s: ${freshnessLine(results.freshness)}`);
}

/**
 * The issue's burst: BURST_SPANS spans and BURST_EVENTS error events, interleaved, as fast as ingest takes
 * them; then, at once, one more error event, timed until listed while the queue drains.
 */
async function measureBurst(service: Service, generator: LoadGenerator, results: Results) {
  const { to, projectId, apiKey } = await benchProject(service);
  const watcher = await watchIssue(service.api.with({ bearer: apiKey }), to, projectId, WATCHED_ISSUE);
  const requests = { sentry: BURST_EVENTS, otlp: Math.ceil(BURST_SPANS / SPANS_PER_REQUEST) };
  const since = Date.now();
  const load = await generator.run({ kind: 'sentry', mix: requests, to, concurrency: BURST_CONCURRENCY });
  let emptiedAt: number | undefined;
  const emptied = drained(service.queue).then(() => (emptiedAt = Date.now()));
  // awaited below, after the next event is listed: a failed batch ends the wait for it, and is thrown there
  emptied.catch(() => (emptiedAt = Date.now()));
  let nextEventListedMs = NaN;
  try {
    const next = sentryRequest(to, 1, WATCHED_ISSUE);
    const reply = await fetch(next.url, { method: 'POST', headers: next.headers, body: next.body });
    await reply.arrayBuffer();
    const answeredAt = Date.now();
    if (reply.status !== 200) throw new Error(`the event after the burst was answered ${reply.status}`);
    watcher.start();
    // it waits behind the burst's backlog, so it may take as long as the drain, and is lost only if still not listed after it
    if (await watcher.waitFor([next.eventId!], () => emptiedAt !== undefined && Date.now() > emptiedAt + LISTED_WITHIN_MS)) nextEventListedMs = watcher.listedAt.get(next.eventId!)! - answeredAt;
    else results.problems.push(`burst: the error event sent after it was not listed within ${LISTED_WITHIN_MS / 1000} s of the queue emptying`);
  } finally {
    await watcher.stop();
  }
  const drainSeconds = ((await emptied) - load.endedAt) / 1000;
  // the watched issue's two events are not the burst's
  const stored = { sentry: (await storedCount('sentry', projectId)) - 2, otlp: await storedCount('otlp', projectId) };
  for (const kind of ['sentry', 'otlp'] as const) {
    const accepted = load.acceptedByKind[kind] ?? 0;
    if (stored[kind] !== accepted) results.problems.push(`burst: ${accepted} ${recordName[kind]} accepted, ${stored[kind]} stored`);
  }
  if (load.accepted !== load.sent) results.problems.push(`burst: ${load.sent - load.accepted} of ${load.sent} requests not accepted (${JSON.stringify(load.statuses)})`);
  results.burst = { requests, load, stored, drainSeconds, nextEventListedMs, queueLag: await queueLagSince(service, since) };
  console.log(
    `burst of ${load.acceptedByKind.otlp ?? 0} spans and ${load.acceptedByKind.sentry ?? 0} error events in ${load.seconds.toFixed(1)} s (${load.perSecond.toFixed(0)} req/s): queue empty ${drainSeconds.toFixed(1)} s after the last 200; the next error event listed ${nextEventListedMs} ms after its 200`,
  );
}

/** A new user's DATA_DIR, with the FerretDB binary already built (building it is a one-time cost the bench does not time). */
function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'slk-bench-single-'));
  // initdb and PostgreSQL run as the postgres user when the bench runs as root, and must enter it
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'bin'));
  symlinkSync(ferretdbBinary(resolve(loadConfig().DATA_DIR)), join(dir, 'bin', 'ferretdb'));
  return dir;
}

/** Ends the FerretDB and the PostgreSQL cluster started for `dataDir` (by their pids) and deletes it. */
async function removeDataDir(store: Store, dataDir: string) {
  const ferretdb = ferretdbProcess(Number(new URL(store.databaseUrl).port));
  const postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = [...(ferretdb ? [ferretdb.pid] : []), postmaster];
  if (ferretdb) process.kill(ferretdb.pid, 'SIGTERM');
  // SIGINT: PostgreSQL's fast shutdown
  process.kill(postmaster, 'SIGINT');
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const deadline = Date.now() + 30_000; pids.some(alive) && Date.now() < deadline; ) await sleep(100);
  rmSync(dataDir, { recursive: true, force: true });
}

/** `npm start`'s one process on a database of its own: end to end, freshness at SINGLE_RATE, idle PSS. */
async function measureSingle(generator: LoadGenerator, results: Results) {
  const dataDir = SINGLE_OWN_POSTGRES ? newDataDir() : undefined;
  const store = await freshDatabase(`slk_bench_single_${Date.now().toString(36)}`, 'auto', true, dataDir ? { local: { DATA_DIR: dataDir, LOCAL_POSTGRES_URL: 'own' } } : {});
  let service: Service | undefined;
  try {
    // the dashboard on, as npm start serves it, so that the footprint counts it
    service = await startService(store, ['all'], { WEB_PORT: String(await freePort()), ...(dataDir && { DATA_DIR: dataDir }) }, CPU_PROFILE ? { all: ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILE}/single`] } : {});
    const { projectId: _, ...endToEnd } = await throughput(service, generator, 'sentry', 'single e2e', results);
    console.log(`single process e2e: ${endToEnd.stored} error events in ${endToEnd.seconds.toFixed(1)} s = ${endToEnd.perSecond.toFixed(0)}/s`);
    const steady = await openLoop(service, generator, SINGLE_RATE, OPEN_SECONDS, 'single process', results, { watch: true });
    console.log(`single process at ${SINGLE_RATE}/s: ${freshnessLine(steady)}`);
    const memory = await idleMemory(service, store, dataDir && join(dataDir, 'postgres'));
    console.log(`single process memory after ${SETTLE_SECONDS} s idle: RSS ${memory.rssMiB.toFixed(0)} MiB, PSS ${memory.pssMiB.toFixed(0)} MiB over ${memory.processes.length} processes`);
    results.single = { ownPostgres: !!dataDir, endToEnd, steady, memory };
  } finally {
    await service?.stop();
    await store.drop();
    if (dataDir) await removeDataDir(store, dataDir);
  }
}

async function measureReads(service: Service, store: Store, results: Results) {
  const filler = new Filler(await setUp(service), service.ingestUrl, MIX);
  const blobs = createBlobStore(loadConfig());
  let stored = 0;
  for (const size of SIZES) {
    await fill(filler, service.queue, size - stored, FILL_CONCURRENCY);
    stored = size;
    // each size's reads meet the store as its upkeep leaves it, not in whichever part of the job's minute the fill ended
    if (store.ferretdbPostgresUrl) await vacuumStore(store.ferretdbPostgresUrl);
    const reads = await timeReads(service, filler, READS, READ_REPEATS);
    // as the workers' maintenance job runs it, on the same store
    const started = performance.now();
    await cleanup(blobs, new Date(), store.ferretdbPostgresUrl);
    const cleanupMs = performance.now() - started;
    results.reads.push({ size, reads, cleanupMs });
    console.log(`reads at ${size}: ${Object.entries(reads).map(([name, t]) => `${name} ${t.p50.toFixed(0)}/${t.p95.toFixed(0)} ms`).join(', ')}; retention cleanup ${cleanupMs.toFixed(0)} ms`);
  }
}

const fixed = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits));
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');

function freshnessRow(figure: string, run: OpenLoop): string[] {
  const { freshness, queueLag } = run;
  return [
    figure,
    `listed p50 ${fixed(freshness!.p50)} / p99 ${fixed(freshness!.p99)} ms after the 200 (${freshness!.listed} of ${freshness!.watched} watched; the first ${OPENING_MS / 1000} s p99 ${fixed(freshness!.opening.p99)}, after them p99 ${fixed(freshness!.after.p99)} ms); the poller's reads p50 ${fixed(freshness!.read.p50)} / p99 ${fixed(freshness!.read.p99)} ms`,
    `queue lag p50 ${fixed(queueLag.p50)} / p99 ${fixed(queueLag.p99)} ms, held p50 ${fixed(queueLag.held.p50)} / p99 ${fixed(queueLag.held.p99)} ms (${queueLag.batches} batches)`,
    `p99 ≤ 2 s: ${verdict(freshness!.listed === freshness!.watched && freshness!.p99 <= 2000)}`,
  ];
}

function memoryRow(figure: string, memory: Memory, targetPssMiB: number): string[] {
  const groups = new Map<string, { count: number; rssMiB: number; pssMiB: number }>();
  for (const p of memory.processes) {
    const group = groups.get(p.what) ?? { count: 0, rssMiB: 0, pssMiB: 0 };
    groups.set(p.what, { count: group.count + 1, rssMiB: group.rssMiB + p.rssMiB, pssMiB: group.pssMiB + p.pssMiB });
  }
  const parts = [...groups].map(([what, g]) => `${what}${g.count > 1 ? ` ×${g.count}` : ''} ${fixed(g.rssMiB)} (${fixed(g.pssMiB)})`).join(', ');
  return [figure, `RSS ${fixed(memory.rssMiB)} MiB, PSS ${fixed(memory.pssMiB)} MiB`, parts, `PSS ≤ ${targetPssMiB} MiB: ${verdict(memory.pssMiB <= targetPssMiB)}`];
}

function table(results: Results): string {
  const rows: string[][] = [];
  for (const step of results.accept) {
    const { ingest, ceiling } = step;
    rows.push([
      `accept ${step.kind} ×${step.concurrency}`,
      `${fixed(ingest.perSecond)} req/s, p50 ${fixed(ingest.p50, 1)} / p99 ${fixed(ingest.p99, 1)} ms, ${fixed(step.cpu.ingestMs, 3)} CPU ms/request`,
      `ceiling ${fixed(ceiling.perSecond)} req/s, p50 ${fixed(ceiling.p50, 1)} / p99 ${fixed(ceiling.p99, 1)} ms, ${fixed(step.cpu.ceilingMs, 3)} CPU ms/request`,
      `×${fixed(step.ratio, 2)} (≥ 0.6: ${verdict(step.ratio >= 0.6)}); CPU ×${fixed(step.cpu.ratio, 2)}`,
    ]);
  }
  for (const row of results.endToEnd) {
    // the issue's targets: error events ≥ 1,000/s stored (grouped and counted); spans ≥ 0.5 of the store's insert ceiling
    const target = row.kind === 'sentry' ? `≥ ${ERROR_EVENTS_TARGET}/s: ${verdict(row.perSecond >= ERROR_EVENTS_TARGET)}` : `≥ 0.5: ${verdict(row.ratio >= 0.5)}`;
    rows.push([`end to end ${recordName[row.kind]}`, `${fixed(row.perSecond)}/s (${row.stored} in ${fixed(row.seconds, 1)} s; ${row.batchMs.batches} batches, p50 ${fixed(row.batchMs.p50)} / p95 ${fixed(row.batchMs.p95)} ms each)`, `store ceiling ${fixed(row.ceilingPerSecond)}/s`, `×${fixed(row.ratio, 2)}; ${target}`]);
  }
  if (results.halfRate) {
    const { load, queueLag, rate } = results.halfRate;
    rows.push([`accept at half rate (${fixed(rate)}/s, open loop)`, `p50 ${fixed(load.p50, 1)} / p99 ${fixed(load.p99, 1)} ms`, `${load.sent} sent, most late send ${fixed(load.maxSendDelay)} ms`, `p99 < 50 ms: ${verdict(load.p99 < 50)}`]);
    rows.push(['queue lag at half rate', `p50 ${fixed(queueLag.p50)} / p99 ${fixed(queueLag.p99)} ms`, `${queueLag.batches} batches`, '']);
  }
  if (results.freshness) rows.push(freshnessRow(`freshness at half rate (${fixed(results.freshness.rate)}/s, open loop)`, results.freshness));
  if (results.burst) {
    const { load, queueLag, stored, drainSeconds, nextEventListedMs } = results.burst;
    const [spans, events] = [load.acceptedByKind.otlp ?? 0, load.acceptedByKind.sentry ?? 0];
    const allStored = stored.otlp === spans && stored.sentry === events;
    rows.push([
      `burst of ${spans} spans and ${events} error events (×${BURST_CONCURRENCY})`,
      `queue empty ${fixed(drainSeconds, 1)} s after the last 200`,
      `sent in ${fixed(load.seconds, 1)} s (${fixed(load.perSecond)} req/s, p99 ${fixed(load.p99, 1)} ms); stored ${stored.otlp} spans, ${stored.sentry} error events; queue lag p99 ${fixed(queueLag.p99)} ms`,
      `≤ 15 s: ${verdict(drainSeconds <= 15)}; stored = accepted: ${verdict(allStored)}`,
    ]);
    rows.push(['error event sent right after the burst', `listed ${fixed(nextEventListedMs)} ms after its 200`, '', `≤ 2 s: ${verdict(nextEventListedMs <= 2000)}`]);
  }
  const first = results.reads[0];
  const last = results.reads.at(-1);
  for (const name of READS) {
    if (!first || !last) break;
    const a = first.reads[name]!;
    const b = last.reads[name]!;
    const growth = Math.max(b.p50 / a.p50, b.p95 / a.p95);
    rows.push([`read ${name}`, results.reads.map((r) => `${r.size}: ${fixed(r.reads[name]!.p50)} / ${fixed(r.reads[name]!.p95)} ms`).join('; '), 'p50 / p95', `×${fixed(b.p50 / a.p50, 2)} / ×${fixed(b.p95 / a.p95, 2)} (< 2: ${verdict(growth < 2)})`]);
  }
  if (first && last) rows.push(['retention cleanup, nothing expired', results.reads.map((r) => `${r.size}: ${fixed(r.cleanupMs)} ms`).join('; '), 'once an hour and at each start', `×${fixed(last.cleanupMs / first.cleanupMs, 2)} (no target)`]);
  if (results.memory) rows.push(memoryRow(`idle memory after ${results.memory.settleSeconds} s (api, ingest, workers), RSS (PSS) MiB`, results.memory, 600));
  if (results.single) {
    const { endToEnd, steady, memory, ownPostgres } = results.single;
    rows.push(['npm start (one process): end to end, error events', `${fixed(endToEnd.perSecond)}/s (${endToEnd.stored} in ${fixed(endToEnd.seconds, 1)} s)`, `${endToEnd.batchMs.batches} batches, p50 ${fixed(endToEnd.batchMs.p50)} / p95 ${fixed(endToEnd.batchMs.p95)} ms each`, '']);
    rows.push(freshnessRow(`npm start: freshness at ${fixed(steady.rate)}/s (open loop)`, steady));
    rows.push([
      `npm start: kept up at ${fixed(steady.rate)}/s`,
      `queue empty ${fixed(steady.drainSeconds, 1)} s after the last 200`,
      `accept p50 ${fixed(steady.load.p50, 1)} / p99 ${fixed(steady.load.p99, 1)} ms`,
      `≤ ${KEPT_UP_SECONDS} s: ${verdict(steady.drainSeconds <= KEPT_UP_SECONDS)}`,
    ]);
    rows.push(memoryRow(`npm start: idle memory after ${memory.settleSeconds} s (${ownPostgres ? 'its own PostgreSQL cluster' : "the shared servers' share"}), RSS (PSS) MiB`, memory, 400));
  }
  const lines = ['| figure | the service | beside it | ratio / target |', '|---|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)];
  return lines.join('\n');
}

/** The parts measured on the split deployment, in the order they run. */
const SPLIT_PARTS = ['memory', 'accept', 'e2e', 'latency', 'freshness', 'burst', 'reads'];

/** api, ingest and workers as processes of their own, on a database of their own. */
async function measureSplit(generator: LoadGenerator, results: Results) {
  const store = await freshDatabase(`slk_bench_service_${Date.now().toString(36)}`, 'auto', true);
  let service: Service | undefined;
  let ceiling: CeilingServer | undefined;
  try {
    service = await startService(store, ['api', 'ingest', 'workers'], {}, CPU_PROFILE ? Object.fromEntries((['ingest', 'workers'] as const).map((role) => [role, ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILE}/${role}`]])) : {});
    if (PARTS.has('memory')) await measureMemory(service, store, results);
    if (PARTS.has('accept')) {
      ceiling = await startCeilingServer();
      await measureAccept(service, ceiling, generator, results);
    }
    if (PARTS.has('e2e')) await measureEndToEnd(service, generator, results);
    if (PARTS.has('latency')) await measureLatency(service, generator, results);
    if (PARTS.has('freshness')) await measureFreshness(service, generator, results);
    if (PARTS.has('burst')) await measureBurst(service, generator, results);
    if (PARTS.has('reads')) await measureReads(service, store, results);
  } finally {
    await ceiling?.stop();
    await service?.stop();
    await store.drop();
  }
}

async function main() {
  const results: Results = {
    at: new Date().toISOString(),
    settings: { parts: [...PARTS], concurrencies: CONCURRENCIES, requests: REQUESTS, e2eRecords: E2E_RECORDS, e2eConcurrency: E2E_CONCURRENCY, openSeconds: OPEN_SECONDS, burstSpans: BURST_SPANS, burstEvents: BURST_EVENTS, singleRate: SINGLE_RATE, singleOwnPostgres: SINGLE_OWN_POSTGRES, watchEvery: WATCH_EVERY, sizes: SIZES, readRepeats: READ_REPEATS, settleSeconds: SETTLE_SECONDS, mix: MIX, spansPerRequest: SPANS_PER_REQUEST },
    accept: [],
    endToEnd: [],
    reads: [],
    problems: [],
  };
  const generator = startLoadGenerator();
  try {
    if (SPLIT_PARTS.some((part) => PARTS.has(part))) await measureSplit(generator, results);
    if (PARTS.has('single')) await measureSingle(generator, results);
  } finally {
    await generator.stop();
  }
  console.log(`\n${table(results)}\n`);
  for (const problem of results.problems) console.log(`problem: ${problem}`);
  console.log(`figures in ${writeResults(results.at.replace(/[:.]/g, '-'), results)}`);
  if (results.problems.length > 0) process.exitCode = 1;
}

await main();
