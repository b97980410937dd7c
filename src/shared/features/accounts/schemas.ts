import { z } from 'zod';
import { roles } from '../../principal.js';

/** Trimmed and lower-cased before validation, so one address is one account however it is typed. */
export const email = z.string().trim().toLowerCase().pipe(z.email().max(254)).meta({ format: 'email' });
const password = z.string().min(8, 'at least 8 characters').max(256);

export const registerBody = z.object({
  email,
  password,
  name: z.string().trim().max(200).optional(),
  organization: z.string().trim().min(1).max(200).optional(),
});

export const loginBody = z.object({ email, password: z.string().min(1).max(256) });

export const inviteBody = z.object({ email, role: z.enum(roles).default('member') });
export const roleBody = z.object({ role: z.enum(roles) });

export const userJson = z.object({ id: z.string(), email: z.string(), name: z.string(), created_at: z.string() });
export const organizationJson = z.object({ id: z.string(), name: z.string(), created_at: z.string() });
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
