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
import { performance } from 'node:perf_hooks';
import { batchTimes, fill, Filler, freshDatabase, listFromEnv, numberFromEnv, percentile, setUp, startService, timeReads, writeResults, type Latency } from './support.js';

const backends = listFromEnv('BENCH_BACKENDS', 'sqlite,postgresql,postgresql+gin');
const sizes = listFromEnv('BENCH_SIZES', '10000,100000,1000000').map(Number);
const PROBE = numberFromEnv('BENCH_PROBE', 10_000);
const BUDGET_MS = numberFromEnv('BENCH_BUDGET_MINUTES', 30) * 60_000;
const CONCURRENCY = numberFromEnv('BENCH_CONCURRENCY', 16);
const READ_REPEATS = numberFromEnv('BENCH_READ_REPEATS', 20);

/** The mix of what is sent, per 100 records: error events, spans (in traces of 5), logs. */
const MIX = { errors: 20, spans: 60, logs: 20, metrics: 0 };
const READS = ['issue list', 'one issue', 'events of an issue', 'one trace', 'user list', 'trace list', 'services', 'service map', 'log search', 'log patterns', 'slow queries', 'traffic', 'log surges'];

interface Checkpoint {
  size: number;
  storeRate: number;
  batchMs: { p50: number; p95: number; batches: number };
  byKind: Record<string, { p50: number; p95: number; batches: number }>;
  reads: Record<string, Latency>;
}

interface BackendResult {
  backend: string;
  checkpoints: Checkpoint[];
  stopped?: string;
}

async function benchBackend(backend: string): Promise<BackendResult> {
  const store = await freshDatabase(`slk_bench_${backend.replace(/\W/g, '_')}`, backend === 'sqlite' ? 'sqlite' : 'postgresql', backend === 'postgresql+gin');
  const service = await startService(store, ['all'], { PASSWORD_HASH_COST: '12' });
  const result: BackendResult = { backend, checkpoints: [] };
  const began = performance.now();
  try {
    const filler = new Filler(await setUp(service), service.ingestUrl, MIX);
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
        await fill(filler, service.queue, grow, CONCURRENCY);
      }
      const since = Date.now();
      const started = performance.now();
      await fill(filler, service.queue, PROBE, CONCURRENCY);
      const seconds = (performance.now() - started) / 1000;
      stored = size;
      const times = await batchTimes(service.queue, since);
      const batches = times.get('all')!;
      const checkpoint: Checkpoint = {
        size,
        storeRate: PROBE / seconds,
        batchMs: { p50: percentile(batches, 50), p95: percentile(batches, 95), batches: batches.length },
        byKind: Object.fromEntries([...times].filter(([kind]) => kind !== 'all').map(([kind, took]) => [kind, { p50: percentile(took, 50), p95: percentile(took, 95), batches: took.length }])),
        reads: await timeReads(service, filler, READS, READ_REPEATS),
      };
      result.checkpoints.push(checkpoint);
      const kinds = Object.entries(checkpoint.byKind).map(([kind, t]) => `${kind} ${t.batches}× p50 ${t.p50} ms`).join(', ');
      console.log(`${backend} @ ${size}: ${Math.round(checkpoint.storeRate)} records/s; batches p50 ${checkpoint.batchMs.p50} ms, p95 ${checkpoint.batchMs.p95} ms (${kinds}); ${Math.round((performance.now() - began) / 1000)} s so far`);
    }
  } finally {
    await service.stop();
    await store.drop();
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
  writeResults(`store-${backends.join('-').replace(/\W/g, '_')}`, { at: new Date().toISOString(), sizes, probe: PROBE, mix: MIX, results });
}

await main();
