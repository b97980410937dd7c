/**
 * Which hours hold rollups: per organisation, rollup collection and day, the hours since the epoch
 * that any rollup of the day was written in. A writer marks an hour before it writes the hour's
 * rollups, so a view over a long window asks once which hours hold anything and reads only those
 * (allInWindowByHour), instead of one lookup for every hour of up to 366 days.
 *
 * Rollups written before hours were marked: an organisation's first marking in a collection records
 * `since`, the time from which its hours are all marked (the epoch when it had no rollups there yet);
 * hours before it are read as before, one lookup each, until retention has removed them.
 */
import { Schema, model, type Types, type mongo } from 'mongoose';
import { untilDeadline } from '../context.js';
import { contentId, upsertAll } from './storage.js';
import { HOUR_MS, hourOf } from './time-buckets.js';

const DAY_HOURS = 24;

const rolledUpHoursSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  /** The rollup collection's name. */
  rollup: { type: String, required: true },
  /** A day's document: the day's start, and the hours of it that hold rollups. */
  day: { type: Date },
  hours: { type: [Number], default: undefined },
  /** The organisation's one `since` document per collection: every hour from then on is marked. */
  since: { type: Date },
});
// a view's one lookup: an organisation's marked days (and its `since`) in one rollup collection.
rolledUpHoursSchema.index({ orgId: 1, rollup: 1 });
// retention cleanup by organisation and age (a `since` document has no day and stays).
rolledUpHoursSchema.index({ orgId: 1, day: 1 });

export const RolledUpHours = model('RolledUpHours', rolledUpHoursSchema, 'rolled_up_hours');

const sinceId = (rollup: string, orgId: Types.ObjectId) => contentId('rolled-up-since', rollup, orgId.toHexString());

/** What this process marked lately: each mark is written once per process and MARK_FRESH_MS, not per batch. */
const MARK_FRESH_MS = 10 * 60_000;
const MAX_REMEMBERED = 50_000;
const marked = new Map<string, number>();

const remembered = (key: string, now: number) => (marked.get(key) ?? 0) > now;
function remember(keys: string[], now: number): void {
  if (marked.size + keys.length > MAX_REMEMBERED) marked.clear();
  for (const key of keys) marked.set(key, now + MARK_FRESH_MS);
}

/**
 * Marks the hours a batch of rollups falls in (`places`), before the rollups are written. `writtenBefore`:
 * the collection whose documents of the organisation, when there are any, were written before this one
 * was (an hourly rollup's per-minute rollups), so that `since` says from when this one holds everything.
 */
export async function markHours(collection: mongo.Collection, places: { orgId: Types.ObjectId; hour: number }[], writtenBefore: mongo.Collection = collection): Promise<void> {
  const rollup = collection.collectionName;
  const now = Date.now();
  const fresh = new Map<string, { orgId: Types.ObjectId; hour: number }>();
  for (const place of places) {
    const key = `${rollup}:${place.orgId.toHexString()}:${place.hour}`;
    if (!remembered(key, now)) fresh.set(key, place);
  }
  if (fresh.size === 0) return;
  const orgs = new Map([...fresh.values()].map((place) => [place.orgId.toHexString(), place.orgId]));
  await Promise.all(
    [...orgs].map(async ([hex, orgId]) => {
      const key = `${rollup}:${hex}:since`;
      if (remembered(key, now)) return;
      if (!(await RolledUpHours.exists({ _id: sinceId(rollup, orgId) }))) {
        // rollups already there were written unmarked: from now on every hour is marked
        const earlier = await writtenBefore.findOne({ orgId }, { projection: { _id: 1 } });
        await upsertAll(RolledUpHours.collection, [{ updateOne: { filter: { _id: sinceId(rollup, orgId) }, update: { $setOnInsert: { orgId, rollup, since: new Date(earlier ? now : 0) } }, upsert: true } }]);
      }
      remember([key], now);
    }),
  );
  const days = new Map<string, { orgId: Types.ObjectId; day: number; hours: Set<number> }>();
  for (const { orgId, hour } of fresh.values()) {
    const day = Math.floor(hour / DAY_HOURS);
    const key = `${orgId.toHexString()}:${day}`;
    const entry = days.get(key) ?? { orgId, day, hours: new Set<number>() };
    entry.hours.add(hour);
    days.set(key, entry);
  }
  await upsertAll(
    RolledUpHours.collection,
    [...days.values()].map(({ orgId, day, hours }) => ({
      updateOne: {
        filter: { _id: contentId('rolled-up-hours', rollup, orgId.toHexString(), day) },
        update: { $setOnInsert: { orgId, rollup, day: new Date(day * DAY_HOURS * HOUR_MS) }, $addToSet: { hours: { $each: [...hours] } } },
        upsert: true,
      },
    })),
  );
  remember([...fresh.keys()], now);
}

/**
 * Of `hours` (hours since the epoch), those that may hold the organisation's documents in `collection`:
 * the marked ones, and every one before the organisation's `since`. A collection nobody marks (raw
 * metric points) has no `since`: all of `hours` when the organisation has documents there, else none.
 */
export async function hoursWithRollups(collection: mongo.Collection, orgId: Types.ObjectId, hours: number[]): Promise<number[]> {
  const docs = await RolledUpHours.find({ orgId, rollup: collection.collectionName }, { hours: 1, since: 1 }).setOptions(untilDeadline()).lean();
  const since = docs.find((doc) => doc.since)?.since;
  if (!since) return (await collection.findOne({ orgId }, { projection: { _id: 1 }, ...untilDeadline() })) ? hours : [];
  const markedHours = new Set(docs.flatMap((doc) => doc.hours ?? []));
  // the hour `since` falls in may hold rollups written before it, unmarked
  return hours.filter((hour) => hour <= hourOf(since.getTime()) || markedHours.has(hour));
}

/**
 * The last hour (since the epoch) that `collection` may not hold all of for the organisation: the hour its
 * `since` falls in (rollups of that hour and before may have been written before it was), or Infinity when
 * nothing of the organisation was ever marked in it. Hours after it are whole in `collection`.
 */
export async function lastUnmarkedHour(collection: mongo.Collection, orgId: Types.ObjectId): Promise<number> {
  const doc = await RolledUpHours.findById(sinceId(collection.collectionName, orgId), { since: 1 }).setOptions(untilDeadline()).lean();
  return doc?.since ? hourOf(doc.since.getTime()) : Infinity;
}
