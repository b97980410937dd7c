import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { roles } from '../../principal.js';

const userSchema = new Schema(
  {
    email: { type: String, required: true },
    name: { type: String, default: '' },
    passwordHash: { type: String, required: true },
  },
  { timestamps: true },
);
// login and registration look a user up by email; one account per address.
userSchema.index({ email: 1 }, { unique: true });

const organizationSchema = new Schema(
  {
    name: { type: String, required: true },
    /** The URL name release tooling addresses the organisation by (`SENTRY_ORG`); unique through `organization_slugs`. */
    slug: { type: String },
    retentionDays: { type: Number, default: 30, min: 1, max: 365 },
    /** What /v1/services/approaching watches: service error rate and p95, and gauges by name. */
    thresholds: {
      errorRate: { type: Number, default: 0.05 },
      p95Ms: { type: Number, default: 1000 },
      gauges: { type: [{ _id: false, name: String, threshold: Number }], default: [] },
    },
  },
  { timestamps: true },
);

/**
 * One document per organisation slug in use, the slug as its `_id`: what keeps slugs unique (an insert of a
 * taken slug fails on `_id`), with no unique index on organisations that those made before slugs would break.
 */
const organizationSlugSchema = new Schema({
  _id: { type: String, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
});
// an organisation's slugs, removed when it takes a new one.
organizationSlugSchema.index({ orgId: 1 });

const membershipSchema = new Schema(
  {
    orgId: { type: Schema.Types.ObjectId, required: true },
    email: { type: String, required: true },
    /** Unset while the membership is a pending invite. */
    userId: { type: Schema.Types.ObjectId, default: null },
    role: { type: String, enum: roles, required: true },
    status: { type: String, enum: ['active', 'invited'], required: true },
    invitedBy: { type: Schema.Types.ObjectId, default: null },
    /** SHA-256 of the invite token (the token itself is shown once, in the invite's answer); unset once accepted. */
    inviteTokenHash: { type: String },
    inviteExpiresAt: { type: Date },
    /** When the membership became active: password login signs in to the organisation joined last. */
    joinedAt: { type: Date },
  },
  { timestamps: true },
);
// the member list (paged by creation) and the one-membership-per-email-per-organisation rule.
membershipSchema.index({ orgId: 1, email: 1 }, { unique: true });
membershipSchema.index({ orgId: 1, createdAt: 1, _id: 1 });
// resolving a signed-in user's organisation and role.
membershipSchema.index({ userId: 1 });
// an invite found by its token at registration or acceptance.
membershipSchema.index({ inviteTokenHash: 1 });

const sessionSchema = new Schema({
  /** SHA-256 of the cookie value; the value itself is never stored. */
  tokenHash: { type: String, required: true },
  userId: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  expiresAt: { type: Date, required: true },
  createdAt: { type: Date, default: () => new Date() },
});
// every cookie-authenticated request resolves its session by token hash.
sessionSchema.index({ tokenHash: 1 }, { unique: true });
// revoking a removed member's sessions, and all of a user's at a password change or reset.
sessionSchema.index({ userId: 1 });

/** A mailed password-reset link: single-use (deleted when used), valid for an hour. */
const passwordResetSchema = new Schema({
  /** SHA-256 of the link's token; the token itself is only in the mail. */
  tokenHash: { type: String, required: true },
  userId: { type: Schema.Types.ObjectId, required: true },
  expiresAt: { type: Date, required: true },
});
// the reset link resolves its token by hash.
passwordResetSchema.index({ tokenHash: 1 }, { unique: true });
// a reset voids every other link of the same user.
passwordResetSchema.index({ userId: 1 });

export const User = model('User', userSchema);
export const Organization = model('Organization', organizationSchema);
export const OrganizationSlug = model('OrganizationSlug', organizationSlugSchema, 'organization_slugs');
export const Membership = model('Membership', membershipSchema);
export const Session = model('Session', sessionSchema);
export const PasswordReset = model('PasswordReset', passwordResetSchema);

export type UserDoc = InferSchemaType<typeof userSchema> & { _id: Types.ObjectId; createdAt: Date };
export type OrganizationDoc = InferSchemaType<typeof organizationSchema> & { _id: Types.ObjectId; createdAt: Date };
export type MembershipDoc = InferSchemaType<typeof membershipSchema> & { _id: Types.ObjectId; createdAt: Date };
