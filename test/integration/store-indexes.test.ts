/**
 * The GIN expression indexes on FerretDB's PostgreSQL tables (src/shared/clients/ferretdb-indexes.ts):
 * present for every model's collection, recreated by the scheduled job after a collection is dropped
 * and recreated, used by FerretDB's queries, and invisible in what those queries answer.
 * Needs the store to be FerretDB on PostgreSQL, as `npm test` chooses whenever PostgreSQL answers.
 */
import { Types } from 'mongoose';
import mongoose from 'mongoose';
import pg from 'pg';
import { createBlobStore } from '../../src/shared/clients/blob.js';
import { ensureExpressionIndexes, ferretdbTables, plannedIndexes } from '../../src/shared/clients/ferretdb-indexes.js';
import { ensureIndexes, indexedFields, openStoreExpiry, store } from '../../src/shared/clients/mongo.js';
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { Log } from '../../src/shared/features/logs/model.js';
import { Span } from '../../src/shared/features/traces/model.js';
import { createLogger } from '../../src/shared/logger.js';
import { maintenanceProcessor } from '../../src/workers/processors/maintenance.js';
import type { Job } from 'bullmq';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

const postgresUrl = process.env.TEST_FERRETDB_POSTGRES_URL ?? '';
const onPostgres = postgresUrl ? describe : describe.skip;

let h: Harness;
useHarness((harness) => (h = harness));

async function withPostgres<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

const database = () => mongoose.connection.name;

/** The names of our GIN indexes that exist on each collection's table now. */
async function ginIndexes(): Promise<{ planned: ReturnType<typeof plannedIndexes>; existing: Set<string>; tables: Map<string, string> }> {
  return withPostgres(async (client) => {
    const tables = await ferretdbTables(client, database());
    const { rows } = await client.query<{ indexname: string; indexdef: string }>('SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1', [database()]);
    return { tables, planned: plannedIndexes(tables, indexedFields()), existing: new Set(rows.filter((r) => r.indexdef.includes('USING gin')).map((r) => r.indexname)) };
  });
}

const runStoreIndexJob = () =>
  maintenanceProcessor({ logger: createLogger('silent'), blobs: createBlobStore(h.config), ferretdbPostgresUrl: postgresUrl, recountAfterMs: h.config.WORKER_RECOUNT_AFTER_MS })({ name: 'store-indexes' } as Job);

const projectId = new Types.ObjectId();
const orgId = new Types.ObjectId();

function spans(count: number) {
  const start = Date.UTC(2026, 10, 1);
  return Array.from({ length: count }, (_, i) => ({
    orgId,
    projectId,
    traceId: `trace-${i % 250}`,
    spanId: `span-${i}`,
    parentSpanId: i % 4 === 0 ? null : `span-${i - 1}`,
    name: `GET /items/${i % 7}`,
    kind: 'server',
    service: `service-${i % 5}`,
    startAt: new Date(start + i * 1000),
    endAt: new Date(start + i * 1000 + 20),
    durationMs: (i % 13) * 1.5,
    status: i % 11 === 0 ? 'error' : 'ok',
    category: i % 3 === 0 ? 'db' : 'http',
    isSegment: i % 4 === 0,
    attributes: [{ key: 'http.route', value: `/items/${i % 7}` }],
    source: 'otlp',
  }));
}

onPostgres('GIN expression indexes on FerretDB’s PostgreSQL backend', () => {
  test('every model’s collection has its table found and an index for _id and each indexed field', async () => {
    const { planned, existing, tables } = await ginIndexes();
    for (const { collection } of indexedFields()) expect(tables.has(collection)).toBe(true);
    // _id and at least one declared field for every collection
    expect(planned.length).toBeGreaterThan(indexedFields().length * 2);
    expect(planned.filter((index) => !existing.has(index.name))).toEqual([]);
    expect(planned.find((index) => index.collection === 'projectkeys' && index.field === 'publicKey')).toBeDefined();
  });

  test('FerretDB’s queries use them: an equality lookup is a bitmap index scan, not a sequential scan', async () => {
    await Span.collection.insertMany(spans(3000));
    const { planned } = await ginIndexes();
    const traceIndex = planned.find((index) => index.collection === 'spans' && index.field === 'traceId')!;
    await withPostgres((client) => client.query(`ANALYZE "${database()}"."${traceIndex.table}"`));
    const explained = (await Span.collection.find({ traceId: 'trace-17' }).explain()) as { queryPlanner: unknown };
    const plan = JSON.stringify(explained.queryPlanner);
    expect(plan).toContain(traceIndex.name);
    expect(plan).not.toContain('Seq Scan');
  });

  test('dates get no index, and an index of a field no longer planned is dropped by the scheduled job', async () => {
    const { planned, tables } = await ginIndexes();
    const spanFields = planned.filter((index) => index.collection === 'spans').map((index) => index.field);
    expect(spanFields).toEqual(expect.arrayContaining(['_id', 'orgId', 'traceId', 'page']));
    expect(spanFields).not.toContain('startAt');

    // an index an earlier version planned, on a date
    const [stale] = await ensureExpressionIndexes(postgresUrl, database(), [{ collection: 'spans', fields: ['startAt'] }]);
    expect(stale).toMatchObject({ collection: 'spans', field: 'startAt', table: tables.get('spans') });
    expect((await ginIndexes()).existing.has(stale!.name)).toBe(true);

    await runStoreIndexJob();
    const after = await ginIndexes();
    expect(after.existing.has(stale!.name)).toBe(false);
    expect(after.planned.filter((index) => !after.existing.has(index.name))).toEqual([]);
  });

  test('once the job has analysed a table, a lookup within one organisation reads only the selective field’s index', async () => {
    // every event in one organisation: its orgId index matches every row, and grows with the table
    await ErrorEvent.collection.insertMany(
      Array.from({ length: 3000 }, (_, i) => ({
        _id: new Types.ObjectId(),
        orgId,
        projectId,
        eventId: `event-${i}`,
        issueId: new Types.ObjectId(),
        page: 0,
        batchId: `batch-${i % 30}`,
        timestamp: new Date(),
        receivedAt: new Date(),
        title: 'Error',
        traceId: `trace-${i % 1000}`,
        data: '{}',
      })),
    );
    const { planned, tables } = await ginIndexes();
    const index = (field: string) => planned.find((candidate) => candidate.collection === 'errorevents' && candidate.field === field)!.name;
    const analysed = () =>
      withPostgres(async (client) => {
        const { rows } = await client.query<{ analysed: boolean }>('SELECT last_analyze IS NOT NULL AS analysed FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2', [
          database(),
          tables.get('errorevents'),
        ]);
        return rows[0]?.analysed;
      });
    // PostgreSQL's row counts reach its statistics views within a second or so
    await eventually(async () => {
      await runStoreIndexJob();
      return (await analysed()) ? true : undefined;
    }, 'the errorevents table analysed');

    const explained = (await ErrorEvent.collection.find({ orgId, traceId: 'trace-17' }).explain()) as { queryPlanner: unknown };
    const plan = JSON.stringify(explained.queryPlanner);
    expect(plan).toContain(index('traceId'));
    expect(plan).not.toContain(index('orgId'));
    expect(await ErrorEvent.collection.countDocuments({ orgId, traceId: 'trace-17' })).toBe(3);
  });

  test('the scheduled job analyses a table that fills up without statistics', async () => {
    await Log.collection.insertMany(Array.from({ length: 1500 }, (_, i) => ({ _id: new Types.ObjectId(), orgId, projectId, body: `line ${i}`, time: new Date() })));
    const { tables } = await ginIndexes();
    const analysed = () =>
      withPostgres(async (client) => {
        const { rows } = await client.query<{ analysed: boolean }>(
          'SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analysed FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
          [database(), tables.get('logs')],
        );
        return rows[0]?.analysed;
      });
    expect(await analysed()).toBe(false);
    // PostgreSQL's row counts reach its statistics views within a second or so
    await eventually(async () => {
      await runStoreIndexJob();
      return (await analysed()) ? true : undefined;
    }, 'the logs table analysed');
  });

  test('queries answer the same with and without the indexes', async () => {
    const queries = {
      byId: async () => Span.collection.find({ spanId: 'span-5' }).project({ _id: 0 }).toArray(),
      oneTrace: async () => Span.collection.find({ projectId, traceId: 'trace-3' }).sort({ spanId: 1 }).project({ _id: 0 }).toArray(),
      serviceAndStatus: async () => (await Span.collection.find({ service: 'service-2', status: 'error' }).toArray()).length,
      inList: async () => (await Span.collection.find({ traceId: { $in: ['trace-1', 'trace-2'] } }).toArray()).length,
      range: async () => (await Span.collection.find({ projectId, startAt: { $gte: new Date(Date.UTC(2026, 10, 1, 0, 10)) } }).toArray()).length,
      notEqual: async () => (await Span.collection.find({ category: { $ne: 'db' } }).toArray()).length,
      count: async () => Span.collection.countDocuments({ projectId, category: 'db' }),
      sorted: async () => (await Span.collection.find({ orgId }).sort({ durationMs: -1, spanId: 1 }).limit(5).toArray()).map((span) => span.spanId),
      missing: async () => Span.collection.find({ traceId: 'no-such-trace' }).toArray(),
    };
    const answer = async () => Object.fromEntries(await Promise.all(Object.entries(queries).map(async ([name, query]) => [name, await query()])));

    const withIndexes = await answer();
    const { planned } = await ginIndexes();
    await withPostgres(async (client) => {
      for (const index of planned.filter((candidate) => candidate.collection === 'spans')) await client.query(`DROP INDEX "${database()}"."${index.name}"`);
    });
    const without = await answer();
    await runStoreIndexJob();
    const again = await answer();

    expect(withIndexes.oneTrace).toHaveLength(12);
    expect(withIndexes.missing).toEqual([]);
    expect(without).toEqual(withIndexes);
    expect(again).toEqual(withIndexes);
  });

  test('a dropped and recreated collection gets its indexes back from the scheduled job, on its new table', async () => {
    await Span.collection.drop();
    await Span.collection.insertOne(spans(1)[0]!);

    const recreated = await ginIndexes();
    expect(recreated.tables.has('spans')).toBe(true);
    const missing = () => recreated.planned.filter((index) => index.collection === 'spans' && !recreated.existing.has(index.name));
    expect(missing().length).toBeGreaterThan(0);

    const result = await runStoreIndexJob();
    expect(result).toEqual({ created: missing().length });
    const after = await ginIndexes();
    expect(after.planned.filter((index) => !after.existing.has(index.name))).toEqual([]);
    // a second run finds nothing to do
    expect(await runStoreIndexJob()).toEqual({ created: 0 });
  });
});

onPostgres('retention’s deletes made in FerretDB’s PostgreSQL tables', () => {
  test('remove exactly the documents the driver’s deleteMany({orgId, time: {$lt: cutoff}}) would, and nothing FerretDB then reads differently', async () => {
    const cutoff = new Date(Date.UTC(2026, 10, 1, 12));
    const otherOrg = new Types.ObjectId();
    const times: unknown[] = [
      new Date(cutoff.getTime() - 30 * 86_400_000),
      new Date(cutoff.getTime() - 1),
      cutoff,
      new Date(cutoff.getTime() + 1),
      null,
      undefined,
      cutoff.getTime() - 1000, // a number, not a date: MongoDB's $lt with a date never matches it
      'yesterday',
    ];
    // one document per time for this organisation, another organisation, an orgId kept as a string, and none
    const owners: unknown[] = [orgId, otherOrg, orgId.toHexString(), undefined];
    const docs = owners.flatMap((owner, o) =>
      times.map((time, t) => ({ _id: `doc-${o}-${t}`, ...(owner !== undefined && { orgId: owner }), ...(time !== undefined && { at: time }), label: `owner ${o}, time ${t}` })),
    );
    const collection = mongoose.connection.db!.collection<{ _id: string; label: string }>('expiry_probe');
    const labels = async () => (await collection.find({}).toArray()).map((doc) => doc.label).sort();
    const expectedGone = async (filter: Record<string, unknown>) => (await collection.find(filter).toArray()).map((doc) => doc.label);

    await collection.insertMany(docs.map((doc) => ({ ...doc })));
    const gone = await expectedGone({ orgId, at: { $lt: cutoff } });
    expect(gone.sort()).toEqual(['owner 0, time 0', 'owner 0, time 1']);
    const goneWithoutOrg = await expectedGone({ at: { $lt: cutoff } });
    expect(goneWithoutOrg).toHaveLength(owners.length * 2);

    const expiry = await openStoreExpiry(postgresUrl);
    try {
      const all = await labels();
      expect(await expiry.deleteOlder('expiry_probe', 'at', cutoff, orgId.toHexString())).toBe(2);
      expect(await labels()).toEqual(all.filter((label) => !gone.includes(label)));
      expect(await expiry.deleteOlder('expiry_probe', 'at', cutoff, orgId.toHexString())).toBe(0);

      expect(await expiry.deleteOlder('expiry_probe', 'at', cutoff)).toBe(goneWithoutOrg.length - 2);
      expect(await labels()).toEqual(all.filter((label) => !goneWithoutOrg.includes(label)));
      // FerretDB reads what is left as before: by _id, by equality, by range
      expect(await collection.findOne({ _id: 'doc-0-2' })).toMatchObject({ orgId, at: cutoff });
      expect(await collection.countDocuments({ orgId })).toBe(times.length - 2);
      expect(await collection.countDocuments({ at: { $gte: cutoff } })).toBe(owners.length * 2);

      expect(await expiry.deleteOlder('no_such_collection', 'at', cutoff, orgId.toHexString())).toBe(0);
    } finally {
      await expiry.close();
      await collection.drop();
    }
  });
  test('find a page of the expired documents with a field of each, and delete them by _id', async () => {
    const cutoff = new Date(Date.UTC(2026, 10, 1, 12));
    const collection = mongoose.connection.db!.collection<{ _id: Types.ObjectId; orgId: Types.ObjectId; at: Date; blobKey?: string }>('expiry_pages');
    const docs = [-3, -2, -1, 1].map((hours) => ({ _id: new Types.ObjectId(), orgId, at: new Date(cutoff.getTime() + hours * 3_600_000), blobKey: `blob ${hours}` }));
    await collection.insertMany([...docs, { _id: new Types.ObjectId(), orgId: new Types.ObjectId(), at: new Date(0), blobKey: 'another organisation' }]);
    const expiry = await openStoreExpiry(postgresUrl);
    try {
      const first = await expiry.findOlder('expiry_pages', 'at', cutoff, orgId.toHexString(), 2, 'blobKey');
      expect(first).toHaveLength(2);
      const old = new Map(docs.slice(0, 3).map((doc) => [doc._id.toHexString(), doc.blobKey]));
      for (const row of first) expect(row.value).toBe(old.get(row.id));

      expect(await expiry.deleteIds('expiry_pages', [...first.map((row) => row.id), new Types.ObjectId().toHexString()])).toBe(2);
      const rest = await expiry.findOlder('expiry_pages', 'at', cutoff, orgId.toHexString(), 2, 'blobKey');
      expect(rest.map((row) => row.value)).toEqual([...old.values()].filter((key) => !first.some((row) => row.value === key)));
      expect(await expiry.deleteIds('expiry_pages', rest.map((row) => row.id))).toBe(1);
      expect(await expiry.findOlder('expiry_pages', 'at', cutoff, orgId.toHexString(), 2, 'blobKey')).toEqual([]);
      expect((await collection.find({}).toArray()).map((doc) => doc.blobKey).sort()).toEqual(['another organisation', 'blob 1']);
    } finally {
      await expiry.close();
      await collection.drop();
    }
  });
});

describe('the indexes FerretDB keeps', () => {
  test('only unique ones: one an earlier version made that no read can use is dropped at start, and uniqueness still holds', async () => {
    if (!store.ferretdb) return;
    await ErrorEvent.collection.createIndex({ batchId: 1 }, { name: 'batchId_1' });
    expect((await ErrorEvent.collection.indexes()).map((index) => index.name)).toContain('batchId_1');

    await ensureIndexes();

    const kept = await ErrorEvent.collection.indexes();
    expect(kept.map((index) => index.name).sort()).toEqual(['_id_', 'projectId_1_eventId_1']);
    const event = { projectId, orgId, eventId: 'e1', issueId: new Types.ObjectId(), page: 0, batchId: 'b', timestamp: new Date(), receivedAt: new Date(), title: 't', data: '{}' };
    await ErrorEvent.collection.insertOne({ ...event, _id: new Types.ObjectId() });
    await expect(ErrorEvent.collection.insertOne({ ...event, _id: new Types.ObjectId() })).rejects.toMatchObject({ code: 11000 });
  });
});

onPostgres('FerretDB’s sessions with PostgreSQL on loopback', () => {
  test('carry no TLS, and an error event’s JSON is compressed with lz4', async () => {
    // a long event body, as the SDKs send: PostgreSQL compresses a row's jsonb past about 2 kB
    const data = JSON.stringify({ exception: { values: Array.from({ length: 60 }, (_, i) => ({ type: 'TypeError', value: `frame ${i} of a long stack` })) } });
    await ErrorEvent.collection.insertOne({ _id: new Types.ObjectId(), projectId, orgId, eventId: 'lz4', issueId: new Types.ObjectId(), page: 0, batchId: 'b', timestamp: new Date(), receivedAt: new Date(), title: 't', data });
    const { tables } = await ginIndexes();
    await withPostgres(async (client) => {
      const sessions = await client.query<{ ssl: boolean }>(
        "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = current_database() AND a.application_name = 'FerretDB'",
      );
      expect(sessions.rows.length).toBeGreaterThan(0);
      expect(sessions.rows.filter((row) => row.ssl)).toEqual([]);
      const stored = await client.query<{ compression: string | null }>(
        `SELECT pg_column_compression(_jsonb) AS compression FROM "${database()}"."${tables.get('errorevents')}" WHERE _jsonb->'eventId' @> '"lz4"'`,
      );
      expect(stored.rows).toEqual([{ compression: 'lz4' }]);
    });
  });
});
