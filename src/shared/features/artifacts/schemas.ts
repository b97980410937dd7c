import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { artifactKinds } from './model.js';

/** Upload limit of CONTRACT.md: measured as the body streams in, after decompression. */
export const ARTIFACT_MAX_BYTES = 50 * 1024 * 1024;

const DEBUG_ID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}(?:-?[0-9a-f]{1,8})?$/i;

/** A debug id in the lower-case dashed form SDKs put into `debug_meta` (a trailing age, if any, dropped). */
export function normalizeDebugId(value: string): string | undefined {
  const trimmed = value.trim();
  if (!DEBUG_ID.test(trimmed)) return undefined;
  const hex = trimmed.replace(/-/g, '').toLowerCase().slice(0, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const debugId = z
  .string()
  .refine((value) => normalizeDebugId(value) !== undefined, 'a debug id is a UUID')
  .transform((value) => normalizeDebugId(value)!);

/** The fields of an upload: query parameters of a raw body, or form fields of a multipart one. */
export const artifactFields = z.object({
  /** Where the browser loads the file from; `url` is the same thing under Sentry's other name. */
  name: z.string().trim().min(1).max(2048).optional(),
  url: z.string().trim().min(1).max(2048).optional(),
  release: z.string().trim().min(1).max(256).optional(),
  dist: z.string().trim().min(1).max(64).optional(),
  debug_id: debugId.optional(),
});
export type ArtifactFields = z.infer<typeof artifactFields>;

export const listArtifactsQuery = z.object({
  ...pageQuery,
  release: z.string().max(256).optional(),
  dist: z.string().max(64).optional(),
  name: z.string().max(2048).optional(),
  debug_id: debugId.optional(),
});

export const artifactJson = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string().nullable(),
  release: z.string().nullable(),
  dist: z.string().nullable(),
  debug_id: z.string().nullable(),
  kind: z.enum(artifactKinds),
  size: z.number().int(),
  sha256: z.string(),
  content_type: z.string().nullable(),
  created_at: z.string(),
});
