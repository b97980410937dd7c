/**
 * The promise behind every 2xx from ingest: the data will be stored, exactly once, whatever fails.
 * The real service runs as separate processes (api, two ingest, two workers) on a Redis and a
 * FerretDB of this file's own. Under steady load, in turn: a worker process is killed (-9) while it
 * holds jobs (the survivor takes them back; then a new worker joins), Redis restarts, FerretDB is down
 * for 10 s, and an ingest process is stopped (SIGTERM) and replaced. Once the load stops, the queue drains and the
 * error events are counted (the recount sweep redoing counts lost with a worker), every acknowledged event and span must be
 * stored once, the issues' counts a user reads must add up to the events stored, and no job may be
 * left failed or pending. Run with `npm run test:chaos` (not part of `npm test`).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { mongo } from 'mongoose';
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { Span } from '../../src/shared/features/traces/model.js';
import { signUp } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client, type Reply } from '../support/http.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { startLoad, type Tally } from './load.js';
import { startOwnRedis, startOwnStore, type OwnRedis, type OwnStore } from '../support/own-servers.js';

const REDIS_PREFIX = `slk_chaos_${randomBytes(4).toString('hex')}`;
/** Each worker process takes two batches at once, so three active jobs mean both workers hold one. */
const WORKER_CONCURRENCY = 2;
/** A dead worker's jobs go back to the queue within about lock + 2 × stalled check (30 s + 60 s by default). */
const WORKER_LOCK_MS = 6000;
const WORKER_STALLED_CHECK_MS = 3000;
/** A note of error events waiting for their count is taken for lost after this (60 s by default). */
const WORKER_RECOUNT_AFTER_MS = 15_000;
const LOAD = { clients: 5, maxRequests: 4000, maxMs: 50_000, fingerprints: 5, spansEvery: 5, pauseMs: 25 };
const PAUSE_BETWEEN_FAULTS_MS = 4000;
const STORE_OUTAGE_MS = 10_000;
const DRAIN_DEADLINE_MS = 90_000;

let redis: OwnRedis;
let store: OwnStore;
let spoolDir: string;
const services: ServiceProcess[] = [];
let queue: Queue;
let queueEvents: QueueEvents;
const connections: Redis[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function serviceEnv(): Record<string, string> {
  return {
    MONGO_URL: store.mongoUrl,
    REDIS_URL: redis.url,
    REDIS_PREFIX,
    ...(store.ferretdbPostgresUrl && { FERRETDB_POSTGRES_URL: store.ferretdbPostgresUrl }),
    DASHBOARD_ORIGIN,
    PASSWORD_HASH_COST: '12',
    WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
    WORKER_LOCK_MS: String(WORKER_LOCK_MS),
    WORKER_STALLED_CHECK_MS: String(WORKER_STALLED_CHECK_MS),
    WORKER_RECOUNT_AFTER_MS: String(WORKER_RECOUNT_AFTER_MS),
  };
}

function start(role: 'api' | 'ingest' | 'workers', env: Record<string, string> = {}): ServiceProcess {
  const service = startService({ ...serviceEnv(), ROLE: role, ...env });
  services.push(service);
  return service;
}

/** Several processes starting from source at once on two cores take a while. */
const START_TIMEOUT_MS = 60_000;

/** An ingest process with a spool directory of its own (a replacement takes over the one it replaces). */
async function startIngest(spool: string): Promise<{ service: ServiceProcess; url: string }> {
  const service = start('ingest', { INGEST_SPOOL_DIR: spool });
  return { service, url: `http://127.0.0.1:${await service.portOf('ingest listening', START_TIMEOUT_MS)}` };
}

async function stopService(service: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return service.child.exitCode;
  const exited = once(service.child, 'exit');
  service.child.kill(signal);
  const [code] = await exited;
  return code as number | null;
}

/** A BullMQ connection to the suite's Redis that waits out its restart, as the workers' own do. */
function connection(): Redis {
  const client = new Redis(redis.url, { maxRetriesPerRequest: null, retryStrategy: (attempt) => Math.min(attempt * 100, 1000) });
  client.on('error', () => {});
  connections.push(client);
  return client;
}

const PENDING = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children'] as const;
/** The telemetry queue's jobs by state: those still to run, and those that failed for good. */
async function jobCounts() {
  const counts = await queue.getJobCounts(...PENDING, 'failed');
  const of = (state: string) => counts[state] ?? 0;
  return { pending: PENDING.reduce((sum, state) => sum + of(state), 0), failed: of('failed'), waiting: of('waiting'), active: of('active'), delayed: of('delayed') };
}

async function waitFor(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(200);
  }
  return Date.now() - started;
}

beforeAll(async () => {
  spoolDir = mkdtempSync(join(tmpdir(), 'sluice-chaos-spool-'));
  [redis, store] = await Promise.all([startOwnRedis(), startOwnStore()]);
  queue = new Queue('telemetry', { connection: connection(), prefix: REDIS_PREFIX });
  queueEvents = new QueueEvents('telemetry', { connection: connection(), prefix: REDIS_PREFIX });
  await queueEvents.waitUntilReady();
  // a clone whose global setup reused a FerretDB already running builds its own binary here first
}, 300_000);

afterAll(async () => {
  for (const service of services) await stopService(service);
  await queueEvents?.close();
  await queue?.close();
  for (const client of connections) client.disconnect();
  await redis?.close();
  await store?.close();
  if (spoolDir) rmSync(spoolDir, { recursive: true, force: true });
}, 60_000);

/** What a table of counts looks like on stdout: one `name: value` per line under a heading. */
function printCounts(title: string, rows: [string, unknown][]) {
  const width = Math.max(...rows.map(([name]) => name.length));
  process.stdout.write(`\n${title}\n${rows.map(([name, value]) => `  ${name.padEnd(width)}  ${typeof value === 'object' ? JSON.stringify(value) : value}`).join('\n')}\n`);
}

/** The ids stored in a collection for the project, with how many documents each has. */
async function storedIds(db: mongo.Db, collection: string, projectId: string, idOf: (doc: mongo.Document) => string): Promise<Map<string, number>> {
  const docs = await db.collection(collection).find({ projectId: new mongo.ObjectId(projectId) }).toArray();
  const ids = new Map<string, number>();
  for (const doc of docs) ids.set(idOf(doc), (ids.get(idOf(doc)) ?? 0) + 1);
  return ids;
}

/** Acknowledged ids compared with stored ones: lost (2xx, not stored), doubled, and stored without a 2xx. */
function compare(acknowledged: Set<string>, stored: Map<string, number>) {
  const lost = [...acknowledged].filter((id) => !stored.has(id));
  const duplicates = [...stored.values()].reduce((sum, n) => sum + n - 1, 0);
  const unacknowledged = [...stored.keys()].filter((id) => !acknowledged.has(id)).length;
  return { lost, duplicates, unacknowledged, documents: [...stored.values()].reduce((sum, n) => sum + n, 0) };
}

/** The issues a user sees for the project, every page. */
async function issuesThroughApi(client: Client, projectId: string): Promise<{ count: number }[]> {
  const issues: { count: number }[] = [];
  let cursor: string | null = null;
  do {
    const reply: Reply = await client.get(`/v1/issues?project=${projectId}&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (reply.status !== 200) throw new Error(`GET /v1/issues answered ${reply.status}: ${reply.text}`);
    issues.push(...reply.body.data);
    cursor = reply.body.next_cursor;
  } while (cursor);
  return issues;
}

test('every event and span ingest acknowledged is stored exactly once through a worker kill, a Redis restart, a store outage and an ingest restart', async () => {
  const api = start('api');
  const workers = [start('workers'), start('workers')];
  const ingests = await Promise.all([startIngest(join(spoolDir, 'a')), startIngest(join(spoolDir, 'b'))]);
  const apiClient = new Client(`http://127.0.0.1:${await api.portOf('api listening', START_TIMEOUT_MS)}`);
  await Promise.all(workers.map((worker) => worker.waitForLine('workers started', START_TIMEOUT_MS)));
  const owner = await signUp({ api: apiClient } as Harness);
  const project: ProjectWithDsn = await projectWithDsn(owner, ingests[0]!.url);

  const targets = ingests.map((ingest) => ingest.url);
  const stalled = new Set<string>();
  queueEvents.on('stalled', ({ jobId }) => stalled.add(jobId));
  const load = startLoad({ project, targets: () => targets, ...LOAD });
  const faults: [string, unknown][] = [];

  // 1. kill -9 a worker process while both hold batches (more jobs active than one worker takes at once)
  const busyAfter = await waitFor(async () => (await queue.getActiveCount()) > WORKER_CONCURRENCY, 'both workers to be busy', 20_000);
  const activeAtKill = await queue.getActiveCount();
  expect(await stopService(workers[0]!, 'SIGKILL')).toBeNull();
  faults.push(['worker killed (SIGKILL) after ms of load, with jobs active', [busyAfter, activeAtKill]]);
  await sleep(PAUSE_BETWEEN_FAULTS_MS);

  // 2. Redis restarts (SIGTERM: it writes its append-only file; then a new server on the same data)
  const redisStarted = Date.now();
  await redis.restart();
  faults.push(['Redis restarted in ms', Date.now() - redisStarted]);
  await sleep(PAUSE_BETWEEN_FAULTS_MS);

  // 3. the MongoDB-compatible server is killed, stays down 10 s, and comes back
  await store.outage(STORE_OUTAGE_MS);
  faults.push(['store down, then back, ms', STORE_OUTAGE_MS]);
  await sleep(PAUSE_BETWEEN_FAULTS_MS);

  // 4. an ingest process is stopped with SIGTERM (answering what it accepted) and a new one takes its place
  const stoppedIngest = ingests[0]!;
  const stopStarted = Date.now();
  const exitCode = await stopService(stoppedIngest.service);
  const stoppedIn = Date.now() - stopStarted;
  // as a load balancer's health check would, the gone process leaves the targets until its replacement serves
  targets.splice(targets.indexOf(stoppedIngest.url), 1);
  const replacement = await startIngest(join(spoolDir, 'a'));
  targets.push(replacement.url);
  faults.push(['ingest stopped (SIGTERM) in ms, exit code', [stoppedIn, exitCode]]);

  // once the survivor has taken the dead worker's jobs back, a new worker process joins, as an orchestrator would start one
  await waitFor(async () => stalled.size > 0, "the surviving worker to take back the dead worker's jobs", 30_000);
  await start('workers').waitForLine('workers started', START_TIMEOUT_MS);
  // warnings and errors the stopped ingest logged while shutting down
  const lines = stoppedIngest.service.lines;
  const shutdownLines = lines.slice(lines.findIndex((line) => line.msg === 'shutting down')).filter((line) => (line.level as number) >= 40);

  const tally: Tally = await load.finished;
  const pendingAtEnd = await jobCounts();
  const drainedAfter = await waitFor(async () => (await jobCounts()).pending === 0, 'the telemetry queue to drain', DRAIN_DEADLINE_MS);
  const counts = await jobCounts();

  const client = await mongo.MongoClient.connect(store.mongoUrl);
  try {
    const db = client.db();
    // error events are counted after their jobs complete: a count lost with the killed worker or to the outage is redone by the recount sweep
    const countedAfter = await waitFor(async () => (await db.collection('pending_counts').countDocuments()) === 0, 'every stored error event to be counted', DRAIN_DEADLINE_MS);
    const events = compare(tally.acknowledged.events, await storedIds(db, ErrorEvent.collection.collectionName, project.id, (doc) => doc.eventId));
    const spans = compare(tally.acknowledged.spans, await storedIds(db, Span.collection.collectionName, project.id, (doc) => `${doc.traceId}:${doc.spanId}`));
    const storedIssues = await db.collection('issues').find({ projectId: new mongo.ObjectId(project.id) }).toArray();
    const issues = await issuesThroughApi(owner.client, project.id);
    const apiCount = issues.reduce((sum, issue) => sum + issue.count, 0);
    const storedCount = storedIssues.reduce((sum, issue) => sum + (issue.eventCount as number), 0);

    printCounts(`Chaos run (store: FerretDB on ${store.backend})`, [
      ...faults,
      ['jobs waiting / active / delayed when the load stopped', [pendingAtEnd.waiting, pendingAtEnd.active, pendingAtEnd.delayed]],
      ['queue drained after load, ms', drainedAfter],
      ['every error event counted after the queue drained, ms', countedAfter],
      ['jobs a survivor took over from a dead worker (stalled)', stalled.size],
      ['events sent', tally.sent.events],
      ['events acknowledged (2xx)', tally.acknowledged.events.size],
      ['events refused, by status', tally.refused.events],
      ['events stored (documents)', events.documents],
      ['events acknowledged but not stored (lost)', events.lost.length],
      ['events stored more than once (duplicates)', events.duplicates],
      ['events stored without a 2xx (refused, yet kept)', events.unacknowledged],
      ['issues (API) and their summed event count', [issues.length, apiCount]],
      ['issues (database) and their summed eventCount', [storedIssues.length, storedCount]],
      ['spans sent', tally.sent.spans],
      ['spans acknowledged (2xx)', tally.acknowledged.spans.size],
      ['spans refused, by status', tally.refused.spans],
      ['spans stored (documents)', spans.documents],
      ['spans acknowledged but not stored (lost)', spans.lost.length],
      ['spans stored more than once (duplicates)', spans.duplicates],
      ['jobs failed / waiting / active / delayed', [counts.failed, counts.waiting, counts.active, counts.delayed]],
    ]);

    expect({ exitCode, shutdownLines }).toEqual({ exitCode: 0, shutdownLines: [] });
    // the faults really happened under load: refusals were seen, and a dead worker's job was finished by the survivor
    expect(tally.acknowledged.events.size).toBeGreaterThan(500);
    expect(stalled.size).toBeGreaterThan(0);
    expect({ lost: events.lost.slice(0, 10), duplicates: events.duplicates }).toEqual({ lost: [], duplicates: 0 });
    expect({ lost: spans.lost.slice(0, 10), duplicates: spans.duplicates }).toEqual({ lost: [], duplicates: 0 });
    // what a user reads adds up: each stored event counted once into its issue
    expect(apiCount).toBe(events.documents);
    expect(storedCount).toBe(events.documents);
    expect(issues).toHaveLength(LOAD.fingerprints);
    expect(counts.failed).toBe(0);
  } finally {
    await client.close();
  }
}, 210_000);
