/**
 * FerretDB 1.24 stops answering for good once as many commands run at once as its PostgreSQL pool has
 * connections (each may hold one while it waits for a second). The processes of the split deployment,
 * each sending as many commands at once as its role may (FERRETDB_COMMANDS), keep a FerretDB with the
 * local store's pool answering: before these limits, three processes of 8 against a pool of 16 stalled
 * it within seconds.
 */
import mongoose from 'mongoose';
import { FERRETDB_COMMANDS, FERRETDB_POOL_SIZE } from '../../src/shared/clients/mongo.js';
import { startOwnStore, type OwnStore } from '../support/own-servers.js';

let store: OwnStore;

beforeAll(async () => {
  store = await startOwnStore(FERRETDB_POOL_SIZE);
}, 300_000);

afterAll(async () => {
  await store?.close();
});

const LOAD_MS = 8_000;
/** A command still unanswered this long after the load ended means the store stalled. */
const STALLED_AFTER_MS = 20_000;

/** One connection's worth of writes of the kinds the workers send: a count's findAndModify, an upsert, an insert of a flush. */
async function writeUntil(collection: mongoose.mongo.Collection, until: number, seed: number): Promise<number> {
  let sent = 0;
  for (let i = seed; Date.now() < until; i++) {
    const key = `doc-${i % 40}`;
    try {
      if (i % 3 === 0) await collection.findOneAndUpdate({ _id: key as never }, { $inc: { n: 1 }, $set: { at: new Date() } }, { upsert: true });
      else if (i % 3 === 1) await collection.updateOne({ _id: `user-${i % 40}` as never }, { $inc: { n: 1 } }, { upsert: true });
      else await collection.insertMany(Array.from({ length: 20 }, (_, n) => ({ n, data: 'x'.repeat(500) })));
    } catch (error) {
      // two upserts creating one document at once: the loser is refused, as MongoDB does
      if ((error as { code?: number }).code !== 11000) throw error;
    }
    sent++;
  }
  return sent;
}

test("the split deployment's processes, each at its role's limit of concurrent commands, keep the local store's FerretDB answering", async () => {
  const roles = ['api', 'ingest', 'workers'] as const;
  const clients = await Promise.all(roles.map((role) => new mongoose.mongo.MongoClient(store.mongoUrl, { maxPoolSize: FERRETDB_COMMANDS[role] }).connect()));
  try {
    const until = Date.now() + LOAD_MS;
    const writes = Promise.all(
      clients.flatMap((client, c) => Array.from({ length: FERRETDB_COMMANDS[roles[c]!] }, (_, w) => writeUntil(client.db().collection('pool_load'), until, c * 100 + w * 7))),
    );
    let stalled: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      stalled = setTimeout(() => reject(new Error(`FerretDB left commands unanswered ${STALLED_AFTER_MS / 1000} s after the load ended`)), LOAD_MS + STALLED_AFTER_MS);
    });
    try {
      const sent = await Promise.race([writes, deadline]);
      expect(sent.reduce((a, b) => a + b, 0)).toBeGreaterThan(100);
    } finally {
      clearTimeout(stalled);
    }
    // and a new client is answered at once
    const fresh = await new mongoose.mongo.MongoClient(store.mongoUrl, { serverSelectionTimeoutMS: 5_000 }).connect();
    try {
      expect((await fresh.db().command({ ping: 1 }, { timeoutMS: 5_000 })).ok).toBe(1);
    } finally {
      await fresh.close();
    }
  } finally {
    await Promise.all(clients.map((client) => client.close(true)));
  }
}, 120_000);
