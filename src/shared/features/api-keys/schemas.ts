import { z } from 'zod';
import { roles } from '../../principal.js';

export const createApiKeyBody = z.object({
  name: z.string().trim().min(1).max(100),
  /** Defaults to the creator's own role; never higher. */
  role: z.enum(roles).optional(),
});

export const apiKeyJson = z.object({
  id: z.string(),
  name: z.string(),
  role: z.enum(roles),
  prefix: z.string(),
  created_by: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});

export const createdApiKeyJson = apiKeyJson.extend({
  /** Shown in this response only. */
  secret: z.string(),
});
