import { z } from 'zod';
import { repeatedParameter } from '../../views.js';
import { outcomeCategories, outcomeReasons } from '../../telemetry/records.js';
import { usageCategories } from './plan.js';

export const usageQuery = z.object({
  /** Only these projects (repeatable); the totals then cover them alone. */
  project: repeatedParameter,
});

const category = z.enum(usageCategories);

/** Items of accepted requests that could not be stored, by what they would have counted as and why; never in `used`. */
const dropped = z.array(z.object({ category: z.enum(outcomeCategories), reason: z.enum(outcomeReasons), quantity: z.number().int() }));

export const usageJson = z.object({
  /** The current calendar month in UTC: `start` inclusive, `end` exclusive. */
  period: z.object({ start: z.string(), end: z.string() }),
  categories: z.array(
    z.object({
      category,
      used: z.number().int(),
      /** The plan figure from `PLAN_INCLUDED`; null when the configuration gives none. */
      included: z.number().int().nullable(),
      /** used / included × 100, two decimals; may pass 100. Null without a (non-zero) figure. */
      percent_used: z.number().nullable(),
    }),
  ),
  projects: z.array(
    z.object({
      project_id: z.string(),
      /** Null for a project that no longer exists but sent telemetry this period. */
      name: z.string().nullable(),
      categories: z.array(z.object({ category, used: z.number().int() })),
      dropped,
    }),
  ),
  /**
   * This period's dropped items: `invalid` (not valid for their type), `too_large` (over their size
   * limit), `spool_expired` (kept in ingest's disk spool past INGEST_SPOOL_MAX_AGE_HOURS).
   */
  dropped,
  /** What the figures are, and that they never limit anything. */
  caveat: z.string(),
});
