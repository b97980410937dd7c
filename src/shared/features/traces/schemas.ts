import { z } from 'zod';

const attributeValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.unknown()), z.null()]);

export const traceSpanJson = z.object({
  span_id: z.string(),
  parent_span_id: z.string().nullable(),
  project_id: z.string(),
  service: z.string(),
  name: z.string(),
  kind: z.string(),
  start: z.string(),
  end: z.string(),
  duration_ms: z.number(),
  status: z.string(),
  status_message: z.string().nullable(),
  /** Distance from the root (0 for a span whose parent is not in the trace). */
  depth: z.number().int(),
  attributes: z.record(z.string(), attributeValue),
  events: z.array(z.object({ name: z.string(), time: z.string(), attributes: z.record(z.string(), attributeValue) })),
});

export const traceDetailJson = z.object({
  trace_id: z.string(),
  start: z.string(),
  duration_ms: z.number(),
  span_count: z.number().int(),
  error_count: z.number().int(),
  services: z.array(z.string()),
  /** Parents before children, siblings by start time. */
  spans: z.array(traceSpanJson),
  /** Issues whose events carry this trace id. */
  issues: z.array(z.string()),
});
