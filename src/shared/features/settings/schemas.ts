import { z } from 'zod';
import { ORGANIZATION_SLUG } from '../accounts/organization-slug.js';

const thresholdsJson = z.object({
  /** Service error rate (0–1); default 0.05. */
  error_rate: z.number().gt(0).max(1),
  /** Service p95 latency in milliseconds; default 1000. */
  p95_ms: z.number().positive(),
  /** OTLP gauges by metric name, each with the value it must not reach. */
  gauges: z.array(z.object({ name: z.string().min(1).max(512), threshold: z.number() })).max(50),
});

export const settingsJson = z.object({
  organization: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
  /** Days telemetry is kept before the cleanup job removes it. */
  retention_days: z.number().int(),
  /** What GET /v1/services/approaching watches. */
  thresholds: thresholdsJson,
});

export const settingsPatchBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    /** Lower-case letters, digits, - and _, not only digits; unique among organisations (409 when taken). */
    slug: z.string().regex(ORGANIZATION_SLUG, 'lower-case letters, digits, - and _ (up to 50), starting with a letter or digit, not only digits').optional(),
    retention_days: z.number().int().min(1).max(365).optional(),
    /** Fields left out keep their value; `gauges` replaces the list. */
    thresholds: thresholdsJson.partial().strict().optional(),
  })
  .refine((body) => Object.keys(body).length > 0, 'nothing to change');
