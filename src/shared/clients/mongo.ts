import mongoose from 'mongoose';
import type { Logger } from '../logger.js';

/** One process-wide connection; feature models are registered on it and own their indexes. */
export async function connectMongo(url: string, logger: Logger): Promise<typeof mongoose> {
  mongoose.set('strictQuery', true);
  // Indexes are built explicitly at start (ensureIndexes) so a process serves nothing before they exist.
  mongoose.set('autoIndex', false);
  await mongoose.connect(url, { serverSelectionTimeoutMS: 10_000 });
  logger.info({ db: mongoose.connection.name }, 'connected to MongoDB');
  return mongoose;
}

export async function ensureIndexes(): Promise<void> {
  for (const model of Object.values(mongoose.models)) await model.createIndexes();
}

export async function pingMongo(): Promise<void> {
  const db = mongoose.connection.db;
  if (mongoose.connection.readyState !== 1 || !db) throw new Error('not connected');
  await db.admin().command({ ping: 1 });
}

export async function disconnectMongo(): Promise<void> {
  await mongoose.disconnect();
}
