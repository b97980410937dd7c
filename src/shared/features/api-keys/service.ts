import type { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import { hasRole, type MemberPrincipal } from '../../principal.js';
import { randomBase62, sha256 } from '../../secrets.js';
import { currentRole } from '../accounts/service.js';
import { auditAs } from '../audit/service.js';
import { ApiKey, type ApiKeyDoc } from './model.js';
import type { apiKeyJson, createApiKeyBody } from './schemas.js';

const SECRET_PREFIX = 'slk_';
const SHOWN_PREFIX_LENGTH = SECRET_PREFIX.length + 8;
/** last_used_at is a hint, not a log: written at most once a minute per key. */
const LAST_USED_RESOLUTION_MS = 60_000;

const apiKeyJsonOf = (key: ApiKeyDoc): z.infer<typeof apiKeyJson> => ({
  id: key._id.toHexString(),
  name: key.name,
  role: key.role,
  prefix: key.prefix,
  created_by: key.createdBy.toHexString(),
  created_at: key.createdAt.toISOString(),
  last_used_at: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
});

export async function listApiKeys(orgId: Types.ObjectId, options: { limit: number; cursor?: string | undefined }) {
  const page = await paginate(ApiKey, { orgId, revokedAt: null }, { sortField: 'createdAt', direction: 1, ...options });
  return { data: page.items.map((key) => apiKeyJsonOf(key as ApiKeyDoc)), next_cursor: page.nextCursor };
}

export async function createApiKey(principal: MemberPrincipal, input: z.infer<typeof createApiKeyBody>, ip: string | undefined) {
  const role = input.role ?? principal.role;
  if (!hasRole(principal.role, role)) throw new AppError('forbidden', 'an API key cannot have a higher role than its creator');
  const secret = `${SECRET_PREFIX}${randomBase62(32)}`;
  const key = (
    await ApiKey.create({
      orgId: principal.orgId,
      name: input.name,
      role,
      secretHash: sha256(secret),
      prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
      createdBy: principal.userId,
    })
  ).toObject() as ApiKeyDoc;
  await auditAs(principal, ip)('api_key.create', { type: 'api_key', id: key._id }, { name: key.name, role });
  return { ...apiKeyJsonOf(key), secret };
}

export async function revokeApiKey(principal: MemberPrincipal, keyId: string, ip: string | undefined): Promise<void> {
  const key = await ApiKey.findOneAndUpdate(
    { _id: parseId(keyId, 'API key'), orgId: principal.orgId, revokedAt: null },
    { $set: { revokedAt: new Date() } },
  ).lean<ApiKeyDoc>();
  if (!key) throw notFound('API key');
  await auditAs(principal, ip)('api_key.revoke', { type: 'api_key', id: key._id }, { name: key.name });
}

/**
 * Resolves a Bearer secret. A key acts with its own role, capped by its creator's current role,
 * so a creator's demotion or removal takes the key's power with it.
 */
export async function resolveApiKey(secret: string) {
  if (!secret.startsWith(SECRET_PREFIX)) return undefined;
  const key = await ApiKey.findOne({ secretHash: sha256(secret), revokedAt: null }).lean<ApiKeyDoc>();
  if (!key) return undefined;
  const creatorRole = await currentRole(key.orgId, key.createdBy);
  if (!creatorRole) return undefined;
  const now = Date.now();
  if (!key.lastUsedAt || now - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await ApiKey.updateOne({ _id: key._id }, { $set: { lastUsedAt: new Date(now) } });
  }
  return { keyId: key._id, orgId: key.orgId, userId: key.createdBy, role: hasRole(creatorRole, key.role) ? key.role : creatorRole };
}
