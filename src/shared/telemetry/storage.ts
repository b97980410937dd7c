/** How the telemetry features write a batch: unordered bulk writes on the native collection, idempotent by unique keys. */
import { Schema, Types, model, mongo } from 'mongoose';
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

/** Inserts what is not stored yet and returns those documents; a duplicate key means "already stored". */
export async function insertNew<T extends mongo.Document>(collection: mongo.Collection, docs: T[]): Promise<T[]> {
  if (docs.length === 0) return [];
  try {
    await collection.insertMany(docs, { ordered: false });
    return docs;
  } catch (error) {
    const duplicates = new Set(duplicateKeyFailures(error));
    return docs.filter((_, index) => !duplicates.has(index));
  }
}

/** Runs upserts unordered. Two workers creating the same document at once: the loser's retry finds the winner's. */
export async function upsertAll(collection: mongo.Collection, operations: mongo.AnyBulkWriteOperation[]): Promise<void> {
  if (operations.length === 0) return;
  try {
    await collection.bulkWrite(operations, { ordered: false });
  } catch (error) {
    const refused = duplicateKeyFailures(error);
    await collection.bulkWrite(
      refused.map((index) => operations[index]!),
      { ordered: false },
    );
  }
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

/** True the first time a batch is applied for a kind; false when it already was. */
export async function claimBatch(batchId: string, kind: string, now = new Date()): Promise<boolean> {
  try {
    await AppliedBatch.collection.insertOne({ batchId, kind, appliedAt: now });
    return true;
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    return false;
  }
}
