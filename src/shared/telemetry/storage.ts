/** How the telemetry features write a batch: unordered bulk writes on the native collection, idempotent by unique keys. */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Schema, Types, model, mongo } from 'mongoose';
import { store } from '../clients/mongo.js';
import { isDuplicateKey } from '../errors.js';
import { sha256 } from '../secrets.js';
import type { AttributeValue, Attributes } from './records.js';

export interface AttributePair {
  key: string;
  value: AttributeValue;
}

/**
 * OTel attribute keys are dotted (`http.route`), and FerretDB refuses dots in document keys, so
 * attributes are stored as key/value pairs, sorted by key so equal sets store (and hash) alike.
 */
export function attributePairs(attributes: Attributes): AttributePair[] {
  return Object.keys(attributes)
    .sort()
    .map((key) => ({ key, value: attributes[key]! }));
}

/** Stored pairs as an object again, for answers. */
export const attributesObject = (pairs: AttributePair[]) => Object.fromEntries(pairs.map((pair) => [pair.key, pair.value]));

/** True when the pairs hold every `key:value` filter, scalar values compared as text (arrays never match). */
export const hasAttributes = (pairs: { key: string; value: unknown }[], filters: { key: string; value: string }[]) =>
  filters.every(({ key, value }) => pairs.some((pair) => pair.key === key && typeof pair.value !== 'object' && String(pair.value) === value));

/** The schema path of such pairs. */
export const attributePairsField = { type: [{ _id: false, key: String, value: Schema.Types.Mixed }], default: [] };

/** A deterministic ObjectId for records without an id of their own: the same content always gets the same `_id`. */
export const contentId = (...parts: unknown[]) => new Types.ObjectId(sha256(JSON.stringify(parts)).slice(0, 24));

/**
 * The operations an unordered bulk write refused only because their unique key already exists;
 * any other failure (or a write-concern error) is rethrown.
 */
function duplicateKeyFailures(error: unknown): number[] {
  if (!(error instanceof mongo.MongoBulkWriteError)) throw error;
  const failures = [error.writeErrors].flat();
  if (failures.length === 0 || !failures.every(isDuplicateKey)) throw error;
  return failures.map((failure) => failure.index);
}

/** Documents one insert command carries at most: larger inserts go as several at once. */
const INSERT_PART = 500;

/**
 * Inserts what is not stored yet and returns those documents, in the order given; a duplicate key
 * means "already stored". Many documents go in parts of INSERT_PART, PARALLEL_WRITES at a time:
 * FerretDB stores one command's documents one after another, so parts let the store's connections
 * work side by side.
 */
export async function insertNew<T extends mongo.Document>(collection: mongo.Collection, docs: T[]): Promise<T[]> {
  const parts = Array.from({ length: Math.ceil(docs.length / INSERT_PART) }, (_, k) => docs.slice(k * INSERT_PART, (k + 1) * INSERT_PART));
  const stored: T[][] = [];
  await inParallel(parts, PARALLEL_WRITES, async (part, k) => {
    try {
      await collection.insertMany(part, { ordered: false });
      stored[k] = part;
    } catch (error) {
      const duplicates = new Set(duplicateKeyFailures(error));
      stored[k] = part.filter((_, index) => !duplicates.has(index));
    }
  });
  return stored.flat();
}

/**
 * FerretDB 1.24 applies an update by reading the document and writing it back in another
 * transaction, so two updates of one document at once lose one of them (eight clients each sending
 * 100 `$inc` to one document left 513 on PostgreSQL and fewer on SQLite). Against FerretDB, this
 * process therefore takes the writes to one document one at a time; MongoDB's updates are atomic.
 * Processes writing the same documents (two workers, or an api and a worker) take each turn in Redis
 * as well once `shareWriteTurns` is called (see `redisTurn`).
 */
const documentQueues = new Map<string, Promise<unknown>>();

/** A turn at one document shared by every process, or undefined to rely on this process's turns. */
type SharedTurn = <T>(key: string, write: () => Promise<T>) => Promise<T>;
let sharedTurn: SharedTurn | undefined;

/** How long a process may hold a document's turn before others take it anyway (a process that died holding it). */
const TURN_TTL_MS = 10_000;
/** How soon a process waiting for a turn asks again. */
const TURN_POLL_MS = 5;
const RELEASE_TURN = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/**
 * A turn taken with SET NX in Redis under the key prefix, released only by its holder. With Redis
 * unreachable the write goes ahead on this process's turn alone, as it did before processes shared turns.
 */
function redisTurn(redis: Redis, prefix: string): SharedTurn {
  return async (key, write) => {
    const lock = `${prefix}:turn:${key}`;
    const token = randomBytes(12).toString('hex');
    let held = false;
    try {
      for (;;) {
        held = (await redis.set(lock, token, 'PX', TURN_TTL_MS, 'NX')) === 'OK';
        if (held) break;
        await new Promise((resolve) => setTimeout(resolve, TURN_POLL_MS));
      }
    } catch {
      held = false;
    }
    try {
      return await write();
    } finally {
      if (held) await redis.eval(RELEASE_TURN, 1, lock, token).catch(() => undefined);
    }
  };
}

/** From now on this process's writes to one document wait for other processes' too (against FerretDB only). */
export function shareWriteTurns(redis: Redis, prefix: string): void {
  sharedTurn = redisTurn(redis, prefix);
}

export async function oneAtATime<T>(collection: string, id: unknown, write: () => Promise<T>): Promise<T> {
  return store.ferretdb ? inTurn(collection, id, write) : write();
}

/**
 * Runs `work` in the turn of one document on any store: for a read, then a write that depends on it,
 * which even MongoDB's atomic updates do not make safe when two batches do it at once.
 */
export async function inTurn<T>(collection: string, id: unknown, write: () => Promise<T>): Promise<T> {
  const key = `${collection}\0${String(id)}`;
  const previous = documentQueues.get(key) ?? Promise.resolve();
  const shared = sharedTurn;
  const ours = shared ? () => shared(`${collection}:${String(id)}`, write) : write;
  const turn = previous.then(ours, ours);
  const settled = turn.then(
    () => undefined,
    () => undefined,
  );
  documentQueues.set(key, settled);
  try {
    return await turn;
  } finally {
    if (documentQueues.get(key) === settled) documentQueues.delete(key);
  }
}

/** `work` in the turns of several documents, taken in a fixed order so two callers never wait on each other. */
export function inTurns<T>(collection: string, ids: string[], work: () => Promise<T>): Promise<T> {
  return [...new Set(ids)]
    .sort()
    .reduceRight<() => Promise<T>>((inner, id) => () => inTurn(collection, id, inner), work)();
}

/**
 * Upserts one document by `_id` and answers it as it is after the update (or, with `returnDocument`
 * 'before', as it was before it: null when the upsert created it), one write at a time per
 * document (see oneAtATime), so that of two writes bringing two halves the second sees both. Two
 * processes creating the document at once: the loser's retry updates the winner's.
 */
export async function upsertReturning(
  collection: mongo.Collection,
  id: Types.ObjectId,
  update: mongo.UpdateFilter<mongo.Document>,
  returnDocument: 'before' | 'after' = 'after',
): Promise<mongo.WithId<mongo.Document> | null> {
  // whole documents: FerretDB 1.24 refuses a projection (`fields`) on findAndModify
  const write = () => collection.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument });
  return oneAtATime(collection.collectionName, id, async () => {
    try {
      return await write();
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return write();
    }
  });
}

/** The `_id` an update statement is addressed to, when it has one. */
function addressOf(operation: mongo.AnyBulkWriteOperation): unknown {
  const statement = 'updateOne' in operation ? operation.updateOne : 'updateMany' in operation ? operation.updateMany : 'replaceOne' in operation ? operation.replaceOne : undefined;
  return (statement?.filter as { _id?: unknown } | undefined)?._id;
}

/** Writes in flight at once for one batch's documents of a kind (against FerretDB, one statement each). */
export const PARALLEL_WRITES = 4;

/** Calls `fn` for every item, at most `limit` at a time. */
export async function inParallel<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

/** Values grouped by a key, in the order each key was first met. */
export function groupBy<T>(values: T[], keyOf: (value: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const value of values) {
    const group = groups.get(keyOf(value));
    if (group) group.push(value);
    else groups.set(keyOf(value), [value]);
  }
  return groups;
}

/**
 * Runs update statements unordered and returns the indexes of those refused only for a duplicate
 * key; any other failure throws. Against MongoDB the statements go as one bulk write; against
 * FerretDB as one command each, a few at a time (see `store` in clients/mongo.ts for why).
 */
export async function updateEach(collection: mongo.Collection, operations: mongo.AnyBulkWriteOperation[]): Promise<number[]> {
  if (operations.length === 0) return [];
  if (!store.ferretdb) {
    try {
      await collection.bulkWrite(operations, { ordered: false });
      return [];
    } catch (error) {
      return duplicateKeyFailures(error);
    }
  }
  const refused: number[] = [];
  await inParallel(operations, PARALLEL_WRITES, async (operation, index) => {
    try {
      await oneAtATime(collection.collectionName, addressOf(operation) ?? index, () => collection.bulkWrite([operation], { ordered: false }));
    } catch (error) {
      if (duplicateKeyFailures(error).length > 0) refused.push(index);
    }
  });
  return refused.sort((a, b) => a - b);
}

/** Runs upserts unordered. Two workers creating the same document at once: the loser's retry finds the winner's. */
export async function upsertAll(collection: mongo.Collection, operations: mongo.AnyBulkWriteOperation[]): Promise<void> {
  const refused = await updateEach(collection, operations);
  const again = await updateEach(
    collection,
    refused.map((index) => operations[index]!),
  );
  if (again.length > 0) throw new Error(`${again.length} upserts into ${collection.collectionName} clashed on a duplicate key twice`);
}

/**
 * Batches whose effect is a plain `$inc` (usage, release health) and so cannot be deduplicated by
 * the documents they touch. Claimed before the counts are written: a replayed batch is skipped, and
 * a crash between claim and counts loses that batch's counts rather than doubling them.
 */
const appliedBatchSchema = new Schema({
  batchId: { type: String, required: true },
  /** What was applied: one batch may feed several counters, each claimed separately. */
  kind: { type: String, required: true },
  appliedAt: { type: Date, required: true },
});
// the claim itself: one application per batch and kind.
appliedBatchSchema.index({ batchId: 1, kind: 1 }, { unique: true });
// the cleanup of claims older than any retry.
appliedBatchSchema.index({ appliedAt: 1 });

export const AppliedBatch = model('AppliedBatch', appliedBatchSchema, 'applied_batches');

/** True when a batch was applied for a kind before (a retry asks before doing anything). */
export async function batchApplied(batchId: string, kind: string): Promise<boolean> {
  return (await AppliedBatch.exists({ batchId, kind })) !== null;
}

/** True the first time a batch is applied for a kind; false when it already was. */
export async function claimBatch(batchId: string, kind: string, now = new Date()): Promise<boolean> {
  return (await claimBatches([batchId], kind, now)).has(batchId);
}

/** The batches among `batchIds` applied for a kind for the first time now, claimed in one write; the others were before. */
export async function claimBatches(batchIds: string[], kind: string, now = new Date()): Promise<Set<string>> {
  const claimed = await insertNew(
    AppliedBatch.collection,
    [...new Set(batchIds)].map((batchId) => ({ batchId, kind, appliedAt: now })),
  );
  return new Set(claimed.map((claim) => claim.batchId));
}

/**
 * Batches a worker has stored and not yet counted, one document per flush: a job completes once its
 * records are stored and this is written, and the count that follows deletes it once its batches are
 * claimed. A document older than any count takes is a count that died with its process or failed,
 * which a sweep redoes from the stored records (see recountOrphaned in issues/store).
 */
const pendingCountSchema = new Schema({
  /** What is to be counted, as the claim that ends it names it. */
  kind: { type: String, required: true },
  batchIds: { type: [String], required: true },
  at: { type: Date, required: true },
});

export const PendingCount = model('PendingCount', pendingCountSchema, 'pending_counts');

/** Notes a flush's batches as stored and not yet counted for `kind`; answers the note's id. */
export async function notePending(kind: string, batchIds: string[], at: Date): Promise<Types.ObjectId> {
  const _id = new Types.ObjectId();
  await PendingCount.collection.insertOne({ _id, kind, batchIds: [...new Set(batchIds)], at });
  return _id;
}

/** Drops the notes of counts that are done. */
export async function settlePending(ids: Types.ObjectId[]): Promise<void> {
  if (ids.length > 0) await PendingCount.collection.deleteMany({ _id: { $in: ids } });
}

/** Notes of `kind` written before `before`: counts that should have ended by then. */
export function pendingBefore(kind: string, before: Date): Promise<{ _id: Types.ObjectId; batchIds: string[] }[]> {
  return PendingCount.find({ kind, at: { $lt: before } }, { batchIds: 1 }).sort({ at: 1 }).lean();
}
