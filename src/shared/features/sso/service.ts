import { Types } from 'mongoose';
import type { z } from 'zod';
import { DnsLookupError, type DnsClient } from '../../clients/dns.js';
import { OidcRefusal, type OidcClient, type OidcIdentity } from '../../clients/oidc.js';
import type { SecretBox } from '../../clients/secret-box.js';
import type { Config } from '../../config.js';
import { AppError, isDuplicateKey, notFound, type ErrorCode } from '../../errors.js';
import type { MemberPrincipal, Role } from '../../principal.js';
import { randomBase62, sha256 } from '../../secrets.js';
import { Membership, User, type UserDoc } from '../accounts/model.js';
import { createSsoUser, currentRole, joinThroughSso, openSession } from '../accounts/service.js';
import { auditAs, recordAudit } from '../audit/service.js';
import { domainOfEmail, isPublicMailDomain, verificationRecordName, verificationRecordValue } from './domains.js';
import {
  SsoConnection,
  SsoDomainClaim,
  SsoIdentity,
  SsoLoginState,
  SsoVerifiedDomain,
  type SsoConnectionDoc,
  type SsoDomainClaimDoc,
  type SsoVerifiedDomainDoc,
} from './model.js';
import type { connectionJson, domainJson, putConnectionBody } from './schemas.js';

/** What single sign-on needs besides the database. */
export interface SsoDeps {
  config: Config;
  secrets: SecretBox;
  oidc: OidcClient;
  dns: DnsClient;
}

/** How long a started login may take at the provider; its state is useless afterwards. */
export const LOGIN_STATE_TTL_MS = 10 * 60_000;

/** Where the provider sends the browser back: register it at the provider. Needs API_PUBLIC_URL. */
export const redirectUriOf = (config: Pick<Config, 'API_PUBLIC_URL'>) => `${(config.API_PUBLIC_URL ?? '').replace(/\/+$/, '')}/v1/auth/sso/callback`;

const fieldError = (path: string, message: string) => new AppError('validation_failed', message, { details: [{ path, message }] });

// ---------------------------------------------------------------------------------------------------------
// The connection

const connectionJsonOf = (connection: SsoConnectionDoc, config: Config): z.infer<typeof connectionJson> => ({
  issuer: connection.issuer,
  client_id: connection.clientId,
  client_secret_set: true,
  enabled: connection.enabled,
  redirect_uri: redirectUriOf(config),
  created_at: connection.createdAt.toISOString(),
  updated_at: connection.updatedAt.toISOString(),
});

export async function getConnection(orgId: Types.ObjectId, config: Config) {
  const connection = await SsoConnection.findOne({ orgId }).lean<SsoConnectionDoc>();
  if (!connection) throw new AppError('not_found', `single sign-on is not configured; register ${redirectUriOf(config)} as the redirect URI at your identity provider, then PUT the connection`);
  return connectionJsonOf(connection, config);
}

/** Creates or replaces the connection once the issuer has answered its discovery document. The secret is sealed. */
export async function putConnection(principal: MemberPrincipal, input: z.infer<typeof putConnectionBody>, deps: SsoDeps, ip: string | undefined, now = new Date()) {
  const existing = await SsoConnection.findOne({ orgId: principal.orgId }).lean<SsoConnectionDoc>();
  if (!input.client_secret && !existing) throw fieldError('body.client_secret', 'client_secret is required when the connection is created');
  let issuer: string;
  try {
    ({ issuer } = await deps.oidc.discover(input.issuer));
  } catch (error) {
    if (!(error instanceof OidcRefusal)) throw error;
    throw fieldError('body.issuer', error.message);
  }
  const connection = await SsoConnection.findOneAndUpdate(
    { orgId: principal.orgId },
    {
      $set: {
        issuer,
        clientId: input.client_id,
        clientSecretSealed: input.client_secret ? deps.secrets.seal(input.client_secret) : existing!.clientSecretSealed,
        enabled: input.enabled,
        updatedAt: now,
      },
      $setOnInsert: { createdAt: now },
    },
    { upsert: true, returnDocument: 'after' },
  ).lean<SsoConnectionDoc>();
  await auditAs(principal, ip)('sso.connection.set', { type: 'sso_connection', id: connection!._id }, {
    issuer,
    client_id: input.client_id,
    enabled: input.enabled,
    secret_changed: !!input.client_secret,
  });
  return connectionJsonOf(connection!, deps.config);
}

/**
 * Removes the connection, its logins in flight and the identities linked through it: a connection
 * made again later (perhaps with another provider) links its users afresh. Claimed domains stay.
 */
export async function deleteConnection(principal: MemberPrincipal, ip: string | undefined): Promise<void> {
  const connection = await SsoConnection.findOneAndDelete({ orgId: principal.orgId }).lean<SsoConnectionDoc>();
  if (!connection) throw notFound('single sign-on connection');
  await SsoLoginState.deleteMany({ orgId: principal.orgId });
  const unlinked = await SsoIdentity.deleteMany({ orgId: principal.orgId });
  await auditAs(principal, ip)('sso.connection.delete', { type: 'sso_connection', id: connection._id }, { issuer: connection.issuer, identities_unlinked: unlinked.deletedCount });
}

// ---------------------------------------------------------------------------------------------------------
// Domains

function domainJsonOf(claim: SsoDomainClaimDoc, verified: SsoVerifiedDomainDoc | undefined): z.infer<typeof domainJson> {
  return {
    domain: claim.domain,
    record: { name: verificationRecordName(claim.domain), type: 'TXT', value: verificationRecordValue(claim.token) },
    verified: !!verified,
    verified_at: verified ? verified.verifiedAt.toISOString() : null,
    created_at: claim.createdAt.toISOString(),
  };
}

export async function listDomains(orgId: Types.ObjectId) {
  const [claims, verified] = await Promise.all([
    SsoDomainClaim.find({ orgId }).sort({ domain: 1 }).lean<SsoDomainClaimDoc[]>(),
    SsoVerifiedDomain.find({ orgId }).lean<SsoVerifiedDomainDoc[]>(),
  ]);
  const verifiedByDomain = new Map(verified.map((v) => [v.domain, v]));
  return { data: claims.map((claim) => domainJsonOf(claim, verifiedByDomain.get(claim.domain))), next_cursor: null };
}

async function assertNotVerifiedElsewhere(orgId: Types.ObjectId, domain: string) {
  const owner = await SsoVerifiedDomain.findOne({ domain }).lean<SsoVerifiedDomainDoc>();
  if (owner && !owner.orgId.equals(orgId)) throw new AppError('conflict', `${domain} is verified by another organization`);
  return owner ?? undefined;
}

/**
 * Claims a domain and answers the TXT record that proves it. Claiming again answers the same record.
 * Several organisations may claim a domain; the first to verify it owns it.
 */
export async function claimDomain(principal: MemberPrincipal, domain: string, ip: string | undefined, now = new Date()) {
  if (isPublicMailDomain(domain)) throw fieldError('body.domain', `${domain} is a public email provider; only a domain your organization controls can be claimed`);
  const verified = await assertNotVerifiedElsewhere(principal.orgId, domain);
  let claim = await SsoDomainClaim.findOne({ orgId: principal.orgId, domain }).lean<SsoDomainClaimDoc>();
  if (!claim) {
    try {
      claim = (await SsoDomainClaim.create({ orgId: principal.orgId, domain, token: randomBase62(24), createdAt: now })).toObject() as SsoDomainClaimDoc;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // the same claim made at the same moment: answer it
      claim = (await SsoDomainClaim.findOne({ orgId: principal.orgId, domain }).lean<SsoDomainClaimDoc>())!;
    }
    await auditAs(principal, ip)('sso.domain.claim', { type: 'sso_domain', id: claim._id }, { domain });
  }
  return domainJsonOf(claim, verified);
}

/** Looks the TXT record up; when it carries the claim's value, the domain is this organisation's. */
export async function verifyDomain(principal: MemberPrincipal, domain: string, dns: DnsClient, ip: string | undefined, now = new Date()) {
  const claim = await SsoDomainClaim.findOne({ orgId: principal.orgId, domain }).lean<SsoDomainClaimDoc>();
  if (!claim) throw new AppError('not_found', `${domain} is not claimed by this organization; claim it first`);
  const already = await assertNotVerifiedElsewhere(principal.orgId, domain);
  if (already) return domainJsonOf(claim, already);
  const name = verificationRecordName(domain);
  const value = verificationRecordValue(claim.token);
  let records: string[];
  try {
    records = await dns.txt(name);
  } catch (error) {
    if (!(error instanceof DnsLookupError)) throw error;
    throw fieldError('body.domain', `${error.message}; try again`);
  }
  if (!records.includes(value)) throw fieldError('body.domain', `no TXT record ${name} with the value ${value} was found`);
  let verified: SsoVerifiedDomainDoc;
  try {
    verified = (await SsoVerifiedDomain.create({ domain, orgId: principal.orgId, verifiedAt: now })).toObject() as SsoVerifiedDomainDoc;
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    // another verification finished first: ours (a double click) or another organisation's
    return domainJsonOf(claim, await assertNotVerifiedElsewhere(principal.orgId, domain));
  }
  await auditAs(principal, ip)('sso.domain.verify', { type: 'sso_domain', id: claim._id }, { domain });
  return domainJsonOf(claim, verified);
}

/** Withdraws a claim; a verified domain stops leading to this organisation's provider at once. */
export async function deleteDomain(principal: MemberPrincipal, domain: string, ip: string | undefined): Promise<void> {
  const claim = await SsoDomainClaim.findOneAndDelete({ orgId: principal.orgId, domain }).lean<SsoDomainClaimDoc>();
  if (!claim) throw notFound('claimed domain');
  await SsoVerifiedDomain.deleteOne({ domain, orgId: principal.orgId });
  await auditAs(principal, ip)('sso.domain.delete', { type: 'sso_domain', id: claim._id }, { domain });
}

// ---------------------------------------------------------------------------------------------------------
// Logging in

const openConnection = (connection: SsoConnectionDoc, secrets: SecretBox) => ({
  issuer: connection.issuer,
  clientId: connection.clientId,
  clientSecret: secrets.open(connection.clientSecretSealed),
});

/**
 * Starts a login for an email whose domain an organisation verified and whose connection is on. Every
 * other email gets the same 404, so the answer says no more than "SSO is (not) set up for this domain".
 * `browserBinding` goes into a cookie of the browser that started: the callback is honoured only with it,
 * so a callback URL handed to someone else's browser signs nobody in (login CSRF).
 */
export async function startLogin(email: string, deps: SsoDeps, now = new Date()) {
  const owner = await SsoVerifiedDomain.findOne({ domain: domainOfEmail(email) }).lean<SsoVerifiedDomainDoc>();
  const connection = owner ? await SsoConnection.findOne({ orgId: owner.orgId, enabled: true }).lean<SsoConnectionDoc>() : null;
  if (!owner || !connection) throw new AppError('not_found', 'single sign-on is not set up for this domain');
  await SsoLoginState.deleteMany({ expiresAt: { $lte: now } });
  let begun;
  try {
    begun = await deps.oidc.beginLogin(openConnection(connection, deps.secrets), { redirectUri: redirectUriOf(deps.config), loginHint: email });
  } catch (error) {
    if (!(error instanceof OidcRefusal)) throw error;
    throw new AppError('internal_error', 'the identity provider could not be reached', { cause: error });
  }
  const browserBinding = randomBase62(32);
  await SsoLoginState.create({
    stateHash: sha256(begun.checks.state),
    orgId: connection.orgId,
    issuer: connection.issuer,
    nonce: begun.checks.nonce,
    codeVerifier: begun.checks.codeVerifier,
    browserHash: sha256(browserBinding),
    emailHint: email,
    expiresAt: new Date(now.getTime() + LOGIN_STATE_TTL_MS),
    createdAt: now,
  });
  return { authorization_url: begun.url, browserBinding };
}

/**
 * Why a callback was refused: the `reason` is recorded in the audit trail (`sso.refused`) and given to
 * the dashboard (`sso_reason`); the `code` is CONTRACT.md's error code.
 */
export const refusals = {
  state_invalid: { code: 'invalid_request', message: 'this sign-in link is unknown or was already used; start again' },
  state_expired: { code: 'invalid_request', message: 'this sign-in took too long; start again' },
  browser_mismatch: { code: 'invalid_request', message: 'this sign-in was started in another browser; start again here' },
  connection_unavailable: { code: 'forbidden', message: 'single sign-on is no longer set up for this organization' },
  provider_denied: { code: 'unauthenticated', message: 'the identity provider did not sign you in' },
  exchange_failed: { code: 'unauthenticated', message: 'the sign-in could not be completed with the identity provider' },
  email_missing: { code: 'forbidden', message: 'the identity provider did not share an email address' },
  email_unverified: { code: 'forbidden', message: 'the identity provider has not verified this email address' },
  domain_unverified: { code: 'forbidden', message: "this email's domain is not verified for this organization's single sign-on" },
  not_member: { code: 'forbidden', message: 'this account is not a member of the organization; an admin can invite it' },
  not_invited: { code: 'forbidden', message: 'this email has not been invited to the organization; ask an admin for an invite' },
  identity_mismatch: { code: 'forbidden', message: 'this account is linked to a different single sign-on identity' },
} as const satisfies Record<string, { code: ErrorCode; message: string }>;

export type RefusalReason = keyof typeof refusals;

export type CallbackOutcome =
  | { outcome: 'login'; token: string; account: Awaited<ReturnType<typeof openSession>>['account'] }
  | { outcome: 'refused'; reason: RefusalReason; error: AppError };

class Refusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    readonly detail?: string,
  ) {
    super(reason);
  }
}

/**
 * Completes a login from the provider's callback: consumes the state (whatever follows, it cannot be
 * used again), requires the browser that started it, redeems the code, then admits only a verified email
 * of a domain this organisation verified (see `admit`).
 * Every refusal is audited (when the organisation is known) and leaves no account or session behind.
 */
export async function completeLogin(
  input: { state: string | undefined; browserBinding: string | undefined; callbackUrl: URL },
  deps: SsoDeps,
  ip: string | undefined,
  now = new Date(),
): Promise<CallbackOutcome> {
  const refused = (reason: RefusalReason): CallbackOutcome => ({ outcome: 'refused', reason, error: new AppError(refusals[reason].code, refusals[reason].message) });
  const login = input.state ? await SsoLoginState.findOneAndDelete({ stateHash: sha256(input.state) }).lean() : null;
  if (!login) return refused('state_invalid');

  let asserted: OidcIdentity | undefined;
  const audit = (action: 'sso.login' | 'sso.refused', actor: Types.ObjectId | null, details: Record<string, unknown>) =>
    recordAudit({
      orgId: login.orgId,
      actor: actor ? { type: 'user', id: actor } : { type: 'system', id: null },
      action,
      target: actor ? { type: 'user', id: actor } : { type: 'organization', id: login.orgId },
      details: { issuer: login.issuer, ...(asserted && { subject: asserted.subject, email: asserted.email ?? null }), ...details },
      ip,
    });

  try {
    if (login.expiresAt.getTime() <= now.getTime()) throw new Refusal('state_expired');
    if (!input.browserBinding || sha256(input.browserBinding) !== login.browserHash) throw new Refusal('browser_mismatch');
    const connection = await SsoConnection.findOne({ orgId: login.orgId }).lean<SsoConnectionDoc>();
    if (!connection || !connection.enabled || connection.issuer !== login.issuer) throw new Refusal('connection_unavailable');
    try {
      asserted = await deps.oidc.completeLogin(openConnection(connection, deps.secrets), input.callbackUrl, {
        state: input.state!,
        nonce: login.nonce,
        codeVerifier: login.codeVerifier,
      });
    } catch (error) {
      if (!(error instanceof OidcRefusal)) throw error;
      throw new Refusal(error.kind === 'denied' ? 'provider_denied' : 'exchange_failed', error.message);
    }
    const admitted = await admit(login.orgId, asserted, deps.config, now);
    const { token, account } = await openSession(admitted.userId, login.orgId, admitted.role, deps.config, ip, 'sso');
    await audit('sso.login', admitted.userId, { linked: admitted.linked });
    return { outcome: 'login', token, account };
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    await audit('sso.refused', null, { reason: error.reason, ...(error.detail && { detail: error.detail }) });
    return refused(error.reason);
  }
}

/**
 * Who the asserted identity is in the organisation, linking it on first use. Every path needs proof of
 * the address: an email the provider verified (`email_verified` true) in a domain this organisation
 * verified. Then an identity linked before is its user, while a member; an existing account (made with a
 * password or through SSO) is linked only when it is already a member here, as single sign-on never
 * pulls an existing account into an organisation nor accepts an invite for it (the invite's token does);
 * an address without an account gets one only when it has a live invite here (SPEC: a provider is trusted
 * only for accounts that were already invited), and joins with the invite's role (joinThroughSso).
 */
async function admit(orgId: Types.ObjectId, asserted: OidcIdentity, config: Config, now: Date): Promise<{ userId: Types.ObjectId; role: Role; linked: 'existing' | 'new' }> {
  const email = asserted.email?.trim().toLowerCase();
  if (!email) throw new Refusal('email_missing');
  if (!asserted.emailVerified) throw new Refusal('email_unverified');
  if (!(await SsoVerifiedDomain.exists({ domain: domainOfEmail(email), orgId }))) throw new Refusal('domain_unverified');

  // A linked identity is its user and no other, whatever email it asserts now.
  const link = await SsoIdentity.findOne({ issuer: asserted.issuer, subject: asserted.subject }).lean();
  if (link) {
    if (!link.orgId.equals(orgId)) throw new Refusal('identity_mismatch');
    const role = await currentRole(orgId, link.userId);
    if (!role) throw new Refusal('not_member');
    await SsoIdentity.updateOne({ _id: link._id }, { $set: { lastLoginAt: now } });
    return { userId: link.userId, role, linked: 'existing' };
  }

  const newLink = (userId: Types.ObjectId) => SsoIdentity.create({ issuer: asserted.issuer, subject: asserted.subject, userId, orgId, email, createdAt: now, lastLoginAt: now });
  const user = await User.findOne({ email }).lean<UserDoc>();
  if (user) {
    // An account already linked to an identity (of this or another provider) is taken over by no other.
    if (await SsoIdentity.exists({ userId: user._id })) throw new Refusal('identity_mismatch');
    const role = await currentRole(orgId, user._id);
    if (!role) throw new Refusal('not_member');
    await linkOrRefuse(() => newLink(user._id));
    return { userId: user._id, role, linked: 'new' };
  }

  // No account yet: only an invited address gets one, made whole (link, account, membership).
  const invite = await Membership.findOne({ orgId, email, status: 'invited' }, { inviteExpiresAt: 1 }).lean();
  if (!invite || (invite.inviteExpiresAt && invite.inviteExpiresAt.getTime() <= now.getTime())) throw new Refusal('not_invited');
  const userId = new Types.ObjectId();
  await linkOrRefuse(() => newLink(userId));
  try {
    await createSsoUser({ id: userId, email, name: asserted.name ?? '' }, config);
  } catch (error) {
    await SsoIdentity.deleteOne({ issuer: asserted.issuer, subject: asserted.subject, userId });
    // registered by password at this very moment: that account links at its next SSO login
    if (error instanceof AppError && error.code === 'conflict') throw new Refusal('identity_mismatch');
    throw error;
  }
  const membership = await joinThroughSso(orgId, { _id: userId, email }, now);
  return { userId, role: membership.role, linked: 'new' };
}

/** The (issuer, subject) unique index decides a race between two first logins of one identity. */
async function linkOrRefuse(create: () => Promise<unknown>) {
  try {
    await create();
  } catch (error) {
    if (isDuplicateKey(error)) throw new Refusal('identity_mismatch');
    throw error;
  }
}
