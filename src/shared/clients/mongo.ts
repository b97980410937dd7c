import mongoose from 'mongoose';
import type { Logger } from '../logger.js';
import { ensureExpressionIndexes, openTableExpiry, vacuumTables, type CollectionFields, type ExpressionIndex, type TableExpiry } from './ferretdb-indexes.js';

/**
 * What the connected server is. FerretDB 1.24 on PostgreSQL keeps a statement's PostgreSQL connection
 * until its whole command ends, and needs a second one to write; its pool (`pool_max_conns`) is
 * finite, so a command of many update statements, or many commands at once, can take every
 * connection and wait for one more, forever. Against FerretDB this process therefore opens fewer
 * connections (FERRETDB_COMMANDS) and sends updates one statement per command (see updateEach).
 */
export const store = { ferretdb: false };

/**
 * Commands one process sends FerretDB at once, by its ROLE. A command may hold one of FerretDB's
 * PostgreSQL connections while it waits for a second, so the commands of every process sharing one
 * FerretDB must stay below its pool (`pool_max_conns`): once each connection is held by a command
 * waiting for another, FerretDB answers nothing, not even a ping, until it is restarted. Seen with
 * one process of 16 commands, and with three of 8, against a pool of 16; fifteen against it ran.
 * The workers write in parallel (PARALLEL_WRITES per step, a flush and a count at once); api and
 * ingest mostly read a document or two per request.
 */
export const FERRETDB_COMMANDS = { all: 8, workers: 8, api: 4, ingest: 4 } as const;

/**
 * The PostgreSQL pool the local store gives FerretDB (see local-services), above the commands of
 * every process that may share it (FERRETDB_COMMANDS): the split deployment's three send at most
 * 16, the test suite's several-instances deployment of six 32, and a test file's own process 8
 * more. FerretDB opens a connection only when a command needs one and closes it once idle, so the
 * pool's size costs nothing at rest; under load one process of 8 commands uses at most 16.
 */
export const FERRETDB_POOL_SIZE = 64;

async function isFerretDB(url: string): Promise<boolean> {
  const client = new mongoose.mongo.MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    return typeof info.ferretdbVersion === 'string';
  } finally {
    await client.close();
  }
}

/** One process-wide connection, for a process of `role`; feature models are registered on it and own their indexes. */
export async function connectMongo(url: string, logger: Logger, role: keyof typeof FERRETDB_COMMANDS = 'all'): Promise<typeof mongoose> {
  mongoose.set('strictQuery', true);
  // Indexes are built explicitly at start (ensureIndexes) so a process serves nothing before they exist.
  mongoose.set('autoIndex', false);
  store.ferretdb = await isFerretDB(url);
  await mongoose.connect(url, { serverSelectionTimeoutMS: 10_000, ...(store.ferretdb && { maxPoolSize: FERRETDB_COMMANDS[role] }) });
  logger.info({ db: mongoose.connection.name, ferretdb: store.ferretdb }, 'connected to MongoDB');
  return mongoose;
}

/**
 * Every model's collection with the fields its indexes name that a query may compare for equality:
 * what the store must find fast. Dates are left out: the service compares them only by range and
 * sorts on them, which FerretDB never hands to PostgreSQL, so an index on them would only slow inserts.
 */
export function indexedFields(): CollectionFields[] {
  return Object.values(mongoose.models).map((model) => ({
    collection: model.collection.collectionName,
    fields: model.schema
      .indexes()
      .flatMap(([keys]) => Object.keys(keys))
      .filter((field) => model.schema.path(field)?.instance !== 'Date'),
  }));
}

/** On FerretDB's PostgreSQL backend, the GIN indexes that let it use an index at all (see ferretdb-indexes). */
export function ensureStoreIndexes(ferretdbPostgresUrl: string): Promise<ExpressionIndex[]> {
  return ensureExpressionIndexes(ferretdbPostgresUrl, mongoose.connection.name, indexedFields());
}

/** On FerretDB's PostgreSQL backend, retention's deletes by age made in PostgreSQL (see ferretdb-indexes). */
export function openStoreExpiry(ferretdbPostgresUrl: string): Promise<TableExpiry> {
  return openTableExpiry(ferretdbPostgresUrl, mongoose.connection.name);
}

/** On FerretDB's PostgreSQL backend, vacuums and analyses the tables that need it (see ferretdb-indexes). */
export function vacuumStore(ferretdbPostgresUrl: string): Promise<string[]> {
  return vacuumTables(ferretdbPostgresUrl, mongoose.connection.name);
}

/**
 * On FerretDB only a model's unique indexes: they enforce uniqueness on insert, and no read FerretDB
 * 1.24 makes uses any index (see ARCHITECTURE.md), so the others would only be kept up to date by
 * every write. Those an earlier version created are dropped.
 */
async function ensureUniqueIndexes(model: mongoose.Model<unknown>): Promise<void> {
  await model.createCollection();
  const unique = model.schema.indexes().filter(([, options]) => options.unique);
  for (const [keys, options] of unique) await model.collection.createIndex(keys as mongoose.mongo.IndexSpecification, options as mongoose.mongo.CreateIndexesOptions);
  for (const index of await model.collection.indexes()) {
    if (index.name && index.name !== '_id_' && !index.unique) await model.collection.dropIndex(index.name);
  }
}

/**
 * Creates every model's collection and indexes (on FerretDB its unique ones, see ensureUniqueIndexes);
 * with `ferretdbPostgresUrl` (the store is FerretDB on PostgreSQL) also the expression indexes
 * FerretDB's queries can use.
 */
export async function ensureIndexes(ferretdbPostgresUrl?: string): Promise<void> {
  for (const model of Object.values(mongoose.models)) {
    if (store.ferretdb) await ensureUniqueIndexes(model as mongoose.Model<unknown>);
    else await model.createIndexes();
  }
  if (ferretdbPostgresUrl) await ensureStoreIndexes(ferretdbPostgresUrl);
}

export async function pingMongo(): Promise<void> {
  const db = mongoose.connection.db;
  if (mongoose.connection.readyState !== 1 || !db) throw new Error('not connected');
  await db.admin().command({ ping: 1 });
}

export async function disconnectMongo(): Promise<void> {
  await mongoose.disconnect();
}
