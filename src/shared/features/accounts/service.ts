import { Types } from 'mongoose';
import type { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import { hasRole, type MemberPrincipal, type Role } from '../../principal.js';
import { randomBase62, sha256 } from '../../secrets.js';
import { ApiKey } from '../api-keys/model.js';
import { auditAs, recordAudit } from '../audit/service.js';
import { Membership, Organization, Session, User, type MembershipDoc, type OrganizationDoc, type UserDoc } from './model.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';
import type { accountJson, inviteBody, loginBody, memberJson, registerBody } from './schemas.js';

const userJson = (user: UserDoc) => ({
  id: user._id.toHexString(),
  email: user.email,
  name: user.name ?? '',
  created_at: user.createdAt.toISOString(),
});

const organizationJson = (org: OrganizationDoc) => ({
  id: org._id.toHexString(),
  name: org.name,
  created_at: org.createdAt.toISOString(),
});

function memberJsonOf(membership: MembershipDoc, user: UserDoc | undefined): z.infer<typeof memberJson> {
  return {
    id: membership._id.toHexString(),
    email: membership.email,
    name: user?.name ?? null,
    user_id: membership.userId ? membership.userId.toHexString() : null,
    role: membership.role,
    status: membership.status,
    created_at: membership.createdAt.toISOString(),
  };
}

async function loadOrganization(orgId: Types.ObjectId): Promise<OrganizationDoc> {
  const org = await Organization.findById(orgId).lean<OrganizationDoc>();
  if (!org) throw notFound('organization');
  return org;
}

/**
 * Creates an account. An email with a pending invite joins the inviting organisation with the invited
 * role; any other creates a new organisation owned by the new user. No session is created.
 */
export async function register(input: z.infer<typeof registerBody>, config: Config) {
  if (await User.exists({ email: input.email })) throw new AppError('conflict', 'an account with that email already exists');
  const passwordHash = await hashPassword(input.password, config.PASSWORD_HASH_COST);
  let user: UserDoc;
  try {
    user = (await User.create({ email: input.email, name: input.name ?? '', passwordHash })).toObject() as UserDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw new AppError('conflict', 'an account with that email already exists');
    throw error;
  }
  const invite = await acceptInvite(user);
  if (invite) {
    return { user: userJson(user), organization: organizationJson(await loadOrganization(invite.orgId)), role: invite.role };
  }
  const org = (await Organization.create({ name: input.organization ?? `${input.name || input.email.split('@')[0]}'s organization` })).toObject() as OrganizationDoc;
  await Membership.create({ orgId: org._id, email: input.email, userId: user._id, role: 'owner', status: 'active' });
  await recordAudit({ orgId: org._id, actor: { type: 'user', id: user._id }, action: 'organization.create', target: { type: 'organization', id: org._id } });
  return { user: userJson(user), organization: organizationJson(org), role: 'owner' as Role };
}

/** Accepts the oldest pending invite for a user's email, if there is one, and records the join. */
async function acceptInvite(user: Pick<UserDoc, '_id' | 'email'>): Promise<MembershipDoc | null> {
  const invite = await Membership.findOneAndUpdate(
    { email: user.email, status: 'invited' },
    { $set: { status: 'active', userId: user._id } },
    { sort: { createdAt: 1 }, returnDocument: 'after' },
  ).lean<MembershipDoc>();
  if (invite) await recordAudit({ orgId: invite.orgId, actor: { type: 'user', id: user._id }, action: 'member.join', target: { type: 'member', id: invite._id } });
  return invite;
}

/** The user's active membership; a pending invite for their email is accepted at this point. */
async function activeMembership(user: UserDoc): Promise<MembershipDoc | null> {
  const active = await Membership.findOne({ userId: user._id, status: 'active' }).lean<MembershipDoc>();
  return active ?? acceptInvite(user);
}

/** Checks credentials and opens a session. An unknown email costs one scrypt, like a wrong password. */
export async function login(input: z.infer<typeof loginBody>, config: Config, ip: string | undefined) {
  const user = await User.findOne({ email: input.email }).lean<UserDoc>();
  const valid = await verifyPassword(input.password, user?.passwordHash ?? (await decoyHash(config.PASSWORD_HASH_COST)));
  if (!user || !valid) throw new AppError('invalid_credentials', 'wrong email or password');
  const membership = await activeMembership(user);
  if (!membership) throw new AppError('forbidden', 'this account is not a member of any organization');
  return openSession(user._id, membership.orgId, membership.role, config, ip, 'password');
}

export async function logout(principal: MemberPrincipal, ip: string | undefined): Promise<void> {
  if (principal.kind !== 'session') return;
  await Session.deleteOne({ _id: principal.sessionId });
  await auditAs(principal, ip)('session.logout', { type: 'session', id: principal.sessionId });
}

/** Resolves a session cookie to its user, organisation and current role; expired or removed: none. */
export async function resolveSession(token: string) {
  const session = await Session.findOne({ tokenHash: sha256(token) }).lean();
  if (!session) return undefined;
  if (session.expiresAt.getTime() <= Date.now()) {
    await Session.deleteOne({ _id: session._id });
    return undefined;
  }
  const membership = await Membership.findOne({ orgId: session.orgId, userId: session.userId, status: 'active' }).lean<MembershipDoc>();
  if (!membership) return undefined;
  return { sessionId: session._id, userId: session.userId, orgId: session.orgId, role: membership.role };
}

/** The role of a user in an organisation right now, or none when they are no longer an active member. */
export async function currentRole(orgId: Types.ObjectId, userId: Types.ObjectId): Promise<Role | undefined> {
  const membership = await Membership.findOne({ orgId, userId, status: 'active' }).lean<MembershipDoc>();
  return membership?.role;
}

export async function me(principal: MemberPrincipal): Promise<z.infer<typeof accountJson>> {
  const [user, org] = await Promise.all([User.findById(principal.userId).lean<UserDoc>(), loadOrganization(principal.orgId)]);
  if (!user) throw notFound('user');
  return { user: userJson(user), organization: organizationJson(org), role: principal.role };
}

export async function listMembers(orgId: Types.ObjectId, options: { limit: number; cursor?: string | undefined }) {
  const page = await paginate(Membership, { orgId }, { sortField: 'createdAt', direction: 1, ...options });
  const userIds = page.items.flatMap((m) => (m.userId ? [m.userId] : []));
  const users = await User.find({ _id: { $in: userIds } }).lean<UserDoc[]>();
  const byId = new Map(users.map((user) => [user._id.toHexString(), user]));
  return {
    data: page.items.map((m) => memberJsonOf(m as MembershipDoc, m.userId ? byId.get(m.userId.toHexString()) : undefined)),
    next_cursor: page.nextCursor,
  };
}

function assertMayGrant(principal: MemberPrincipal, role: Role) {
  if (!hasRole(principal.role, role)) throw new AppError('forbidden', `only an ${role === 'owner' ? 'owner' : 'admin'} may grant the ${role} role`);
}

export async function inviteMember(principal: MemberPrincipal, input: z.infer<typeof inviteBody>, ip: string | undefined) {
  assertMayGrant(principal, input.role);
  const user = await User.findOne({ email: input.email }).lean<UserDoc>();
  if (user && (await Membership.exists({ userId: user._id, status: 'active', orgId: { $ne: principal.orgId } }))) {
    throw new AppError('conflict', 'that email belongs to a member of another organization');
  }
  let membership: MembershipDoc;
  try {
    membership = (
      await Membership.create({ orgId: principal.orgId, email: input.email, role: input.role, status: 'invited', invitedBy: principal.userId })
    ).toObject() as MembershipDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw new AppError('conflict', 'that email is already a member or invited');
    throw error;
  }
  await auditAs(principal, ip)('member.invite', { type: 'member', id: membership._id }, { email: input.email, role: input.role });
  return memberJsonOf(membership, undefined);
}

async function findMember(principal: MemberPrincipal, memberId: string): Promise<MembershipDoc> {
  const membership = await Membership.findOne({ _id: parseId(memberId, 'member'), orgId: principal.orgId }).lean<MembershipDoc>();
  if (!membership) throw notFound('member');
  return membership;
}

async function assertNotLastOwner(membership: MembershipDoc) {
  if (membership.role !== 'owner' || membership.status !== 'active') return;
  const owners = await Membership.countDocuments({ orgId: membership.orgId, role: 'owner', status: 'active' });
  if (owners <= 1) throw new AppError('conflict', 'the last owner cannot be removed or demoted');
}

export async function changeMemberRole(principal: MemberPrincipal, memberId: string, role: Role, ip: string | undefined) {
  const membership = await findMember(principal, memberId);
  assertMayGrant(principal, role);
  assertMayGrant(principal, membership.role);
  if (role !== 'owner') await assertNotLastOwner(membership);
  const updated = await Membership.findByIdAndUpdate(membership._id, { $set: { role } }, { returnDocument: 'after' }).lean<MembershipDoc>();
  if (!updated) throw notFound('member');
  await auditAs(principal, ip)('member.role_change', { type: 'member', id: membership._id }, { from: membership.role, to: role });
  const user = updated.userId ? await User.findById(updated.userId).lean<UserDoc>() : null;
  return memberJsonOf(updated, user ?? undefined);
}

/** Removes a member or withdraws an invite; the member's sessions and API keys end with it. */
export async function removeMember(principal: MemberPrincipal, memberId: string, ip: string | undefined): Promise<void> {
  const membership = await findMember(principal, memberId);
  assertMayGrant(principal, membership.role);
  await assertNotLastOwner(membership);
  await Membership.deleteOne({ _id: membership._id });
  if (membership.userId) {
    await Session.deleteMany({ userId: membership.userId, orgId: principal.orgId });
    await ApiKey.updateMany({ orgId: principal.orgId, createdBy: membership.userId, revokedAt: null }, { $set: { revokedAt: new Date() } });
  }
  await auditAs(principal, ip)('member.remove', { type: 'member', id: membership._id }, { email: membership.email });
}

// ---------------------------------------------------------------------------------------------------------
// Single sign-on's side of accounts (src/shared/features/sso): the same session, invite and account
// records as password login and registration, for a user the identity provider vouched for.

/** Opens a session as password login does (same token, lifetime and `session.login` entry, with the method). */
export async function openSession(userId: Types.ObjectId, orgId: Types.ObjectId, role: Role, config: Config, ip: string | undefined, method: 'password' | 'sso') {
  const user = await User.findById(userId).lean<UserDoc>();
  if (!user) throw notFound('user');
  const token = randomBase62(32);
  const session = await Session.create({ tokenHash: sha256(token), userId, orgId, expiresAt: new Date(Date.now() + config.SESSION_TTL_HOURS * 3_600_000) });
  await recordAudit({ orgId, actor: { type: 'user', id: userId }, action: 'session.login', target: { type: 'session', id: session._id }, details: { method }, ip });
  const account: z.infer<typeof accountJson> = { user: userJson(user), organization: organizationJson(await loadOrganization(orgId)), role };
  return { account, token };
}

/**
 * Joins an account single sign-on just created to the organisation whose verified domain its
 * provider-verified address is in: that rule admits it, not an invite. A pending invite of the address in
 * this organisation lends its role (the address is proven, as the invite's token would prove it) and is
 * used up; otherwise the account joins as a member. Records the join.
 */
export async function joinThroughSso(orgId: Types.ObjectId, user: Pick<UserDoc, '_id' | 'email'>, now: Date): Promise<MembershipDoc> {
  const membership = (await Membership.findOneAndUpdate(
    { orgId, email: user.email },
    { $set: { status: 'active', userId: user._id, joinedAt: now }, $unset: { inviteTokenHash: 1, inviteExpiresAt: 1 }, $setOnInsert: { role: 'member' } },
    { upsert: true, returnDocument: 'after' },
  ).lean<MembershipDoc>())!;
  await recordAudit({ orgId, actor: { type: 'user', id: user._id }, action: 'member.join', target: { type: 'member', id: membership._id }, details: { method: 'sso' } });
  return membership;
}

/**
 * An account for an address first seen through single sign-on. Its password is random and never
 * shown, so password login fails for it exactly as a wrong password does (same scrypt cost).
 */
export async function createSsoUser(input: { id: Types.ObjectId; email: string; name: string }, config: Config): Promise<UserDoc> {
  const passwordHash = await hashPassword(randomBase62(32), config.PASSWORD_HASH_COST);
  try {
    return (await User.create({ _id: input.id, email: input.email, name: input.name, passwordHash })).toObject() as UserDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw new AppError('conflict', 'an account with that email already exists');
    throw error;
  }
}
