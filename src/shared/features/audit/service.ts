import type { Types } from 'mongoose';
import { z } from 'zod';
import { currentContext } from '../../context.js';
import { paginate } from '../../paging.js';
import { actorOf, type Principal } from '../../principal.js';
import { AuditEntry, type AuditEntryDoc } from './model.js';

export interface AuditInput {
  orgId: Types.ObjectId;
  actor: ReturnType<typeof actorOf> | { type: 'system'; id: null };
  action: string;
  target: { type: string; id: Types.ObjectId | string };
  details?: Record<string, unknown>;
  ip?: string | undefined;
}

/** Writes one trail entry; awaited, so an action the trail cannot record is not reported as done. */
export async function recordAudit(input: AuditInput): Promise<void> {
  await AuditEntry.create({
    ...input,
    target: { type: input.target.type, id: String(input.target.id) },
    requestId: currentContext().requestId ?? null,
    ip: input.ip ?? null,
    at: new Date(),
  });
}

/** The common case: an action taken by the caller of a request. */
export const auditAs = (principal: Principal, ip: string | undefined) =>
  (action: string, target: AuditInput['target'], details?: Record<string, unknown>) =>
    recordAudit({ orgId: principal.orgId, actor: actorOf(principal), action, target, details, ip });

export const auditEntryJson = z.object({
  id: z.string(),
  action: z.string(),
  actor: z.object({ type: z.string(), id: z.string().nullable() }),
  target: z.object({ type: z.string(), id: z.string() }),
  details: z.record(z.string(), z.unknown()).nullable(),
  request_id: z.string().nullable(),
  ip: z.string().nullable(),
  at: z.string(),
});

function toJson(entry: AuditEntryDoc): z.infer<typeof auditEntryJson> {
  return {
    id: entry._id.toHexString(),
    action: entry.action,
    actor: { type: entry.actor?.type ?? 'system', id: entry.actor?.id ? String(entry.actor.id) : null },
    target: { type: entry.target?.type ?? '', id: entry.target?.id ?? '' },
    details: (entry.details as Record<string, unknown> | undefined) ?? null,
    request_id: entry.requestId ?? null,
    ip: entry.ip ?? null,
    at: entry.at.toISOString(),
  };
}

export async function listAudit(orgId: Types.ObjectId, options: { limit: number; cursor?: string | undefined; action?: string | undefined }) {
  const filter = { orgId, ...(options.action && { action: options.action }) };
  const page = await paginate(AuditEntry, filter, { sortField: 'at', direction: -1, limit: options.limit, cursor: options.cursor });
  return { data: page.items.map(toJson), next_cursor: page.nextCursor };
}
