import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { spanKinds, spanStatuses } from '../../telemetry/records.js';
import { attributeFilters, viewQuery } from '../../views.js';
import { SPAN_PAGE_SIZE } from './model.js';

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
  /** One page of the trace's spans (at most `limit`): parents before children, siblings by start time. */
  spans: z.array(traceSpanJson),
  /** The next page of spans (pass it as `cursor`), or null when this page holds the trace's last spans. */
  next_cursor: z.string().nullable(),
  /** Issues whose events carry this trace id. */
  issues: z.array(z.string()),
});

/** Spans per answer of one trace, and the cursor of the next page of them. */
export const traceSpansQuery = z.object({
  limit: z.coerce.number().int().min(1).max(SPAN_PAGE_SIZE).default(SPAN_PAGE_SIZE),
  cursor: z.string().max(512).optional(),
});

/** Filters on spans; a trace is listed when one of its spans matches all of them. */
export const listTracesQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  service: z.string().max(256).optional(),
  /** The span's name or its HTTP route. */
  name: z.string().max(512).optional(),
  kind: z.enum(spanKinds).optional(),
  status: z.enum(spanStatuses).optional(),
  min_duration_ms: z.coerce.number().nonnegative().optional(),
  http_status: z.coerce.number().int().min(100).max(599).optional(),
  /** `key:value`, repeatable: the span has that attribute with that value. */
  attribute: attributeFilters,
});

export const traceRowJson = z.object({
  trace_id: z.string(),
  project_id: z.string(),
  root_service: z.string().nullable(),
  root_name: z.string().nullable(),
  start: z.string(),
  duration_ms: z.number(),
  span_count: z.number().int(),
  error_count: z.number().int(),
  services: z.array(z.string()),
});
