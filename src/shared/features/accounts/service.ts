import { Types } from 'mongoose';
import type { z } from 'zod';
import type { Mailer } from '../../clients/mailer.js';
import type { Config } from '../../config.js';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { escapeHtml } from '../../html.js';
import { paginate, parseId } from '../../paging.js';
import { hasRole, type MemberPrincipal, type Role } from '../../principal.js';
import { randomBase62, sha256 } from '../../secrets.js';
import { ApiKey } from '../api-keys/model.js';
import { auditAs, recordAudit } from '../audit/service.js';
import { organizationSlug } from './organization-slug.js';
import { Membership, Organization, PasswordReset, Session, User, type MembershipDoc, type OrganizationDoc, type UserDoc } from './model.js';
import { decoyHash, hashPassword, verifyPassword } from './passwords.js';
import type { accountJson, inviteBody, inviteJson, loginBody, memberJson, passwordChangeBody, registerBody } from './schemas.js';

/** How long an invite's token may be used. */
const INVITE_TTL_MS = 7 * 24 * 3_600_000;
/** How long a mailed password-reset link works. */
const RESET_TTL_MS = 3_600_000;

/** A page of the dashboard, e.g. `/invites/<token>`, under DASHBOARD_ORIGIN. */
const dashboardLink = (config: Config, path: string) => `${config.DASHBOARD_ORIGIN.replace(/\/+$/, '')}${path}`;

const userJson = (user: UserDoc) => ({
  id: user._id.toHexString(),
  email: user.email,
  name: user.name ?? '',
  created_at: user.createdAt.toISOString(),
});

const organizationJson = async (org: OrganizationDoc) => ({
  id: org._id.toHexString(),
  name: org.name,
  slug: await organizationSlug(org),
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

async function createUser(input: z.infer<typeof registerBody>, config: Config): Promise<UserDoc> {
  const passwordHash = await hashPassword(input.password, config.PASSWORD_HASH_COST);
  try {
    return (await User.create({ email: input.email, name: input.name ?? '', passwordHash })).toObject() as UserDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw new AppError('conflict', 'an account with that email already exists');
    throw error;
  }
}

/**
 * Creates an account and a new organisation owned by it, whatever invites the email has: an invite is
 * accepted only with its token (registerWithInvite). No session is created.
 */
export async function register(input: z.infer<typeof registerBody>, config: Config, now = new Date()) {
  if (input.invite_token) return registerWithInvite(input, input.invite_token, config, now);
  if (await User.exists({ email: input.email })) throw new AppError('conflict', 'an account with that email already exists');
  const user = await createUser(input, config);
  const org = (await Organization.create({ name: input.organization ?? `${input.name || input.email.split('@')[0]}'s organization` })).toObject() as OrganizationDoc;
  await Membership.create({ orgId: org._id, email: input.email, userId: user._id, role: 'owner', status: 'active', joinedAt: now });
  await recordAudit({ orgId: org._id, actor: { type: 'user', id: user._id }, action: 'organization.create', target: { type: 'organization', id: org._id } });
  return { user: userJson(user), organization: await organizationJson(org), role: 'owner' as Role };
}

/** The pending, unexpired invite a token names, whatever address it is for. */
const pendingInvite = (token: string, now: Date) =>
  Membership.findOne({ inviteTokenHash: sha256(token), status: 'invited', inviteExpiresAt: { $gt: now } }).lean<MembershipDoc>();

const inviteNotFound = () => new AppError('not_found', 'invite not found, already used, expired or withdrawn');

/**
 * Accepts an invite by its token for a user of the invited address, once: the update that activates the
 * membership is the one that finds the token still pending, so two uses cannot both succeed.
 */
async function consumeInvite(token: string, user: Pick<UserDoc, '_id' | 'email'>, now: Date): Promise<MembershipDoc | null> {
  const invite = await Membership.findOneAndUpdate(
    { inviteTokenHash: sha256(token), email: user.email, status: 'invited', inviteExpiresAt: { $gt: now } },
    { $set: { status: 'active', userId: user._id, joinedAt: now }, $unset: { inviteTokenHash: 1, inviteExpiresAt: 1 } },
    { returnDocument: 'after' },
  ).lean<MembershipDoc>();
  if (invite) await recordAudit({ orgId: invite.orgId, actor: { type: 'user', id: user._id }, action: 'member.join', target: { type: 'member', id: invite._id }, details: { method: 'invite' } });
  return invite;
}

/**
 * Registration with an invite's token joins the inviting organisation with the invited role. The token
 * proves the address: used with any other address it names nothing (404, as an unknown token). An
 * address that already has an account joins with that account, which its password must open.
 */
async function registerWithInvite(input: z.infer<typeof registerBody>, token: string, config: Config, now: Date) {
  const invite = await pendingInvite(token, now);
  if (!invite || invite.email !== input.email) throw inviteNotFound();
  const existing = await User.findOne({ email: input.email }).lean<UserDoc>();
  if (existing && !(await verifyPassword(input.password, existing.passwordHash))) throw new AppError('invalid_credentials', 'wrong email or password');
  const user = existing ?? (await createUser(input, config));
  const membership = await consumeInvite(token, user, now);
  if (!membership) {
    // another request used the token between the look-up and now: no half-made account stays behind
    if (!existing) await User.deleteOne({ _id: user._id });
    throw inviteNotFound();
  }
  return { user: userJson(user), organization: await organizationJson(await loadOrganization(membership.orgId)), role: membership.role };
}

/** Password changes, sign-out everywhere and invite acceptance are the person's own acts: a session, not an API key. */
function sessionOf(principal: MemberPrincipal) {
  if (principal.kind !== 'session') throw new AppError('forbidden', 'this needs a signed-in session, not an API key');
  return principal;
}

/**
 * A signed-in user accepts an invite of their own address by its token; the current session moves to
 * the joined organisation. Any other address's token, or a used, expired or withdrawn one: 404.
 */
export async function acceptInvite(principal: MemberPrincipal, token: string, now = new Date()): Promise<z.infer<typeof accountJson>> {
  const session = sessionOf(principal);
  const user = await User.findById(session.userId).lean<UserDoc>();
  if (!user) throw notFound('user');
  const membership = await consumeInvite(token, user, now);
  if (!membership) throw inviteNotFound();
  await Session.updateOne({ _id: session.sessionId }, { $set: { orgId: membership.orgId } });
  return { user: userJson(user), organization: await organizationJson(await loadOrganization(membership.orgId)), role: membership.role };
}

/**
 * Checks credentials and opens a session in the organisation the user joined last. An unknown email
 * costs one scrypt, like a wrong password. Login never accepts an invite: only its token does.
 */
export async function login(input: z.infer<typeof loginBody>, config: Config, ip: string | undefined) {
  const user = await User.findOne({ email: input.email }).lean<UserDoc>();
  const valid = await verifyPassword(input.password, user?.passwordHash ?? (await decoyHash(config.PASSWORD_HASH_COST)));
  if (!user || !valid) throw new AppError('invalid_credentials', 'wrong email or password');
  const membership = await Membership.findOne({ userId: user._id, status: 'active' }).sort({ joinedAt: -1, _id: -1 }).lean<MembershipDoc>();
  if (!membership) throw new AppError('forbidden', 'this account is not a member of any organization');
  return openSession(user._id, membership.orgId, membership.role, config, ip, 'password');
}

export async function logout(principal: MemberPrincipal, ip: string | undefined): Promise<void> {
  if (principal.kind !== 'session') return;
  await Session.deleteOne({ _id: principal.sessionId });
  await auditAs(principal, ip)('session.logout', { type: 'session', id: principal.sessionId });
}

/** Signs the user out everywhere: every session of theirs ends, the current one included. */
export async function logoutEverywhere(principal: MemberPrincipal, ip: string | undefined): Promise<void> {
  const session = sessionOf(principal);
  const { deletedCount } = await Session.deleteMany({ userId: session.userId });
  await auditAs(principal, ip)('session.logout_all', { type: 'user', id: session.userId }, { sessions: deletedCount });
}

async function setPassword(userId: Types.ObjectId, password: string, config: Config): Promise<void> {
  await User.updateOne({ _id: userId }, { $set: { passwordHash: await hashPassword(password, config.PASSWORD_HASH_COST) } });
  // a reset link mailed before the change must not undo it
  await PasswordReset.deleteMany({ userId });
}

/**
 * Changes the signed-in user's password after checking the current one (401 invalid_credentials when
 * wrong). Every other session of the user ends; the current one stays signed in.
 */
export async function changePassword(principal: MemberPrincipal, input: z.infer<typeof passwordChangeBody>, config: Config, ip: string | undefined): Promise<void> {
  const session = sessionOf(principal);
  const user = await User.findById(session.userId).lean<UserDoc>();
  if (!user || !(await verifyPassword(input.current_password, user.passwordHash))) throw new AppError('invalid_credentials', 'the current password is wrong');
  await setPassword(user._id, input.new_password, config);
  const { deletedCount } = await Session.deleteMany({ userId: user._id, _id: { $ne: session.sessionId } });
  await auditAs(principal, ip)('user.password_change', { type: 'user', id: user._id }, { sessions_ended: deletedCount });
}

/**
 * Mails a single-use reset link, valid for an hour, when the address has an account; otherwise does
 * nothing. The caller answers the same either way and does not wait for this.
 */
export async function requestPasswordReset(email: string, mailer: Mailer, config: Config, now = new Date()): Promise<void> {
  const user = await User.findOne({ email }).lean<UserDoc>();
  if (!user) return;
  const token = randomBase62(32);
  await PasswordReset.create({ tokenHash: sha256(token), userId: user._id, expiresAt: new Date(now.getTime() + RESET_TTL_MS) });
  const url = dashboardLink(config, `/reset-password/${token}`);
  await mailer.send({
    orgId: null,
    to: [user.email],
    subject: 'Reset your Sluice password',
    text: `Someone asked to reset the password of your Sluice account ${user.email}.\n\nTo choose a new password, open this link within an hour:\n${url}\n\nIf it was not you, ignore this mail: your password stays as it is.\n`,
    html: `<p>Someone asked to reset the password of your Sluice account ${escapeHtml(user.email)}.</p><p><a href="${escapeHtml(url)}">Choose a new password</a> within an hour.</p><p>If it was not you, ignore this mail: your password stays as it is.</p>`,
  });
}

/** Sets a new password with a mailed link, once; every session of the account ends. Unknown, used or expired link: 404. */
export async function resetPassword(token: string, password: string, config: Config, ip: string | undefined, now = new Date()): Promise<void> {
  const reset = await PasswordReset.findOneAndDelete({ tokenHash: sha256(token), expiresAt: { $gt: now } }).lean();
  if (!reset) throw new AppError('not_found', 'reset link not found, already used or expired');
  await setPassword(reset.userId, password, config);
  const { deletedCount } = await Session.deleteMany({ userId: reset.userId });
  const memberships = await Membership.find({ userId: reset.userId, status: 'active' }).lean<MembershipDoc[]>();
  for (const { orgId } of memberships) {
    await recordAudit({ orgId, actor: { type: 'user', id: reset.userId }, action: 'user.password_reset', target: { type: 'user', id: reset.userId }, details: { sessions_ended: deletedCount }, ip });
  }
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
  return { user: userJson(user), organization: await organizationJson(org), role: principal.role };
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

/**
 * Invites an email with a role. The answer carries the invite's token and dashboard URL, shown this
 * once (only the token's hash is kept); with a mailer the URL is also mailed to the address. A failed
 * mail does not undo the invite: it comes back as `mailError` for the caller to log.
 */
export async function inviteMember(
  principal: MemberPrincipal,
  input: z.infer<typeof inviteBody>,
  ip: string | undefined,
  { config, mailer, now = new Date() }: { config: Config; mailer: Mailer | undefined; now?: Date },
): Promise<{ invite: z.infer<typeof inviteJson>; mailError?: unknown }> {
  assertMayGrant(principal, input.role);
  const token = randomBase62(32);
  let membership: MembershipDoc;
  try {
    membership = (
      await Membership.create({
        orgId: principal.orgId,
        email: input.email,
        role: input.role,
        status: 'invited',
        invitedBy: principal.userId,
        inviteTokenHash: sha256(token),
        inviteExpiresAt: new Date(now.getTime() + INVITE_TTL_MS),
      })
    ).toObject() as MembershipDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw new AppError('conflict', 'that email is already a member or invited');
    throw error;
  }
  await auditAs(principal, ip)('member.invite', { type: 'member', id: membership._id }, { email: input.email, role: input.role });
  const url = dashboardLink(config, `/invites/${token}`);
  const invite = { ...memberJsonOf(membership, undefined), invite_token: token, invite_url: url, invite_mailed: false };
  if (!mailer) return { invite };
  const org = await loadOrganization(principal.orgId);
  try {
    await mailer.send({
      orgId: principal.orgId.toHexString(),
      to: [input.email],
      subject: `You are invited to ${org.name} on Sluice`,
      text: `You are invited to join ${org.name} on Sluice as ${input.role}.\n\nTo accept, open this link within 7 days:\n${url}\n`,
      html: `<p>You are invited to join <strong>${escapeHtml(org.name)}</strong> on Sluice as ${input.role}.</p><p><a href="${escapeHtml(url)}">Accept the invite</a> within 7 days.</p>`,
    });
  } catch (error) {
    return { invite, mailError: error };
  }
  return { invite: { ...invite, invite_mailed: true } };
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
  const account: z.infer<typeof accountJson> = { user: userJson(user), organization: await organizationJson(await loadOrganization(orgId)), role };
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
