import { z } from 'zod';

export const createProjectBody = z.object({
  name: z.string().trim().min(1).max(100),
  platform: z.string().trim().min(1).max(64).optional(),
});

/** Admins change a project's name, platform and the field names its telemetry is scrubbed of. */
export const updateProjectBody = z
  .object({
    name: createProjectBody.shape.name,
    platform: createProjectBody.shape.platform.unwrap().nullable(),
    /** Scrubbed besides the defaults: a field whose name contains one of these (any case) is stored as "[Filtered]". */
    scrub_fields: z.array(z.string().trim().min(2).max(100)).max(50),
  })
  .partial()
  .strict();

export const issueDsnBody = z.object({ label: z.string().trim().min(1).max(100).optional() });
export const replaySwitchBody = z.object({ enabled: z.boolean() });

export const projectJson = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  number: z.number().int(),
  platform: z.string().nullable(),
  session_replay: z.object({ enabled: z.boolean() }),
  /** Field names scrubbed from the project's telemetry besides the defaults. */
  scrub_fields: z.array(z.string()),
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
