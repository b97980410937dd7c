import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { viewQuery } from '../../views.js';
import { anomalyMetrics } from './model.js';

export const anomaliesQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  service: z.string().max(256).optional(),
  metric: z.enum(anomalyMetrics).optional(),
  /** open: not ended yet; closed: ended. */
  status: z.enum(['open', 'closed']).optional(),
});

export const anomalyJson = z.object({
  id: z.string(),
  project_id: z.string(),
  service: z.string(),
  metric: z.enum(anomalyMetrics),
  /** The latest anomalous window's value (requests/min, a 0–1 rate, milliseconds, logs/min). */
  observed: z.number(),
  /** The median of the comparable earlier windows. */
  baseline: z.number(),
  band: z.object({ low: z.number(), high: z.number() }),
  /** Robust deviations from the baseline: (observed − baseline) / spread; negative for a drop. */
  score: z.number(),
  peak_score: z.number(),
  started_at: z.string(),
  /** Null while the anomaly is open. */
  ended_at: z.string().nullable(),
  reason: z.string(),
});
