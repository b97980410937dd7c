import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

/** An organisation's OpenID Connect provider; one per organisation. */
const connectionSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  /** The issuer identifier as its discovery document declares it (what ID tokens carry in `iss`). */
  issuer: { type: String, required: true },
  clientId: { type: String, required: true },
  /** The client secret, sealed with the configured key (never answered, never logged). */
  clientSecretSealed: { type: String, required: true },
  enabled: { type: Boolean, required: true },
  createdAt: { type: Date, required: true },
  updatedAt: { type: Date, required: true },
});
// the settings routes and every login find the organisation's connection.
connectionSchema.index({ orgId: 1 }, { unique: true });

/** An email domain an organisation claimed, with the TXT value that proves it. */
const domainClaimSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  domain: { type: String, required: true },
  /** `sluice-verification=<token>` is what the TXT record must say. */
  token: { type: String, required: true },
  createdAt: { type: Date, required: true },
});
// an organisation's claims (listed, verified, removed by domain); one claim per domain per organisation.
domainClaimSchema.index({ orgId: 1, domain: 1 }, { unique: true });

/**
 * A proven domain: one organisation per domain, enforced by the unique index, so two organisations
 * verifying at once cannot both win. Kept apart from the claims, which several organisations may hold.
 */
const verifiedDomainSchema = new Schema({
  domain: { type: String, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  verifiedAt: { type: Date, required: true },
});
// a login start finds the organisation of an email's domain; a claim or verification checks for another owner.
verifiedDomainSchema.index({ domain: 1 }, { unique: true });
// an organisation's verified domains (listing its claims, removing the connection).
verifiedDomainSchema.index({ orgId: 1 });

/** A login in flight: single-use, consumed by the callback, useless after `expiresAt`. */
const loginStateSchema = new Schema({
  /** SHA-256 of the `state` parameter; the callback finds (and deletes) the login by it. */
  stateHash: { type: String, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  issuer: { type: String, required: true },
  nonce: { type: String, required: true },
  codeVerifier: { type: String, required: true },
  /** SHA-256 of the value in the browser's login cookie: the callback must come from the browser that started it. */
  browserHash: { type: String, required: true },
  /** The email the login was started for (a hint to the provider; the provider's answer decides). */
  emailHint: { type: String, required: true },
  expiresAt: { type: Date, required: true },
  createdAt: { type: Date, required: true },
});
// the callback consumes its login by state.
loginStateSchema.index({ stateHash: 1 }, { unique: true });

/** A provider identity linked to an account: later logins with this (issuer, subject) are this user and no other. */
const identitySchema = new Schema({
  issuer: { type: String, required: true },
  subject: { type: String, required: true },
  userId: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  /** The email asserted when the link was made (for the audit trail; the link does not follow it). */
  email: { type: String, required: true },
  createdAt: { type: Date, required: true },
  lastLoginAt: { type: Date, required: true },
});
// each login resolves its (issuer, subject); one account per provider identity.
identitySchema.index({ issuer: 1, subject: 1 }, { unique: true });
// whether an account already has a linked identity (another provider may not take it over).
identitySchema.index({ userId: 1 });
// removing an organisation's links with its connection.
identitySchema.index({ orgId: 1 });

export const SsoConnection = model('SsoConnection', connectionSchema, 'sso_connections');
export const SsoDomainClaim = model('SsoDomainClaim', domainClaimSchema, 'sso_domain_claims');
export const SsoVerifiedDomain = model('SsoVerifiedDomain', verifiedDomainSchema, 'sso_verified_domains');
export const SsoLoginState = model('SsoLoginState', loginStateSchema, 'sso_login_states');
export const SsoIdentity = model('SsoIdentity', identitySchema, 'sso_identities');

export type SsoConnectionDoc = InferSchemaType<typeof connectionSchema> & { _id: Types.ObjectId };
export type SsoDomainClaimDoc = InferSchemaType<typeof domainClaimSchema> & { _id: Types.ObjectId };
export type SsoVerifiedDomainDoc = InferSchemaType<typeof verifiedDomainSchema> & { _id: Types.ObjectId };
export type SsoLoginStateDoc = InferSchemaType<typeof loginStateSchema> & { _id: Types.ObjectId };
export type SsoIdentityDoc = InferSchemaType<typeof identitySchema> & { _id: Types.ObjectId };
