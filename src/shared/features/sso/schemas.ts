import { z } from 'zod';
import { httpUrl } from '../../links.js';
import { email } from '../accounts/schemas.js';
import { normalizeDomain } from './domains.js';


export const putConnectionBody = z.object({
  /** The OpenID Connect issuer; its discovery document must answer. */
  issuer: httpUrl,
  client_id: z.string().trim().min(1).max(512),
  /** Required when the connection is created; left out later, the stored secret is kept. */
  client_secret: z.string().min(1).max(4096).optional(),
  enabled: z.boolean().default(true),
});

export const connectionJson = z.object({
  issuer: z.string(),
  client_id: z.string(),
  client_secret_set: z.literal(true),
  enabled: z.boolean(),
  /** Register this at the identity provider as the client's redirect URI. */
  redirect_uri: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const domainBody = z.object({
  domain: z
    .string()
    .max(260)
    .transform((value, ctx) => {
      const domain = normalizeDomain(value);
      if (!domain) ctx.addIssue({ code: 'custom', message: 'must be a domain name such as example.com' });
      return domain ?? z.NEVER;
    }),
});

export const domainJson = z.object({
  domain: z.string(),
  /** The DNS TXT record to publish; verification looks it up. */
  record: z.object({ name: z.string(), type: z.literal('TXT'), value: z.string() }),
  verified: z.boolean(),
  verified_at: z.string().nullable(),
  created_at: z.string(),
});

export const startBody = z.object({ email });
export const startJson = z.object({ authorization_url: z.string() });

/**
 * What a provider may put on the callback URL. Routes refuse unknown query parameters, so the extras
 * providers add (Keycloak's session_state, Google's authuser/hd/prompt/scope, Entra's client_info) are listed.
 */
const optional = z.string().max(4096).optional();
export const callbackQuery = z.object({
  code: optional,
  state: optional,
  iss: optional,
  error: optional,
  error_description: optional,
  error_uri: optional,
  session_state: optional,
  scope: optional,
  authuser: optional,
  hd: optional,
  prompt: optional,
  client_info: optional,
});
export const callbackJson = z.object({ redirect_to: z.string() });
