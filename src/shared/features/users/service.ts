import type { Types } from 'mongoose';
import { z } from 'zod';
import { paginate } from '../../paging.js';
import { contentId, upsertAll } from '../../telemetry/storage.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { EndUser, type EndUserDoc } from './model.js';

export interface SentUser {
  id?: unknown;
  email?: unknown;
  username?: unknown;
  ip_address?: unknown;
}

/** `{{auto}}` asks the server to fill in the client address; it names nobody by itself. */
const text = (value: unknown) =>
  typeof value === 'string' && value && value !== '{{auto}}' ? value.slice(0, 256) : typeof value === 'number' ? String(value) : null;

/** The identity an SDK's `user` carries, strongest first; null when it names nobody. */
export function userKeyOf(user: SentUser | undefined): string | null {
  if (!user || typeof user !== 'object') return null;
  for (const [prefix, value] of [['id', user.id], ['email', user.email], ['username', user.username], ['ip', user.ip_address]] as const) {
    const v = text(value);
    if (v) return `${prefix}:${v}`;
  }
  return null;
}

/** An end user's `_id`: the same project and identity always address the same document. */
const endUserKey = (projectId: Types.ObjectId, userKey: string) => contentId('end-user', projectId.toHexString(), userKey);

export interface Sighting {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  user: SentUser | undefined;
  seenAt: Date;
}

interface PendingUser {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  userKey: string;
  /** The newest sighting's identity fields: what the user is shown with. */
  user: SentUser;
  count: number;
  first: Date;
  last: Date;
}

/**
 * End users' sightings not yet written, by project and identity. The flushes that store error events
 * only add to it; `writeEndUsers` (every END_USER_WRITE_MS in a workers process, and at its shutdown)
 * writes each user once however many flushes named them since, off the path that makes events
 * readable. Each user costs the store one update whatever it holds (about 1.3 ms on FerretDB; `npm
 * run bench:writes`), so the fewer the writes, the more events a second the workers store. What a
 * process holds here when it dies is lost, as counts already were when a worker died between a
 * batch's claim and its counts: end users' counts are at most once.
 */
const pending = new Map<string, PendingUser>();
/** Past this many users waiting (a write far slower than the sightings) the oldest are let go rather than the process's memory. */
const PENDING_USERS_MAX = 100_000;

/** Adds the end users of a flush's events (counted once per batch by the caller's claim) to those waiting; anonymous events are skipped. */
export function recordEndUsers(sightings: Sighting[]): void {
  for (const sighting of sightings) {
    const userKey = userKeyOf(sighting.user);
    if (!userKey) continue;
    merge(`${sighting.projectId.toHexString()}:${userKey}`, { orgId: sighting.orgId, projectId: sighting.projectId, userKey, user: sighting.user!, count: 1, first: sighting.seenAt, last: sighting.seenAt });
  }
}

function merge(key: string, sighting: PendingUser): void {
  const seen = pending.get(key);
  if (!seen) {
    pending.set(key, sighting);
    if (pending.size > PENDING_USERS_MAX) pending.delete(pending.keys().next().value!);
    return;
  }
  seen.count += sighting.count;
  if (sighting.first < seen.first) seen.first = sighting.first;
  if (sighting.last >= seen.last) [seen.last, seen.user] = [sighting.last, sighting.user];
}

let writing: Promise<void> | undefined;

/**
 * Writes the waiting end users, one upsert each, and answers how many; one write at a time (a call
 * while one runs waits for it, then writes what came since). A write the store refuses loses what it
 * took, at most once like the rest: it may have applied part of it.
 */
export async function writeEndUsers(): Promise<number> {
  while (writing) await writing.catch(() => undefined);
  const taken = [...pending.values()];
  pending.clear();
  if (taken.length === 0) return 0;
  writing = upsertAll(
    EndUser.collection,
    taken.map(({ orgId, projectId, userKey, user, count, first, last }) => {
      const fields = { userId: text(user.id), email: text(user.email), username: text(user.username), ipAddress: text(user.ip_address) };
      const known = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
      return {
        updateOne: {
          filter: { _id: endUserKey(projectId, userKey) },
          update: { $setOnInsert: { orgId, projectId, userKey }, $set: known, $min: { firstSeen: first }, $max: { lastSeen: last }, $inc: { eventCount: count } },
          upsert: true,
        },
      };
    }),
  );
  try {
    await writing;
    return taken.length;
  } finally {
    writing = undefined;
  }
}

export const endUserJson = z.object({
  id: z.string(),
  project_id: z.string(),
  user_id: z.string().nullable(),
  email: z.string().nullable(),
  username: z.string().nullable(),
  ip_address: z.string().nullable(),
  first_seen: z.string(),
  last_seen: z.string(),
  event_count: z.number().int(),
});

const endUserJsonOf = (user: EndUserDoc): z.infer<typeof endUserJson> => ({
  id: user._id.toHexString(),
  project_id: user.projectId.toHexString(),
  user_id: user.userId ?? null,
  email: user.email ?? null,
  username: user.username ?? null,
  ip_address: user.ipAddress ?? null,
  first_seen: user.firstSeen.toISOString(),
  last_seen: user.lastSeen.toISOString(),
  event_count: user.eventCount,
});

/** End users seen within the window, most recent first. */
export async function listEndUsers(scope: ViewScope, options: { limit: number; cursor?: string | undefined }) {
  const filter = { ...scopeFilter(scope), lastSeen: { $gte: scope.from, $lte: scope.to } };
  const page = await paginate(EndUser, filter, { sortField: 'lastSeen', direction: -1, ...options });
  return { data: page.items.map((u) => endUserJsonOf(u as EndUserDoc)), next_cursor: page.nextCursor };
}
