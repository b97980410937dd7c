import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { logLevels } from '../../telemetry/records.js';
import { attributeFilters, viewQuery } from '../../views.js';

export const searchLogsQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  service: z.string().max(256).optional(),
  level: z.enum(logLevels).optional(),
  trace_id: z
    .string()
    .regex(/^[0-9a-fA-F]{32}$/, '32 hex characters')
    .transform((id) => id.toLowerCase())
    .optional(),
  attribute: attributeFilters,
  /** Words that must all be in the log's body. */
  q: z.string().max(512).optional(),
});

const attributeValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.null()]);

export const logLineJson = z.object({
  id: z.string(),
  project_id: z.string(),
  timestamp: z.string(),
  service: z.string(),
  level: z.enum(logLevels),
  severity_number: z.number().int(),
  body: z.string(),
  trace_id: z.string().nullable(),
  span_id: z.string().nullable(),
  attributes: z.record(z.string(), attributeValue),
  pattern_id: z.string(),
});

export const logPatternsQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  service: z.string().max(256).optional(),
});

export const logPatternJson = z.object({
  id: z.string(),
  template: z.string(),
  /** Logs of the pattern in the window. */
  count: z.number().int(),
  /** Count per level in the window. */
  levels: z.record(z.string(), z.number().int()),
  services: z.array(z.string()),
  example: z.string().nullable(),
  first_seen: z.string(),
  last_seen: z.string(),
});

export const logSurgesQuery = z.object({ ...viewQuery, service: z.string().max(256).optional() });

export const logSurgeJson = z.object({
  /** A service's whole volume, or one pattern's. */
  kind: z.enum(['service', 'pattern']),
  /** The service; for a pattern, its only service (null when several log it). */
  service: z.string().nullable(),
  services: z.array(z.string()),
  pattern_id: z.string().nullable(),
  /** The pattern's template. */
  pattern: z.string().nullable(),
  /** First seen inside the window. */
  new_pattern: z.boolean(),
  /** Logs in the window, and in the previous window of the same length. */
  observed: z.number().int(),
  baseline: z.number().int(),
  /** observed / max(baseline, 1). */
  ratio: z.number(),
  reason: z.string(),
});

export const logSurgesJson = z.object({ from: z.string(), to: z.string(), data: z.array(logSurgeJson) });
