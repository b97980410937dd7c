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

/** Upserts the end users of a batch of events, one write per user however many events name them; anonymous events are skipped. */
export async function recordEndUsers(sightings: Sighting[]): Promise<void> {
  const byUser = new Map<string, { sighting: Sighting; userKey: string; count: number; first: Date; last: Date }>();
  for (const sighting of sightings) {
    const userKey = userKeyOf(sighting.user);
    if (!userKey) continue;
    const key = `${sighting.projectId.toHexString()}:${userKey}`;
    const seen = byUser.get(key);
    if (!seen) byUser.set(key, { sighting, userKey, count: 1, first: sighting.seenAt, last: sighting.seenAt });
    else {
      seen.count++;
      if (sighting.seenAt < seen.first) seen.first = sighting.seenAt;
      if (sighting.seenAt >= seen.last) [seen.last, seen.sighting] = [sighting.seenAt, sighting];
    }
  }
  await upsertAll(
    EndUser.collection,
    [...byUser.values()].map(({ sighting, userKey, count, first, last }) => {
      const user = sighting.user!;
      const fields = { userId: text(user.id), email: text(user.email), username: text(user.username), ipAddress: text(user.ip_address) };
      const known = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
      return {
        updateOne: {
          filter: { _id: endUserKey(sighting.projectId, userKey) },
          update: { $setOnInsert: { orgId: sighting.orgId, projectId: sighting.projectId, userKey }, $set: known, $min: { firstSeen: first }, $max: { lastSeen: last }, $inc: { eventCount: count } },
          upsert: true,
        },
      };
    }),
  );
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
