/**
 * `npm run bench`: the whole service under load, next to the ceilings it runs under. It builds the
 * service and starts api, ingest and workers as processes of their own (`ROLE=… node dist/main.js`,
 * as production runs them) on a fresh database of the local store (FerretDB, with the GIN indexes and
 * upkeep `npm start` gives it) and a Redis prefix of its own, both dropped at the end. The load comes
 * from a child process (load-generator.ts). Parts, each optional:
 *
 * - memory: RSS of api + ingest + workers + Redis + FerretDB (+ the PostgreSQL processes serving it)
 *   after start and BENCH_SETTLE_SECONDS.
 * - accept: requests/s and p50/p99 of Sentry envelopes (one ~5 KB error event, gzipped, 500
 *   fingerprints) and OTLP span exports (protobuf, 20 spans) at each concurrency of BENCH_CONCURRENCIES,
 *   against the ingest service (the telemetry queue paused, so the workers do not share the CPU; what was
 *   queued is thrown away after) and against a bare node:http server that only reads, gunzips and parses
 *   the same bodies (ceiling-server.ts): the ratio is the service's share of the ceiling (target ≥ 0.6).
 *   Beside it, the CPU time each process spent per request (from /proc), which another load on the
 *   machine hardly moves, and the ceiling's CPU per request over the service's.
 * - e2e: BENCH_E2E_RECORDS error events, then as many spans, sent at BENCH_E2E_CONCURRENCY; records per
 *   second from the first request until the workers have stored them all and the queue is empty, and
 *   the store ceiling: the native driver's unordered insertMany of as many copies of a stored document
 *   of that kind (batches of 500, 4 at a time, as the workers write) into a bare collection of the same
 *   server. The ratio is the service's share (target ≥ 0.5). Needs nothing else.
 * - latency: Sentry envelopes at half the sustainable rate (the e2e error rate, or BENCH_RATE) for
 *   BENCH_OPEN_SECONDS, open loop: accept p50/p99 (target p99 < 50 ms) and queue lag (BullMQ job
 *   timestamp → processedOn); then a burst at twice the rate for BENCH_BURST_SECONDS: the time from its
 *   last answer until the queue is empty, and stored = accepted.
 * - reads: fills a project to each size of BENCH_SIZES (the store bench's mix plus metric points) and
 *   times the issue list, trace list, services, service map, log search and metric series
 *   (BENCH_READ_REPEATS calls each): growth from the first size to the last (target < 2×).
 *
 * Environment: BENCH_PARTS (default memory,accept,e2e,latency,reads), BENCH_CONCURRENCIES (1,8,32,128),
 * BENCH_REQUESTS (requests per accept step, 2000), BENCH_E2E_RECORDS (10000), BENCH_E2E_CONCURRENCY (32),
 * BENCH_OPEN_SECONDS (30), BENCH_BURST_SECONDS (15), BENCH_RATE (sustainable events/s when e2e is not
 * run), BENCH_SIZES (10000,100000,1000000), BENCH_READ_REPEATS (20), BENCH_FILL_CONCURRENCY (16),
 * BENCH_SETTLE_SECONDS (30), BENCH_CPU_PROFILE (a directory: the ingest and workers processes write V8 CPU
 * profiles into its ingest/ and workers/ folders when they stop). A quick run (a few minutes):
 *
 *   BENCH_REQUESTS=300 BENCH_E2E_RECORDS=2000 BENCH_OPEN_SECONDS=10 BENCH_BURST_SECONDS=5 \
 *   BENCH_SIZES=5000,20000 BENCH_READ_REPEATS=5 BENCH_SETTLE_SECONDS=10 npm run bench
 *
 * Prints a table of every figure with its ratio or target, and writes bench-results/<timestamp>.json.
 */
import { performance } from 'node:perf_hooks';
import mongoose from 'mongoose';
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { Span } from '../../src/shared/features/traces/model.js';
import { startCeilingServer, type CeilingServer } from './ceiling-server.js';
import { startLoadGenerator, type LoadGenerator, type LoadResult } from './load-generator.js';
import { cpuMsOf, ferretdbProcess, memoryOf, postgresProcesses, type ProcessMemory } from './memory.js';
import { SPANS_PER_REQUEST, type Destination, type PayloadKind } from './payloads.js';
import { batchTimes, drained, fill, Filler, finishedBatches, freshDatabase, listFromEnv, numberFromEnv, percentile, setUp, sleep, startService, timeReads, writeResults, type Latency, type Service, type Store } from './support.js';

const PARTS = new Set(listFromEnv('BENCH_PARTS', 'memory,accept,e2e,latency,reads'));
const CONCURRENCIES = listFromEnv('BENCH_CONCURRENCIES', '1,8,32,128').map(Number);
const REQUESTS = numberFromEnv('BENCH_REQUESTS', 2000);
const E2E_RECORDS = numberFromEnv('BENCH_E2E_RECORDS', 10_000);
const E2E_CONCURRENCY = numberFromEnv('BENCH_E2E_CONCURRENCY', 32);
const OPEN_SECONDS = numberFromEnv('BENCH_OPEN_SECONDS', 30);
const BURST_SECONDS = numberFromEnv('BENCH_BURST_SECONDS', 15);
const SIZES = listFromEnv('BENCH_SIZES', '10000,100000,1000000').map(Number);
const READ_REPEATS = numberFromEnv('BENCH_READ_REPEATS', 20);
const FILL_CONCURRENCY = numberFromEnv('BENCH_FILL_CONCURRENCY', 16);
const SETTLE_SECONDS = numberFromEnv('BENCH_SETTLE_SECONDS', 30);
const CPU_PROFILE = process.env.BENCH_CPU_PROFILE;

/** The store bench's mix, with metric points for the metric series read. */
const MIX = { errors: 20, spans: 50, logs: 20, metrics: 10 };
const READS = ['issue list', 'trace list', 'services', 'service map', 'log search', 'metric series'];
/** Each insertMany of the store ceiling, and how many run at once: the ingest batch size and the workers' concurrency. */
const CEILING_BATCH = 500;
const CEILING_PARALLEL = 4;
/** Requests sent to each server before its first measured step, so both are measured warm. */
const WARM_UP = 200;

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

interface EndToEnd {
  kind: PayloadKind;
  records: number;
  stored: number;
  seconds: number;
  perSecond: number;
  ceilingPerSecond: number;
  ratio: number;
  /** The workers' time per batch of this run (processedOn → finishedOn). */
  batchMs: Latency & { batches: number };
}

interface OpenLoop {
  rate: number;
  load: LoadResult;
  stored: number;
  queueLag: Latency & { p99: number; batches: number };
  /** Burst only: seconds from its last answer until the queue was empty. */
  drainSeconds?: number;
}

interface Results {
  at: string;
  settings: Record<string, unknown>;
  memory?: { processes: ProcessMemory[]; rssMiB: number; pssMiB: number; settleSeconds: number };
  accept: AcceptStep[];
  endToEnd: EndToEnd[];
  halfRate?: OpenLoop;
  burst?: OpenLoop;
  reads: { size: number; reads: Record<string, Latency> }[];
  problems: string[];
}

/** A new organisation's project, as the load generator addresses it. */
async function benchProject(service: Service): Promise<{ to: Destination; projectId: string }> {
  const target = await setUp(service);
  return { to: { baseUrl: service.ingestUrl, projectNumber: target.projectNumber, publicKey: target.publicKey }, projectId: target.projectId };
}
const storedCount = (kind: PayloadKind, projectId: string) => (models[kind] as typeof Span).countDocuments({ projectId: new mongoose.Types.ObjectId(projectId) });

async function measureMemory(service: Service, store: Store, results: Results) {
  await sleep(SETTLE_SECONDS * 1000);
  const own = [...service.processes].map(([role, child]) => memoryOf(child.pid!, `sluice ${role}`));
  const redisInfo = await service.redis.info('server');
  const redisPid = Number(/process_id:(\d+)/.exec(redisInfo)?.[1]);
  const ferretdb = ferretdbProcess(Number(new URL(store.databaseUrl).port));
  const postgres = store.ferretdbPostgresUrl ? postgresProcesses(new URL(store.ferretdbPostgresUrl).pathname.slice(1)) : [];
  const processes = [...own, memoryOf(redisPid, 'Redis'), ...(ferretdb ? [ferretdb] : []), ...postgres];
  const sum = (field: 'rssMiB' | 'pssMiB') => processes.reduce((total, p) => total + p[field], 0);
  results.memory = { processes, rssMiB: sum('rssMiB'), pssMiB: sum('pssMiB'), settleSeconds: SETTLE_SECONDS };
  console.log(`memory after ${SETTLE_SECONDS} s idle: RSS ${results.memory.rssMiB.toFixed(0)} MiB, PSS ${results.memory.pssMiB.toFixed(0)} MiB over ${processes.length} processes`);
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
        const ingest = await generator.run({ kind, to, requests: REQUESTS, concurrency });
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

async function measureEndToEnd(service: Service, generator: LoadGenerator, results: Results) {
  for (const kind of ['sentry', 'otlp'] as const) {
    const { to, projectId } = await benchProject(service);
    const since = Date.now();
    const requests = kind === 'sentry' ? E2E_RECORDS : Math.ceil(E2E_RECORDS / SPANS_PER_REQUEST);
    const load = await generator.run({ kind, to, requests, concurrency: E2E_CONCURRENCY });
    await drained(service.queue);
    const seconds = (Date.now() - load.startedAt) / 1000;
    const stored = await storedCount(kind, projectId);
    if (stored !== load.acceptedRecords) results.problems.push(`e2e ${kind}: ${load.acceptedRecords} ${recordName[kind]} accepted, ${stored} stored`);
    const batches = (await batchTimes(service.queue, since)).get('all')!;
    const batchMs = { p50: percentile(batches, 50), p95: percentile(batches, 95), batches: batches.length };
    const ceilingPerSecond = await storeCeiling(kind, projectId, stored);
    const row = { kind, records: load.acceptedRecords, stored, seconds, perSecond: stored / seconds, ceilingPerSecond, ratio: stored / seconds / ceilingPerSecond, batchMs };
    results.endToEnd.push(row);
    console.log(`e2e ${kind}: ${stored} ${recordName[kind]} in ${seconds.toFixed(1)} s = ${row.perSecond.toFixed(0)}/s; store ceiling ${ceilingPerSecond.toFixed(0)}/s; ratio ${row.ratio.toFixed(2)}`);
  }
}

/** Sentry envelopes at `rate` per second for `seconds`, open loop; then waits for the queue to empty. */
async function openLoop(service: Service, generator: LoadGenerator, rate: number, seconds: number, results: Results): Promise<OpenLoop> {
  const { to, projectId } = await benchProject(service);
  const since = Date.now();
  const load = await generator.run({ kind: 'sentry', to, rate, seconds });
  await drained(service.queue);
  const drainSeconds = (Date.now() - load.endedAt) / 1000;
  const stored = await storedCount('sentry', projectId);
  if (stored !== load.acceptedRecords) results.problems.push(`open loop at ${rate.toFixed(0)}/s: ${load.acceptedRecords} accepted, ${stored} stored`);
  if (load.accepted !== load.sent) results.problems.push(`open loop at ${rate.toFixed(0)}/s: ${load.sent - load.accepted} of ${load.sent} not accepted (${JSON.stringify(load.statuses)})`);
  const lags = (await finishedBatches(service.queue, since)).map((job) => job.processedOn! - job.timestamp);
  return { rate, load, stored, drainSeconds, queueLag: { p50: percentile(lags, 50), p95: percentile(lags, 95), p99: percentile(lags, 99), batches: lags.length } };
}

async function measureLatency(service: Service, generator: LoadGenerator, results: Results) {
  const sustainable = results.endToEnd.find((row) => row.kind === 'sentry')?.perSecond ?? Number(process.env.BENCH_RATE);
  if (!(sustainable > 0)) throw new Error('the latency part needs the e2e part or BENCH_RATE (events/s)');
  const half = await openLoop(service, generator, sustainable / 2, OPEN_SECONDS, results);
  delete half.drainSeconds;
  results.halfRate = half;
  console.log(`half rate ${half.rate.toFixed(0)}/s: accept p50 ${half.load.p50.toFixed(1)} ms, p99 ${half.load.p99.toFixed(1)} ms; queue lag p50 ${half.queueLag.p50} ms, p99 ${half.queueLag.p99} ms`);
  results.burst = await openLoop(service, generator, sustainable * 2, BURST_SECONDS, results);
  console.log(`burst ${results.burst.rate.toFixed(0)}/s for ${BURST_SECONDS} s: drained ${results.burst.drainSeconds!.toFixed(1)} s after; ${results.burst.load.acceptedRecords} accepted, ${results.burst.stored} stored`);
}

async function measureReads(service: Service, results: Results) {
  const filler = new Filler(await setUp(service), service.ingestUrl, MIX);
  let stored = 0;
  for (const size of SIZES) {
    await fill(filler, service.queue, size - stored, FILL_CONCURRENCY);
    stored = size;
    const reads = await timeReads(service, filler, READS, READ_REPEATS);
    results.reads.push({ size, reads });
    console.log(`reads at ${size}: ${Object.entries(reads).map(([name, t]) => `${name} ${t.p50.toFixed(0)}/${t.p95.toFixed(0)} ms`).join(', ')}`);
  }
}

const fixed = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? '–' : value.toFixed(digits));
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');

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
    rows.push([`end to end ${recordName[row.kind]}`, `${fixed(row.perSecond)}/s (${row.stored} in ${fixed(row.seconds, 1)} s; ${row.batchMs.batches} batches, p50 ${fixed(row.batchMs.p50)} / p95 ${fixed(row.batchMs.p95)} ms each)`, `store ceiling ${fixed(row.ceilingPerSecond)}/s`, `×${fixed(row.ratio, 2)} (≥ 0.5: ${verdict(row.ratio >= 0.5)})`]);
  }
  if (results.halfRate) {
    const { load, queueLag, rate } = results.halfRate;
    rows.push([`accept at half rate (${fixed(rate)}/s, open loop)`, `p50 ${fixed(load.p50, 1)} / p99 ${fixed(load.p99, 1)} ms`, `${load.sent} sent, most late send ${fixed(load.maxSendDelay)} ms`, `p99 < 50 ms: ${verdict(load.p99 < 50)}`]);
    rows.push(['queue lag at half rate', `p50 ${fixed(queueLag.p50)} / p99 ${fixed(queueLag.p99)} ms`, `${queueLag.batches} batches`, '']);
  }
  if (results.burst) {
    const { load, queueLag, rate, stored, drainSeconds } = results.burst;
    rows.push([`burst at twice the rate (${fixed(rate)}/s)`, `drained ${fixed(drainSeconds, 1)} s after the last answer`, `accept p50 ${fixed(load.p50, 1)} / p99 ${fixed(load.p99, 1)} ms; queue lag p99 ${fixed(queueLag.p99)} ms`, `stored ${stored} of ${load.acceptedRecords} accepted: ${verdict(stored === load.acceptedRecords)}`]);
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
  if (results.memory) {
    const m = results.memory;
    const groups = new Map<string, { count: number; rssMiB: number; pssMiB: number }>();
    for (const p of m.processes) {
      const group = groups.get(p.what) ?? { count: 0, rssMiB: 0, pssMiB: 0 };
      groups.set(p.what, { count: group.count + 1, rssMiB: group.rssMiB + p.rssMiB, pssMiB: group.pssMiB + p.pssMiB });
    }
    const parts = [...groups].map(([what, g]) => `${what}${g.count > 1 ? ` ×${g.count}` : ''} ${fixed(g.rssMiB)} (${fixed(g.pssMiB)})`).join(', ');
    const mb = (mib: number) => mib * 1.048576;
    rows.push([`idle memory after ${m.settleSeconds} s, RSS (PSS) MiB`, `RSS ${fixed(m.rssMiB)} MiB, PSS ${fixed(m.pssMiB)} MiB`, parts, `< 500 MB: RSS ${verdict(mb(m.rssMiB) < 500)}, PSS ${verdict(mb(m.pssMiB) < 500)}`]);
  }
  const lines = ['| figure | the service | beside it | ratio / target |', '|---|---|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)];
  return lines.join('\n');
}

async function main() {
  const results: Results = {
    at: new Date().toISOString(),
    settings: { parts: [...PARTS], concurrencies: CONCURRENCIES, requests: REQUESTS, e2eRecords: E2E_RECORDS, e2eConcurrency: E2E_CONCURRENCY, openSeconds: OPEN_SECONDS, burstSeconds: BURST_SECONDS, sizes: SIZES, readRepeats: READ_REPEATS, settleSeconds: SETTLE_SECONDS, mix: MIX, spansPerRequest: SPANS_PER_REQUEST },
    accept: [],
    endToEnd: [],
    reads: [],
    problems: [],
  };
  const store = await freshDatabase(`slk_bench_service_${Date.now().toString(36)}`, 'auto', true);
  let service: Service | undefined;
  let ceiling: CeilingServer | undefined;
  let generator: LoadGenerator | undefined;
  try {
    service = await startService(store, ['api', 'ingest', 'workers'], {}, CPU_PROFILE ? Object.fromEntries((['ingest', 'workers'] as const).map((role) => [role, ['--cpu-prof', `--cpu-prof-dir=${CPU_PROFILE}/${role}`]])) : {});
    generator = startLoadGenerator();
    if (PARTS.has('memory')) await measureMemory(service, store, results);
    if (PARTS.has('accept')) {
      ceiling = await startCeilingServer();
      await measureAccept(service, ceiling, generator, results);
    }
    if (PARTS.has('e2e')) await measureEndToEnd(service, generator, results);
    if (PARTS.has('latency')) await measureLatency(service, generator, results);
    if (PARTS.has('reads')) await measureReads(service, results);
  } finally {
    await generator?.stop();
    await ceiling?.stop();
    await service?.stop();
    await store.drop();
  }
  console.log(`\n${table(results)}\n`);
  for (const problem of results.problems) console.log(`problem: ${problem}`);
  console.log(`figures in ${writeResults(results.at.replace(/[:.]/g, '-'), results)}`);
  if (results.problems.length > 0) process.exitCode = 1;
}

await main();
