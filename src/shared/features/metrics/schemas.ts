import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { metricTypes } from '../../telemetry/records.js';
import { attributeFilters, stepQuery, viewQuery } from '../../views.js';

export const metricNamesQuery = z.object({ ...viewQuery, ...pageQuery });

export const metricNameJson = z.object({
  name: z.string(),
  type: z.enum(metricTypes),
  unit: z.string().nullable(),
  attribute_keys: z.array(z.string()),
  project_ids: z.array(z.string()),
  first_seen: z.string(),
  last_seen: z.string(),
});

export const metricAggregations = ['sum', 'avg', 'min', 'max', 'count', 'rate', 'p50', 'p95', 'p99'] as const;

export const metricSeriesQuery = z.object({
  ...viewQuery,
  name: z.string().min(1).max(512),
  service: z.string().max(256).optional(),
  attribute: attributeFilters,
  step: stepQuery,
  aggregation: z.enum(metricAggregations).optional(),
});

export const metricSeriesJson = z.object({
  name: z.string(),
  type: z.enum(metricTypes),
  unit: z.string().nullable(),
  aggregation: z.enum(metricAggregations),
  step: z.number().int(),
  from: z.string(),
  to: z.string(),
  /** One point per step that has data; `t` is the step's start. */
  points: z.array(z.object({ t: z.string(), value: z.number().nullable() })),
});
