/**
 * The dashboard's slow reads, timed through the API without a browser: the reads behind /services,
 * /services/map, /services/<name> and /performance (traffic), /logs, /logs/patterns and /traces, each with
 * the dashboard's default window (the last 24 h) and without filters, for one project (`project=`) and for
 * the whole organisation.
 *
 * It seeds the data of `npm run bench:web` (test/bench/web.ts: 100,000 records over the last day at
 * BENCH_WEB_SCALE=1) into a database of its own that it keeps, so the reads of one seeding can be timed
 * again after a change to the server (`npx tsc -p tsconfig.build.json`, then run this again without
 * BENCH_READS_SEED). Each read is called BENCH_READS_RUNS times, one at a time; it prints median / min / max
 * per read and writes bench-results/reads.json, and each read's answer into bench-results/reads-answers/,
 * which a later run with BENCH_READS_COMPARE=1 compares its own answers with (the window is the same fixed
 * 24 h, ending a minute after the seeding, so the answers of two runs of the same data are comparable).
 *
 *   BENCH_READS_SEED=1 BENCH_WEB_SCALE=1 npx tsx test/bench/reads.ts    # seed (drops the database first), then time
 *   BENCH_READS_COMPARE=1 npx tsx test/bench/reads.ts                   # time the kept seeding again, compare answers
 *
 * Environment: BENCH_READS_DATABASE (slk_bench_reads), BENCH_READS_RUNS (5), BENCH_READS_ONLY (comma-separated
 * read names), BENCH_READS_DROP=1 drops the database at the end.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { performance } from 'node:perf_hooks';
import mongoose from 'mongoose';
import { PASSWORD, login, register, uniqueEmail } from '../support/factories/accounts.js';
import { projectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { freshDatabase, listFromEnv, numberFromEnv, percentile, startService, writeResults } from './support.js';
import { API, counted, errorSends, logSends, metricSends, seed, traceSends, type Target } from './web.js';

const DATABASE = process.env.BENCH_READS_DATABASE ?? 'slk_bench_reads';
const SEED = process.env.BENCH_READS_SEED === '1';
const COMPARE = process.env.BENCH_READS_COMPARE === '1';
const RUNS = numberFromEnv('BENCH_READS_RUNS', 5);
const ONLY = listFromEnv('BENCH_READS_ONLY', '');
const STATE = `bench-results/reads-seed-${DATABASE}.json`;
const ANSWERS = 'bench-results/reads-answers';

interface SeedState {
  email: string;
  projectId: string;
  /** The end of the fixed window the reads ask for (ISO-8601). */
  to: string;
  records: unknown;
}

async function main() {
  const store = await freshDatabase(DATABASE, 'auto', true, { keep: !SEED });
  const service = await startService(store, ['all']);
  try {
    let state: SeedState;
    if (SEED) {
      const harness = { api: service.api } as Harness;
      const email = uniqueEmail('bench-reads');
      await register(harness, email);
      const account = await login(harness, email);
      const client = service.api.with({ cookie: account.cookie, origin: DASHBOARD_ORIGIN });
      const project = await projectWithDsn({ ...account, client }, service.ingestUrl);
      const target: Target = { projectId: project.id, projectNumber: project.number, publicKey: project.publicKey };
      const now = Date.now();
      const sends = [...errorSends(target, service.ingestUrl, now), ...traceSends(target, service.ingestUrl, now), ...logSends(target, service.ingestUrl, now), ...metricSends(target, service.ingestUrl, now)];
      const sent = sends.reduce((sum, item) => sum + item.records, 0);
      console.log(`seeding ${sent.toLocaleString('en')} records into ${DATABASE}…`);
      await seed(service, sends);
      const records = await counted(client, target.projectId, sent);
      state = { email, projectId: project.id, to: new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 60_000).toISOString(), records };
      mkdirSync('bench-results', { recursive: true });
      writeFileSync(STATE, `${JSON.stringify(state, null, 2)}\n`);
    } else {
      if (!existsSync(STATE)) throw new Error(`${STATE} is missing: seed first with BENCH_READS_SEED=1`);
      state = JSON.parse(readFileSync(STATE, 'utf8')) as SeedState;
    }
    const account = await login({ api: service.api } as Harness, state.email, PASSWORD);
    const client = service.api.with({ cookie: account.cookie, origin: DASHBOARD_ORIGIN });
    const to = new Date(state.to);
    const window = `from=${new Date(to.getTime() - 86_400_000).toISOString()}&to=${to.toISOString()}`;
    const project = `project=${state.projectId}`;
    // what the dashboard's pages ask for (src/web/features/*/api.ts), by name
    const reads: Record<string, string> = {
      services: `/v1/services?${project}&${window}`,
      'services (org)': `/v1/services?${window}`,
      'services/map': `/v1/services/map?${project}&${window}`,
      'services/map (org)': `/v1/services/map?${window}`,
      'services/structure': `/v1/services/structure?${project}&${window}`,
      'services/dependencies': `/v1/services/dependencies?${project}&${window}`,
      traffic: `/v1/traffic?${project}&${window}`,
      'traffic (org)': `/v1/traffic?${window}`,
      'traffic step=300': `/v1/traffic?${project}&${window}&step=300`,
      'logs/patterns': `/v1/logs/patterns?${project}&${window}&limit=50`,
      'logs/patterns (org)': `/v1/logs/patterns?${window}&limit=50`,
      logs: `/v1/logs?${project}&${window}&limit=50`,
      'logs (org)': `/v1/logs?${window}&limit=50`,
      traces: `/v1/traces?${project}&${window}&limit=50`,
      'traces (org)': `/v1/traces?${window}&limit=50`,
      [`services/${API} approaching`]: `/v1/services/approaching?${project}&${window}`,
    };
    mkdirSync(ANSWERS, { recursive: true });
    const results: { read: string; path: string; runs: number[]; status: number; same?: boolean }[] = [];
    for (const [name, path] of Object.entries(reads)) {
      if (ONLY.length > 0 && !ONLY.includes(name)) continue;
      const runs: number[] = [];
      let reply: Awaited<ReturnType<typeof client.get>> | undefined;
      for (let run = 0; run < RUNS; run++) {
        const started = performance.now();
        reply = await client.get(path);
        runs.push(Math.round(performance.now() - started));
        if (reply.status !== 200) break;
      }
      const file = `${ANSWERS}/${DATABASE}-${name.replace(/\W+/g, '-')}.json`;
      let same: boolean | undefined;
      if (COMPARE && existsSync(file)) same = isDeepStrictEqual(JSON.parse(readFileSync(file, 'utf8')), reply!.body);
      else writeFileSync(file, `${JSON.stringify(reply!.body, null, 2)}\n`);
      results.push({ read: name, path, runs, status: reply!.status, ...(same !== undefined && { same }) });
      const sorted = [...runs].sort((a, b) => a - b);
      console.log(`${name}: ${reply!.status} median ${percentile(sorted, 50)} ms (min ${sorted[0]}, max ${sorted.at(-1)})${same === undefined ? '' : same ? ', answer unchanged' : ', ANSWER CHANGED'}${reply!.status === 200 ? '' : ` ${reply!.text.slice(0, 300)}`}`);
    }
    writeResults('reads', { at: new Date().toISOString(), database: DATABASE, records: state.records, runs: RUNS, results });
  } finally {
    await service.stop();
    if (process.env.BENCH_READS_DROP === '1') await store.drop();
    else await mongoose.disconnect();
  }
}

await main();
