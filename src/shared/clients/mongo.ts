import mongoose from 'mongoose';
import type { Logger } from '../logger.js';
import { ensureExpressionIndexes, type CollectionFields, type ExpressionIndex } from './ferretdb-indexes.js';

/** One process-wide connection; feature models are registered on it and own their indexes. */
export async function connectMongo(url: string, logger: Logger): Promise<typeof mongoose> {
  mongoose.set('strictQuery', true);
  // Indexes are built explicitly at start (ensureIndexes) so a process serves nothing before they exist.
  mongoose.set('autoIndex', false);
  await mongoose.connect(url, { serverSelectionTimeoutMS: 10_000 });
  logger.info({ db: mongoose.connection.name }, 'connected to MongoDB');
  return mongoose;
}

/** Every model's collection with the fields its indexes name: what the store must find fast. */
export function indexedFields(): CollectionFields[] {
  return Object.values(mongoose.models).map((model) => ({
    collection: model.collection.collectionName,
    fields: model.schema.indexes().flatMap(([keys]) => Object.keys(keys)),
  }));
}

/** On FerretDB's PostgreSQL backend, the GIN indexes that let it use an index at all (see ferretdb-indexes). */
export function ensureStoreIndexes(ferretdbPostgresUrl: string): Promise<ExpressionIndex[]> {
  return ensureExpressionIndexes(ferretdbPostgresUrl, mongoose.connection.name, indexedFields());
}

/**
 * Creates every model's collection and indexes; with `ferretdbPostgresUrl` (the store is FerretDB on
 * PostgreSQL) also the expression indexes FerretDB's queries can use.
 */
export async function ensureIndexes(ferretdbPostgresUrl?: string): Promise<void> {
  for (const model of Object.values(mongoose.models)) await model.createIndexes();
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
