/**
 * Per-minute rollups: what workers add up as telemetry arrives, and what every view over volume
 * reads instead of raw records (ARCHITECTURE.md, "Aggregate on write"). Each rollup document holds
 * one minute of one key in one project; its `_id` is derived from them, so a batch's counts for it
 * are one `$inc` upsert and two workers counting into the same minute meet on one document.
 */
import { Schema, type SchemaDefinition, type Types, type mongo } from 'mongoose';
import { bucketOf } from './histogram.js';
import { markHours } from './rolled-up-hours.js';
import { contentId, upsertAll } from './storage.js';
import { HOUR_MS, hourOf, minuteOf } from './time-buckets.js';

/**
 * A rollup collection's schema: the key and counter `fields` beside what every rollup has: the
 * organisation, the project, the minute's start (`at`) and its hour since the epoch (`hour`), by
 * which a window is read an hour at a time (equality, which FerretDB can answer from an index).
 */
export function rollupSchema(fields: SchemaDefinition): Schema {
  const schema = new Schema({
    _id: { type: Schema.Types.ObjectId, required: true },
    orgId: { type: Schema.Types.ObjectId, required: true },
    projectId: { type: Schema.Types.ObjectId, required: true },
    at: { type: Date, required: true },
    hour: { type: Number, required: true },
    ...fields,
  });
  // a window's rollups of an organisation, or of one project, an hour at a time.
  schema.index({ orgId: 1, hour: 1 });
  schema.index({ projectId: 1, hour: 1 });
  // retention cleanup by organisation and age.
  schema.index({ orgId: 1, at: 1 });
  return schema;
}

/** The `$inc` of one duration into the histogram `field` (src/shared/telemetry/histogram.ts). */
export const durationIncrement = (field: string, ms: number, count = 1) => ({ [`${field}.${bucketOf(ms)}`]: count });

interface Pending {
  id: Types.ObjectId;
  place: RollupPlace;
  /** The rollup's own key fields, without its place. */
  fields: Record<string, unknown>;
  key: Record<string, unknown>;
  inc: Record<string, number>;
  min: Record<string, number>;
  max: Record<string, number>;
  first: Record<string, unknown>;
}

/** Where a record falls: its project and the time that picks its minute. */
export interface RollupPlace {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  atMs: number;
}

/** Adds `added`'s counts to `entry`'s, keeps the smaller minimums and larger maximums, and the `first` values it has. */
function fold(entry: Pending, added: Pick<Pending, 'inc' | 'min' | 'max' | 'first'>): void {
  for (const [path, count] of Object.entries(added.inc)) entry.inc[path] = (entry.inc[path] ?? 0) + count;
  for (const [path, value] of Object.entries(added.min)) entry.min[path] = Math.min(entry.min[path] ?? Infinity, value);
  for (const [path, value] of Object.entries(added.max)) entry.max[path] = Math.max(entry.max[path] ?? -Infinity, value);
  for (const [path, value] of Object.entries(added.first)) if (!(path in entry.first)) entry.first[path] = value;
}

/** A batch's additions to one rollup collection, gathered per document and written as one upsert each. */
export class RollupBatch {
  private readonly pending = new Map<string, Pending>();

  /** `kind` names the collection in the derived `_id`s, so two collections' ids never meet. */
  constructor(private readonly kind: string) {}

  /**
   * Adds `counts` (`$inc` paths, e.g. `count` or `latency.12`) to the rollup of `key` in the minute
   * of `place`; `min` and `max` fields keep their smallest and largest value, `first` fields the value
   * of the write that created the document (an example).
   */
  add(place: RollupPlace, key: Record<string, unknown>, counts: Record<string, number>, options: { min?: Record<string, number>; max?: Record<string, number>; first?: Record<string, unknown> } = {}): void {
    const minute = minuteOf(place.atMs);
    const names = Object.keys(key).sort();
    const id = contentId(this.kind, place.projectId.toHexString(), minute, ...names.map((name) => [name, key[name] ?? null]));
    const hex = id.toHexString();
    let entry = this.pending.get(hex);
    if (!entry) {
      entry = { id, place, fields: key, key: { orgId: place.orgId, projectId: place.projectId, at: new Date(minute), hour: hourOf(minute), ...key }, inc: {}, min: {}, max: {}, first: {} };
      this.pending.set(hex, entry);
    }
    fold(entry, { inc: counts, min: options.min ?? {}, max: options.max ?? {}, first: options.first ?? {} });
  }

  get size(): number {
    return this.pending.size;
  }

  /** One batch of every addition of `batches`, all of one kind (the first, with the others added into it): a document several of them add to is written once. */
  static merged(batches: RollupBatch[]): RollupBatch {
    const [first, ...rest] = batches;
    if (!first) throw new Error('no rollup batches to merge');
    for (const batch of rest) {
      if (batch.kind !== first.kind) throw new Error(`cannot merge ${batch.kind} rollups into ${first.kind} rollups`);
      for (const [hex, entry] of batch.pending) {
        const into = first.pending.get(hex);
        if (into) fold(into, entry);
        else first.pending.set(hex, entry);
      }
    }
    return first;
  }

  /**
   * Writes the batch into `collection`, and with `hourly`, the same counts into the rollups of the whole
   * hour (`at` the hour's start) in that collection, which views over whole hours read instead of the
   * hour's many minutes (allInWindowByWholeHour). `min`, `max` and `first` fields are not kept per hour.
   */
  async write(collection: mongo.Collection, hourly?: mongo.Collection): Promise<void> {
    if (this.pending.size === 0) return;
    const places = [...this.pending.values()].map((entry) => ({ orgId: entry.key.orgId as Types.ObjectId, hour: entry.key.hour as number }));
    // the hours first: a view reads only marked hours, so a rollup is never there unmarked
    await markHours(collection, places);
    if (!hourly) return this.upsert(collection, this.pending);
    await markHours(hourly, places, collection);
    const hours = new Map<string, Pending>();
    for (const entry of this.pending.values()) {
      const hour = entry.key.hour as number;
      const names = Object.keys(entry.fields).sort();
      const id = contentId(`${this.kind}-hour`, entry.place.projectId.toHexString(), hour, ...names.map((name) => [name, entry.fields[name] ?? null]));
      const hex = id.toHexString();
      let sum = hours.get(hex);
      if (!sum) {
        sum = { ...entry, id, key: { ...entry.key, at: new Date(hour * HOUR_MS) }, inc: {}, min: {}, max: {}, first: {} };
        hours.set(hex, sum);
      }
      for (const [path, count] of Object.entries(entry.inc)) sum.inc[path] = (sum.inc[path] ?? 0) + count;
    }
    // minutes before hours: a write that fails between them leaves the hour short, never counted twice
    await this.upsert(collection, this.pending);
    await this.upsert(hourly, hours);
  }

  private async upsert(collection: mongo.Collection, pending: Map<string, Pending>): Promise<void> {
    await upsertAll(
      collection,
      [...pending.values()].map((entry) => ({
        updateOne: {
          filter: { _id: entry.id },
          update: {
            $setOnInsert: { ...entry.key, ...entry.first },
            $inc: entry.inc,
            ...(Object.keys(entry.min).length > 0 && { $min: entry.min }),
            ...(Object.keys(entry.max).length > 0 && { $max: entry.max }),
          },
          upsert: true,
        },
      })),
    );
  }
}
