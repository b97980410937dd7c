/**
 * Index-backed lookups for FerretDB 1.24 on PostgreSQL.
 *
 * FerretDB keeps each collection as a table with one `jsonb` column, `_jsonb`, and pushes top-level
 * scalar equality down to PostgreSQL as `_jsonb->'field' @> value`. The indexes FerretDB itself
 * creates for `createIndex` are btree indexes, which `@>` cannot use, so every find, update and
 * delete reads the whole table. A GIN index on the expression `(_jsonb->'field')` serves `@>`: this
 * module creates one for `_id` and for every field that a model's indexes name, on the table
 * FerretDB chose for each collection (its `_ferretdb_database_metadata` table maps names to tables).
 *
 * It runs only against FerretDB's own PostgreSQL database (the local services say when the store is
 * that); a real MongoDB never sees it. Every statement is idempotent, so it runs at each start and
 * again on a schedule, which covers a collection FerretDB created (or recreated) since.
 *
 * Retention's finds and deletes by age are made here too (`openTableExpiry`): FerretDB pushes no
 * range down, so its own `deleteMany({orgId, time: {$lt}})` decodes every document of the
 * organisation, and no `$in` either, so a delete of a page of `_id`s decodes every document.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';

const METADATA_TABLE = '_ferretdb_database_metadata';
/** Our indexes' names start with this; FerretDB's start with their table's name. */
const INDEX_PREFIX = 'slk_gin_';

export interface CollectionFields {
  collection: string;
  /** Top-level fields that equality filters name; dotted paths are never pushed down, so they are skipped. */
  fields: string[];
}

export interface ExpressionIndex {
  collection: string;
  table: string;
  field: string;
  name: string;
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** PostgreSQL names are at most 63 bytes, so ours are a fixed-length hash of table and field. */
const indexName = (table: string, field: string) => `${INDEX_PREFIX}${createHash('sha256').update(`${table}\0${field}`).digest('hex').slice(0, 24)}`;

/** The table FerretDB keeps each collection of a database (= PostgreSQL schema) in. */
export async function ferretdbTables(client: pg.ClientBase, database: string): Promise<Map<string, string>> {
  const exists = await client.query('SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2', [database, METADATA_TABLE]);
  if (!exists.rowCount) return new Map();
  const { rows } = await client.query<{ collection: string; table: string }>(
    `SELECT _jsonb->>'_id' AS collection, _jsonb->>'table' AS table FROM ${quoteIdent(database)}.${quoteIdent(METADATA_TABLE)}`,
  );
  return new Map(rows.map((row) => [row.collection, row.table]));
}

/** The GIN expression indexes this module would have for these collections, given the tables that exist now. */
export function plannedIndexes(tables: Map<string, string>, collections: CollectionFields[]): ExpressionIndex[] {
  return collections.flatMap(({ collection, fields }) => {
    const table = tables.get(collection);
    if (!table) return [];
    const topLevel = [...new Set(['_id', ...fields])].filter((field) => !field.includes('.'));
    return topLevel.map((field) => ({ collection, table, field, name: indexName(table, field) }));
  });
}

/** Errors that mean another process got there first, or the table went away meanwhile: nothing to do. */
const benign = new Set(['42P07' /* duplicate_table */, '23505' /* unique_violation in pg_class */, '42P01' /* undefined_table */]);

/** Runs a maintenance statement; true when it ran, false when it had nothing to do (see `benign`). */
async function maintain(client: pg.ClientBase, sql: string): Promise<boolean> {
  try {
    await client.query(sql);
    return true;
  } catch (error) {
    if (!benign.has((error as { code?: string }).code ?? '')) throw error;
    return false;
  }
}

async function connect(postgresUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl });
  client.on('error', () => {});
  await client.connect();
  return client;
}

async function withClient<T>(postgresUrl: string, use: (client: pg.ClientBase) => Promise<T>): Promise<T> {
  const client = await connect(postgresUrl);
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Creates the missing GIN expression indexes of these collections in `database` and returns the ones
 * it created; drops ours on their tables that are no longer planned (a field a model stopped
 * indexing), which every insert would otherwise keep up to date for nothing. `jsonb_path_ops` is the
 * GIN operator class made for `@>`: smaller and faster than the default.
 */
export function ensureExpressionIndexes(postgresUrl: string, database: string, collections: CollectionFields[]): Promise<ExpressionIndex[]> {
  return withClient(postgresUrl, async (client) => {
    const planned = plannedIndexes(await ferretdbTables(client, database), collections);
    const { rows } = await client.query<{ indexname: string; tablename: string }>(
      'SELECT indexname, tablename FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE $2',
      [database, `${INDEX_PREFIX}%`],
    );
    const existing = new Set(rows.map((row) => row.indexname));
    const plannedNames = new Set(planned.map((index) => index.name));
    const plannedTables = new Set(planned.map((index) => index.table));
    for (const row of rows.filter((candidate) => plannedTables.has(candidate.tablename) && !plannedNames.has(candidate.indexname))) {
      await maintain(client, `DROP INDEX IF EXISTS ${quoteIdent(database)}.${quoteIdent(row.indexname)}`);
    }
    const created: ExpressionIndex[] = [];
    for (const index of planned.filter((candidate) => !existing.has(candidate.name))) {
      const sql = `CREATE INDEX IF NOT EXISTS ${quoteIdent(index.name)} ON ${quoteIdent(database)}.${quoteIdent(index.table)} USING gin ((_jsonb->${quoteLiteral(index.field)}) jsonb_path_ops)`;
      if (await maintain(client, sql)) created.push(index);
    }
    return created;
  });
}

/** A table is vacuumed once this many of its rows are dead, or analysed once this many changed since the last analysis, and more than a tenth of its live rows either way. */
const CHANGED_ROWS_LIMIT = 1000;

/**
 * Every update FerretDB makes leaves a dead row version, which each later lookup steps over until
 * VACUUM removes it; and the planner picks among the GIN indexes by ANALYZE's statistics: without
 * them it guesses every field equally selective and also reads the index of a field that every row
 * shares (`orgId`), whose entries grow with the table. PostgreSQL's autovacuum does both, but may be
 * off (it is on the development machine), so the scheduled job vacuums and analyses FerretDB's
 * tables on autovacuum's own rule of thumb, and answers which.
 */
export function vacuumTables(postgresUrl: string, database: string): Promise<string[]> {
  return withClient(postgresUrl, async (client) => {
    const { rows } = await client.query<{ relname: string }>(
      `SELECT relname FROM pg_stat_user_tables
        WHERE schemaname = $1 AND relname <> $2
          AND ((n_dead_tup > $3 AND n_dead_tup > n_live_tup / 10)
            OR (n_mod_since_analyze > $3 AND n_mod_since_analyze > n_live_tup / 10))`,
      [database, METADATA_TABLE, CHANGED_ROWS_LIMIT],
    );
    const vacuumed: string[] = [];
    for (const { relname } of rows) if (await maintain(client, `VACUUM (ANALYZE) ${quoteIdent(database)}.${quoteIdent(relname)}`)) vacuumed.push(relname);
    return vacuumed;
  });
}

/**
 * Retention's deletes made in PostgreSQL, on one connection for a cleanup run. FerretDB (its `sjson`
 * format) keeps a date as its milliseconds since the epoch and each field's type in the document's
 * schema, `$s`; the deletes match exactly the documents MongoDB's `{orgId, [field]: {$lt: cutoff}}`
 * does (a date before the cutoff; null, a missing field or another type never; no time field
 * retention reads is an array, whose dates MongoDB would compare one by one), and narrow by
 * `orgId` as FerretDB's pushed-down equality does, which its GIN index serves. At 200,000 spans
 * none of which had expired, FerretDB's `deleteMany` took 28.5 s and this 0.57 s.
 */
export interface TableExpiry {
  /** Deletes the collection's documents whose `field` is a date before `cutoff` (of one organisation, by its id's hex, when given) and answers how many went. */
  deleteOlder(collection: string, field: string, cutoff: Date, orgId?: string): Promise<number>;
  /** Up to `limit` of the documents `deleteOlder` would delete: each one's ObjectId `_id` (hex) and its `valueField` as text. */
  findOlder(collection: string, field: string, cutoff: Date, orgId: string, limit: number, valueField: string): Promise<{ id: string; value: string | null }[]>;
  /** Deletes the documents with these ObjectId `_id`s (hex), by the `_id` index, and answers how many went. */
  deleteIds(collection: string, ids: string[]): Promise<number>;
  close(): Promise<void>;
}

/** The field holds a value of FerretDB's type `type` (a document's field types are in its schema, `$s`). */
const holds = (field: string, type: string) => `_jsonb->'$s'->'p'->${quoteLiteral(field)}->>'t' = ${quoteLiteral(type)}`;

/** The condition and its parameters for a document whose `field` is a date before `cutoff`, of one organisation when given. */
function olderThan(field: string, cutoff: Date, orgId?: string): { where: string; params: unknown[] } {
  // the CASE keeps the cast from ever meeting a value that is not a date's number
  const older = `CASE WHEN ${holds(field, 'date')} THEN (_jsonb->${quoteLiteral(field)})::numeric < $1 ELSE false END`;
  if (!orgId) return { where: older, params: [cutoff.getTime()] };
  return { where: `_jsonb->'orgId' @> $2::jsonb AND ${holds('orgId', 'objectId')} AND ${older}`, params: [cutoff.getTime(), JSON.stringify(orgId)] };
}

export async function openTableExpiry(postgresUrl: string, database: string): Promise<TableExpiry> {
  const client = await connect(postgresUrl);
  try {
    const tables = await ferretdbTables(client, database);
    const tableOf = (collection: string) => {
      const table = tables.get(collection);
      return table && `${quoteIdent(database)}.${quoteIdent(table)}`;
    };
    return {
      async deleteOlder(collection, field, cutoff, orgId) {
        const table = tableOf(collection);
        if (!table) return 0;
        const { where, params } = olderThan(field, cutoff, orgId);
        return (await client.query(`DELETE FROM ${table} WHERE ${where}`, params)).rowCount ?? 0;
      },
      async findOlder(collection, field, cutoff, orgId, limit, valueField) {
        const table = tableOf(collection);
        if (!table) return [];
        const { where, params } = olderThan(field, cutoff, orgId);
        const { rows } = await client.query<{ id: string; value: string | null }>(
          `SELECT _jsonb->>'_id' AS id, _jsonb->>${quoteLiteral(valueField)} AS value FROM ${table} WHERE ${where} AND ${holds('_id', 'objectId')} LIMIT ${Math.floor(limit)}`,
          params,
        );
        return rows;
      },
      async deleteIds(collection, ids) {
        const table = tableOf(collection);
        if (!table || ids.length === 0) return 0;
        const { rowCount } = await client.query(`DELETE FROM ${table} WHERE _jsonb->'_id' @> ANY($1::jsonb[]) AND ${holds('_id', 'objectId')}`, [ids.map((id) => JSON.stringify(id))]);
        return rowCount ?? 0;
      },
      close: () => client.end().catch(() => {}),
    };
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
}
