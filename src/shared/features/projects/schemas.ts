import { z } from 'zod';

export const createProjectBody = z.object({
  name: z.string().trim().min(1).max(100),
  platform: z.string().trim().min(1).max(64).optional(),
});

export const issueDsnBody = z.object({ label: z.string().trim().min(1).max(100).optional() });
export const replaySwitchBody = z.object({ enabled: z.boolean() });

export const projectJson = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  number: z.number().int(),
  platform: z.string().nullable(),
  session_replay: z.object({ enabled: z.boolean() }),
  created_at: z.string(),
});

export const dsnJson = z.object({
  id: z.string(),
  project_id: z.string(),
  label: z.string(),
  public_key: z.string(),
  /** The string to paste into a Sentry SDK. */
  dsn: z.string(),
  /** The OTLP/HTTP base URL and the header that carries the key. */
  otlp: z.object({ endpoint: z.string(), headers: z.record(z.string(), z.string()) }),
  created_at: z.string(),
});
