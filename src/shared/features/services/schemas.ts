import { z } from 'zod';
import { stepQuery, viewQuery } from '../../views.js';
import { edgeKinds, nodeTypes } from './model.js';

export const servicesQuery = z.object(viewQuery);

const healthReason = z.object({
  /** Which rule fired: a fixed threshold, or the service's own baseline from the previous window. */
  rule: z.enum(['error_rate_threshold', 'error_rate_baseline', 'p95_threshold', 'p95_baseline']),
  metric: z.enum(['error_rate', 'p95_ms']),
  observed: z.number(),
  threshold: z.number(),
  /** For baseline rules: the previous window's value the threshold was derived from. */
  baseline: z.number().nullable(),
  status: z.enum(['degraded', 'critical']),
});

export const serviceJson = z.object({
  name: z.string(),
  project_ids: z.array(z.string()),
  requests: z.number().int(),
  errors: z.number().int(),
  error_rate: z.number(),
  p50_ms: z.number().nullable(),
  p95_ms: z.number().nullable(),
  p99_ms: z.number().nullable(),
  throughput_per_min: z.number(),
  health: z.object({ status: z.enum(['healthy', 'degraded', 'critical']), reasons: z.array(healthReason) }),
});

export const servicesJson = z.object({ from: z.string(), to: z.string(), data: z.array(serviceJson) });

const nodeJson = z.object({ id: z.string(), name: z.string(), type: z.enum(nodeTypes) });

const edgeStats = {
  calls: z.number().int(),
  errors: z.number().int(),
  error_rate: z.number(),
  p95_ms: z.number().nullable(),
};

export const serviceMapJson = z.object({
  from: z.string(),
  to: z.string(),
  nodes: z.array(nodeJson),
  edges: z.array(z.object({ source: z.string(), target: z.string(), kind: z.enum(edgeKinds), ...edgeStats })),
});

export const dependenciesJson = z.object({
  from: z.string(),
  to: z.string(),
  data: z.array(
    z.object({
      caller: z.string(),
      caller_type: z.enum(nodeTypes),
      callee: z.string(),
      callee_type: z.enum(nodeTypes),
      kind: z.enum(edgeKinds),
      ...edgeStats,
    }),
  ),
});

const ranked = z.array(z.object({ node: z.string(), count: z.number().int() }));

export const structureJson = z.object({
  from: z.string(),
  to: z.string(),
  /** Node ids (`type:name`), as in the service map. */
  entry_points: z.array(z.string()),
  leaves: z.array(z.string()),
  cycles: z.array(z.array(z.string())),
  single_points_of_failure: z.array(z.object({ node: z.string(), cut_pairs: z.number().int() })),
  fan_in: ranked,
  fan_out: ranked,
  longest_chain: z.array(z.string()),
});

export const trafficQuery = z.object({ ...viewQuery, step: stepQuery });

export const trafficJson = z.object({
  from: z.string(),
  to: z.string(),
  /** Seconds per point. */
  step: z.number().int(),
  /** One series per project, or per service when the query names one project; busiest first. */
  series: z.array(
    z.object({
      project_id: z.string(),
      service: z.string().optional(),
      requests: z.number().int(),
      points: z.array(z.object({ t: z.string(), requests: z.number().int(), errors: z.number().int() })),
    }),
  ),
});

export const approachingQuery = z.object({
  ...viewQuery,
  step: stepQuery,
  /** Only series whose line reaches the threshold within this many hours after the window; default a week. */
  horizon_hours: z.coerce.number().positive().max(8_760).default(168),
});

export const approachingJson = z.object({
  from: z.string(),
  to: z.string(),
  /** Seconds per point. */
  step: z.number().int(),
  /** Soonest first. */
  data: z.array(
    z.object({
      /** A service's error rate or p95, or a gauge configured in the settings. */
      kind: z.enum(['service', 'gauge']),
      /** `error_rate`, `p95_ms`, or the gauge's name. */
      metric: z.string(),
      service: z.string(),
      /** The latest point's value. */
      current: z.number(),
      threshold: z.number(),
      /** The least-squares slope, in the metric's unit per hour. */
      slope_per_hour: z.number(),
      /** When the fitted line reaches the threshold. */
      eta: z.string(),
      /** The points the line was fitted on. */
      points: z.array(z.object({ t: z.string(), value: z.number() })),
    }),
  ),
});
