import type { Types } from 'mongoose';
import { z } from 'zod';
import { paginate } from '../../paging.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { EndUser, type EndUserDoc } from './model.js';

export interface SentUser {
  id?: unknown;
  email?: unknown;
  username?: unknown;
  ip_address?: unknown;
}

const text = (value: unknown) => (typeof value === 'string' && value ? value.slice(0, 256) : typeof value === 'number' ? String(value) : null);

/** The identity an SDK's `user` carries, strongest first; null when it names nobody. */
export function userKeyOf(user: SentUser | undefined): string | null {
  if (!user || typeof user !== 'object') return null;
  for (const [prefix, value] of [['id', user.id], ['email', user.email], ['username', user.username], ['ip', user.ip_address]] as const) {
    const v = text(value);
    if (v) return `${prefix}:${v}`;
  }
  return null;
}

/** Upserts an end user from one event; returns its key, or null for an anonymous event. */
export async function recordEndUser(orgId: Types.ObjectId, projectId: Types.ObjectId, user: SentUser | undefined, seenAt: Date): Promise<string | null> {
  const userKey = userKeyOf(user);
  if (!userKey || !user) return null;
  const fields = { userId: text(user.id), email: text(user.email), username: text(user.username), ipAddress: text(user.ip_address) };
  const known = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
  await EndUser.updateOne(
    { projectId, userKey },
    { $setOnInsert: { orgId }, $set: known, $min: { firstSeen: seenAt }, $max: { lastSeen: seenAt }, $inc: { eventCount: 1 } },
    { upsert: true },
  );
  return userKey;
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
