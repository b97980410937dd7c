/**
 * Ingest's disk spool, through real processes: the service (all roles, as `npm start` runs it) against
 * a Redis of this file's own, which the test stops and starts. While Redis is down ingest still answers
 * 200 and keeps the batches on disk; a restart of the service keeps them; when Redis returns they are
 * replayed and stored exactly once.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { mongo } from 'mongoose';
import { DiskSpool, SpoolFullError } from '../../src/ingest/spool.js';
import { startOwnRedis, type OwnRedis } from '../support/own-servers.js';
import { createApiKey, signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/wait.js';

const database = `slk_test_spool_${randomBytes(4).toString('hex')}`;
const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
const spoolDir = mkdtempSync(join(tmpdir(), 'sluice-spool-'));
let redis: OwnRedis;
let service: ServiceProcess;
let env: Record<string, string>;

async function start() {
  service = startService(env);
  const api = new Client(`http://127.0.0.1:${await service.portOf('api listening', 60_000)}`);
  const ingest = new Client(`http://127.0.0.1:${await service.portOf('ingest listening', 60_000)}`);
  return { api, ingest };
}

beforeAll(async () => {
  redis = await startOwnRedis();
  env = { MONGO_URL: mongoUrl, REDIS_URL: redis.url, INGEST_SPOOL_DIR: spoolDir, DASHBOARD_ORIGIN, PASSWORD_HASH_COST: '12' };
}, 30_000);

afterAll(async () => {
  await service?.stop();
  await redis?.close();
  rmSync(spoolDir, { recursive: true, force: true });
  const client = await mongo.MongoClient.connect(mongoUrl);
  await client.db(database).dropDatabase();
  await client.close();
});

const spooled = () => readdirSync(spoolDir).filter((name) => name.endsWith('.json'));

test('with Redis down, ingest answers 200 and spools; a restart keeps the spool; when Redis returns every event is stored exactly once', async () => {
  let { api, ingest } = await start();
  const owner = await signUp({ api } as Harness);
  const project: ProjectWithDsn = await projectWithDsn(owner, ingest.baseUrl);
  const { secret } = await createApiKey(owner);
  const issuesOf = async () => (await api.with({ bearer: secret }).get(`/v1/issues?project=${project.id}`)).body.data as { count: number }[];
  const send = (client: Client, ids: string[]) =>
    Promise.all(ids.map((id) => client.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ event_id: id }) }]))));
  const ids = (n: number) => Array.from({ length: n }, () => randomBytes(16).toString('hex'));

  // the DSN is looked up once while everything is up, as a live client's would have been
  const warm = ids(1);
  expect((await send(ingest, warm)).map((reply) => reply.status)).toEqual([200]);

  await redis.stop();
  const whileDown = ids(20);
  const started = Date.now();
  const replies = await send(ingest, whileDown);
  expect(replies.map((reply) => reply.status)).toEqual(whileDown.map(() => 200));
  expect(replies.map((reply) => reply.body.id)).toEqual(whileDown);
  expect(Date.now() - started).toBeLessThan(5000);
  expect(spooled().length).toBeGreaterThan(0);

  // /readyz stays ready (the spool has room) and says Redis is down and what the spool holds
  const ready = await ingest.get('/readyz');
  expect(ready.status).toBe(200);
  expect(ready.body.checks).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ name: 'redis', status: 'down', required: false, error: expect.stringMatching(/disk spool/) }),
      expect.objectContaining({ name: 'spool', status: 'ok', batches: spooled().length, bytes: expect.any(Number), full: false }),
    ]),
  );

  // a restart while Redis is still down keeps what was spooled, and spools more
  const before = spooled();
  await service.stop();
  expect(spooled()).toEqual(expect.arrayContaining(before));
  ({ api, ingest } = await start());
  const afterRestart = ids(5);
  expect((await send(ingest, afterRestart)).map((reply) => reply.status)).toEqual(afterRestart.map(() => 200));
  expect(service.lines.some((line) => line.msg === 'ingest spool holds batches from an earlier run; replaying them once Redis answers')).toBe(true);

  await redis.start();
  await eventually(async () => (spooled().length === 0 ? true : undefined), 'the spool to be replayed', 20_000);
  const expected = warm.length + whileDown.length + afterRestart.length;
  const issues = await eventually(async () => {
    const list = await issuesOf();
    const total = list.reduce((sum, issue) => sum + issue.count, 0);
    return total === expected ? list : undefined;
  }, `${expected} events counted`, 30_000);
  expect(issues.reduce((sum, issue) => sum + issue.count, 0)).toBe(expected);

  // resending a spooled request changes nothing: its event is already stored
  expect((await send(ingest, whileDown.slice(0, 3))).map((reply) => reply.status)).toEqual([200, 200, 200]);
  const client = await mongo.MongoClient.connect(mongoUrl);
  try {
    await eventually(async () => ((await client.db(database).collection('errorevents').countDocuments({ issueId: { $ne: null } })) === expected ? true : undefined), 'stored events');
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await client.db(database).collection('errorevents').countDocuments()).toBe(expected);
    const recount = await issuesOf();
    expect(recount.reduce((sum, issue) => sum + issue.count, 0)).toBe(expected);
  } finally {
    await client.close();
  }
}, 240_000);

describe('the spool on its own', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'sluice-spool-unit-'));

  test('past its size cap a write is refused and the spool says it is full until a batch leaves', async () => {
    const at = dir();
    try {
      const spool = await DiskSpool.open(at, 300);
      await spool.write('a', { records: { errors: ['x'.repeat(100)] } });
      await expect(spool.write('b', { records: { errors: ['x'.repeat(200)] } })).rejects.toThrow(SpoolFullError);
      expect(spool.status()).toMatchObject({ batches: 1, full: true });
      const delivered: string[] = [];
      await spool.drain({ deliver: async (id) => void delivered.push(id), expire: async () => {}, corrupt: () => {} }, 60_000);
      expect(delivered).toEqual(['a']);
      expect(spool.status()).toMatchObject({ batches: 0, bytes: 0, full: false });
    } finally {
      rmSync(at, { recursive: true, force: true });
    }
  });

  test('a reopened spool replays oldest first, discards batches past their age, sets aside what no longer parses, and stops at a failed delivery', async () => {
    const at = dir();
    try {
      const first = await DiskSpool.open(at, 1_000_000);
      const now = Date.now();
      await first.write('old', { n: 1 }, now - 10_000);
      await first.write('older', { n: 0 }, now - 20_000);
      await first.write('fresh', { n: 2 }, now - 1_000);
      await first.write('later', { n: 3 }, now);
      writeFileSync(join(at, `${String(now - 5_000).padStart(15, '0')}-broken.json`), '{"records": ');
      writeFileSync(join(at, 'cut-short.json.tmp'), '{');

      const reopened = await DiskSpool.open(at, 1_000_000);
      expect(reopened.status().batches).toBe(5);
      expect(readdirSync(at)).not.toContain('cut-short.json.tmp');
      const seen: string[] = [];
      const drain = {
        deliver: async (id: string) => {
          if (id === 'later') throw new Error('Redis went away again');
          seen.push(`deliver ${id}`);
        },
        expire: async (id: string) => void seen.push(`expire ${id}`),
        corrupt: (name: string) => void seen.push(`corrupt ${name.split('-')[1]}`),
      };
      await expect(reopened.drain(drain, 15_000, () => now)).rejects.toThrow('Redis went away again');
      expect(seen).toEqual(['expire older', 'deliver old', 'corrupt broken.json', 'deliver fresh']);
      expect(reopened.status().batches).toBe(1);
      expect(readdirSync(at).sort()).toEqual([expect.stringMatching(/-broken\.json\.corrupt$/), expect.stringMatching(/-later\.json$/)]);
    } finally {
      rmSync(at, { recursive: true, force: true });
    }
  });
});
