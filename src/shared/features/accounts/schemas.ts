import { z } from 'zod';
import { roles } from '../../principal.js';

/** Trimmed and lower-cased before validation, so one address is one account however it is typed. */
export const email = z.string().trim().toLowerCase().pipe(z.email().max(254)).meta({ format: 'email' });
const password = z.string().min(8, 'at least 8 characters').max(256);
/** A password being checked, not chosen: any length the form can send. */
const givenPassword = z.string().min(1).max(256);
/** A mailed or shown token (invites, password resets): base62, 43 characters for 256 bits. */
const token = z.string().regex(/^[0-9A-Za-z]{20,100}$/);

export const registerBody = z.object({
  email,
  password,
  name: z.string().trim().max(200).optional(),
  organization: z.string().trim().min(1).max(200).optional(),
  /** The invite's token: joins the inviting organisation with the invited role instead of creating one. */
  invite_token: token.optional(),
});

export const loginBody = z.object({ email, password: givenPassword });

export const passwordChangeBody = z.object({ current_password: givenPassword, new_password: password });
export const passwordResetRequestBody = z.object({ email });
export const passwordResetBody = z.object({ password });
export const tokenParams = z.object({ token });

export const inviteBody = z.object({ email, role: z.enum(roles).default('member') });
export const roleBody = z.object({ role: z.enum(roles) });

export const userJson = z.object({ id: z.string(), email: z.string(), name: z.string(), created_at: z.string() });
export const organizationJson = z.object({
  id: z.string(),
  name: z.string(),
  /** What release tooling (sentry-cli's `SENTRY_ORG`) names the organisation by under `/api/0/`. */
  slug: z.string(),
  created_at: z.string(),
});
export const roleJson = z.enum(roles);

export const accountJson = z.object({ user: userJson, organization: organizationJson, role: roleJson });

export const memberJson = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  user_id: z.string().nullable(),
  role: roleJson,
  status: z.enum(['active', 'invited']),
  created_at: z.string(),
});

/** The answer to an invite: the only time its token is shown. */
export const inviteJson = memberJson.extend({
  invite_token: z.string(),
  /** The dashboard's page for this invite: `${DASHBOARD_ORIGIN}/invites/{token}`. */
  invite_url: z.string(),
  /** True when the URL was mailed to the address (SMTP_URL set and the mail server took it). */
  invite_mailed: z.boolean(),
});
