import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { viewQuery } from '../../views.js';

export const databaseQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  service: z.string().max(256).optional(),
  /** `db.system`, e.g. postgresql, mysql, redis, mongodb. */
  system: z.string().max(128).optional(),
  /** query-patterns only: rank by time spent (default) or by calls. */
  sort: z.enum(['total_ms', 'calls']).default('total_ms'),
});

const queryStats = {
  system: z.string(),
  calls: z.number().int(),
  errors: z.number().int(),
  total_ms: z.number(),
  mean_ms: z.number(),
  services: z.array(z.string()),
  project_ids: z.array(z.string()),
};

export const slowQueryJson = z.object({
  /** The normalised statement. */
  statement: z.string(),
  ...queryStats,
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  max_ms: z.number(),
  /** Traces of the slowest calls' minutes, slowest first. */
  example_trace_ids: z.array(z.string()),
});

export const queryPatternJson = z.object({ pattern: z.string(), ...queryStats });

export const slowQueriesJson = z.object({ data: z.array(slowQueryJson), next_cursor: z.string().nullable() });
export const queryPatternsJson = z.object({ data: z.array(queryPatternJson), next_cursor: z.string().nullable() });
