import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { mongo } from 'mongoose';
import pg from 'pg';
import { ferretdbTables, plannedIndexes } from '../../src/shared/clients/ferretdb-indexes.js';
import { LOCAL_DATABASE } from '../../src/shared/local-services.js';
import { startService } from '../support/service-process.js';

test('all roles start, answer /readyz, and stop cleanly on SIGTERM', async () => {
  const database = `slk_test_process_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  const { child, lines, portOf, waitForLine, stop } = startService({ MONGO_URL: mongoUrl });
  try {
    const apiPort = await portOf('api listening');
    const ingestPort = await portOf('ingest listening');
    // the workers declare their schedules in the background, so the servers may listen first
    await waitForLine('workers started');
    for (const port of [apiPort, ingestPort]) expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
    await expect(fetch(`http://127.0.0.1:${apiPort}/healthz`)).rejects.toThrow();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await stop();
    const client = await mongo.MongoClient.connect(mongoUrl);
    await client.db(database).dropDatabase();
    await client.close();
  }
}, 40_000);

test('a Redis that may evict keys is warned about loudly at start; noeviction is not', async () => {
  const database = `slk_test_process_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  const redis = new Redis(process.env.TEST_REDIS_URL!);
  const [, before] = (await redis.config('GET', 'maxmemory-policy')) as string[];
  const warnings = async (policy: string) => {
    await redis.config('SET', 'maxmemory-policy', policy);
    const service = startService({ MONGO_URL: mongoUrl, ROLE: 'api' });
    try {
      await service.portOf('api listening');
      return service.lines.filter((line) => line.level === 40 && /maxmemory-policy/.test(String(line.msg)));
    } finally {
      await service.stop();
    }
  };
  try {
    const evicting = await warnings('allkeys-lru');
    expect(evicting).toEqual([expect.objectContaining({ policy: 'allkeys-lru', msg: expect.stringContaining('Set maxmemory-policy to noeviction') })]);
    expect(await warnings('noeviction')).toEqual([]);
  } finally {
    await redis.config('SET', 'maxmemory-policy', before!);
    await redis.quit();
    const client = await mongo.MongoClient.connect(mongoUrl);
    await client.db(database).dropDatabase();
    await client.close();
  }
}, 60_000);

const postgresUrl = process.env.TEST_FERRETDB_POSTGRES_URL;
const onPostgres = postgresUrl ? test : test.skip;

/** The issue collection's GIN indexes that the service should have made in a database, and those missing. */
async function issueIndexes(database: string): Promise<{ planned: number; missing: string[] }> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    const tables = await ferretdbTables(client, database);
    expect(tables.has('issues')).toBe(true);
    const { rows } = await client.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND indexdef LIKE '%USING gin%'", [database]);
    const existing = new Set(rows.map((row) => row.indexname));
    const planned = plannedIndexes(tables, [{ collection: 'issues', fields: ['orgId', 'projectId', 'hash'] }]);
    return { planned: planned.length, missing: planned.filter((index) => !existing.has(index.name)).map((index) => index.field) };
  } finally {
    await client.end();
  }
}

async function readyThenStop({ portOf, stop }: ReturnType<typeof startService>, check: () => Promise<void>) {
  try {
    const apiPort = await portOf('api listening');
    expect((await fetch(`http://127.0.0.1:${apiPort}/readyz`)).status).toBe(200);
    await check();
  } finally {
    await stop();
  }
}

onPostgres('with MONGO_URL unset it runs on FerretDB on PostgreSQL, with an index for every indexed field', async () => {
  await readyThenStop(startService({ MONGO_URL: undefined, LOCAL_STORE: undefined }), async () => {
    expect(await issueIndexes(LOCAL_DATABASE)).toEqual({ planned: 4, missing: [] });
  });
}, 40_000);

onPostgres('a FerretDB on PostgreSQL named by MONGO_URL gets those indexes only when FERRETDB_POSTGRES_URL says where its tables are', async () => {
  const database = `slk_test_process_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  try {
    await readyThenStop(startService({ MONGO_URL: mongoUrl }), async () => {
      expect((await issueIndexes(database)).missing).toEqual(['_id', 'orgId', 'projectId', 'hash']);
    });
    await readyThenStop(startService({ MONGO_URL: mongoUrl, FERRETDB_POSTGRES_URL: postgresUrl }), async () => {
      expect(await issueIndexes(database)).toEqual({ planned: 4, missing: [] });
    });
  } finally {
    const client = await mongo.MongoClient.connect(mongoUrl);
    await client.db(database).dropDatabase();
    await client.close();
  }
}, 60_000);
