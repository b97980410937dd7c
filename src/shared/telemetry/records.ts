import { z } from 'zod';

/**
 * A text as the store can hold it: PostgreSQL's jsonb (under FerretDB) refuses U+0000 in any text and
 * BSON in any key, so each one is kept as U+FFFD, which shows where something was.
 */
export const storableText = (text: string) => (text.includes('\0') ? text.replaceAll('\0', '\uFFFD') : text);

/**
 * The internal telemetry records that every ingest format (OTLP, Sentry) is normalised into before it
 * is batched onto a queue. They must survive a JSON round trip through Redis: numbers are finite, there are
 * no bigints, and an optional field left undefined simply disappears.
 */

/** Where a record came from; the worker treats both alike, views may show it. */
export const telemetrySource = z.enum(['otlp', 'sentry']);

/** OTel attribute values: primitives or homogeneous arrays, which may hold nulls (the OTel spec keeps them). */
export const attributeValue = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])),
]);
/** Flat by design: nested key/value lists arrive flattened into dotted keys. */
export const attributes = z.record(z.string(), attributeValue);

export const traceId = z.string().regex(/^[0-9a-f]{32}$/, '32 lowercase hex characters');
export const spanId = z.string().regex(/^[0-9a-f]{16}$/, '16 lowercase hex characters');

export const spanKinds = ['internal', 'server', 'client', 'producer', 'consumer'] as const;
export const spanStatuses = ['unset', 'ok', 'error'] as const;
export const spanCategories = ['http', 'db', 'messaging', 'other'] as const;

export const spanEvent = z.object({ name: z.string(), timeMs: z.number(), attributes });
export const spanLink = z.object({ traceId, spanId, attributes });

export const spanRecord = z.object({
  traceId,
  spanId,
  parentSpanId: spanId.nullable(),
  name: z.string(),
  kind: z.enum(spanKinds),
  /** `service.name` of the resource, `unknown_service` when absent. */
  service: z.string().min(1),
  serviceVersion: z.string().optional(),
  environment: z.string().optional(),
  release: z.string().optional(),
  startMs: z.number(),
  endMs: z.number(),
  durationMs: z.number().nonnegative(),
  status: z.enum(spanStatuses),
  statusMessage: z.string().optional(),
  attributes,
  /** Exceptions are events named `exception` carrying `exception.type`, `exception.message`, `exception.stacktrace`. */
  events: z.array(spanEvent),
  links: z.array(spanLink),
  // Semantic-convention values read once at ingest (current name, then deprecated) so views need not know both.
  http: z
    .object({
      method: z.string().optional(),
      route: z.string().optional(),
      statusCode: z.number().int().optional(),
      path: z.string().optional(),
    })
    .optional(),
  db: z
    .object({
      system: z.string().optional(),
      statement: z.string().optional(),
      operation: z.string().optional(),
      collection: z.string().optional(),
      namespace: z.string().optional(),
      serverAddress: z.string().optional(),
    })
    .optional(),
  messaging: z
    .object({ system: z.string().optional(), destination: z.string().optional(), operation: z.string().optional() })
    .optional(),
  /** The remote service a client/producer span calls, when the span names it. */
  peerService: z.string().optional(),
  /** The local root of a trace in its service (Sentry's "segment"/transaction): where a service's request starts. */
  isSegment: z.boolean(),
  category: z.enum(spanCategories),
  source: telemetrySource,
});

export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;

/** The OTel severity ranges: each level spans four numbers, trace starting at 1. */
export function logLevelOf(severityNumber: number): LogLevel {
  return logLevels[Math.min(Math.max(Math.ceil(severityNumber / 4), 1), logLevels.length) - 1] ?? 'info';
}

export const logRecord = z.object({
  timeMs: z.number(),
  observedTimeMs: z.number().optional(),
  /** OTel severity number: 1–4 trace, 5–8 debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal. */
  severityNumber: z.number().int().min(1).max(24),
  level: z.enum(logLevels),
  /** Non-string bodies are JSON-stringified. */
  body: z.string(),
  attributes,
  traceId: traceId.optional(),
  spanId: spanId.optional(),
  service: z.string().min(1),
  environment: z.string().optional(),
  release: z.string().optional(),
  /** `sentry.message.template`: the parameterised message, a ready-made pattern key. */
  template: z.string().optional(),
  source: telemetrySource,
});

/** OTLP metric types, plus the Sentry metric types that have no OTLP twin. */
export const metricTypes = ['gauge', 'sum', 'histogram', 'exponential_histogram', 'summary', 'counter', 'distribution'] as const;

const exponentialBuckets = z.object({ offset: z.number().int(), bucketCounts: z.array(z.number().nonnegative()) });

export const metricPoint = z.object({
  name: z.string().min(1),
  unit: z.string().optional(),
  type: z.enum(metricTypes),
  /** Cumulative points are turned into deltas per series by the worker, which keeps the previous value. */
  temporality: z.enum(['delta', 'cumulative']).optional(),
  isMonotonic: z.boolean().optional(),
  timeMs: z.number(),
  /**
   * The time as OTLP sent it, epoch nanoseconds in decimal: a cumulative counter's points can be
   * microseconds apart, and which one is later decides its deltas (stored times are whole milliseconds).
   */
  timeUnixNano: z.string().regex(/^\d{1,20}$/).optional(),
  startTimeMs: z.number().optional(),
  /** The number of gauge, sum and counter points. */
  value: z.number().optional(),
  // Distribution points (histogram, exponential histogram, summary, distribution).
  count: z.number().nonnegative().optional(),
  sum: z.number().optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  /** Explicit-bounds histogram: `bucketCounts.length === explicitBounds.length + 1`. */
  bucketCounts: z.array(z.number().nonnegative()).optional(),
  explicitBounds: z.array(z.number()).optional(),
  exponential: z
    .object({
      scale: z.number().int(),
      zeroCount: z.number().nonnegative(),
      positive: exponentialBuckets,
      negative: exponentialBuckets,
    })
    .optional(),
  quantiles: z.array(z.object({ quantile: z.number(), value: z.number() })).optional(),
  attributes,
  service: z.string().min(1),
  environment: z.string().optional(),
  release: z.string().optional(),
  source: telemetrySource,
});

export type AttributeValue = z.infer<typeof attributeValue>;
export type Attributes = z.infer<typeof attributes>;
export type SpanKind = (typeof spanKinds)[number];
export type SpanStatus = (typeof spanStatuses)[number];
export type SpanCategory = (typeof spanCategories)[number];
export type SpanLink = z.infer<typeof spanLink>;
export type SpanRecord = z.infer<typeof spanRecord>;
export type LogLevel = (typeof logLevels)[number];
export type LogRecord = z.infer<typeof logRecord>;
export type MetricPoint = z.infer<typeof metricPoint>;

// Records that only Sentry SDKs send (and POST /v1/feedback).

const hex32 = z.string().regex(/^[0-9a-f]{32}$/, '32 lowercase hex characters');

/**
 * An error or message event. The worker groups it, so the event travels whole (as the SDK sent it,
 * at most 1 MiB); ingest only settles its id and time.
 */
export const errorEventRecord = z.object({
  eventId: hex32,
  timeMs: z.number(),
  event: z.record(z.string(), z.unknown()),
});

export const checkInStatuses = ['in_progress', 'ok', 'error'] as const;

export const checkInRecord = z.object({
  checkInId: hex32,
  monitorSlug: z.string().min(1).max(128),
  status: z.enum(checkInStatuses),
  durationMs: z.number().nonnegative().optional(),
  environment: z.string().optional(),
  /** Sentry's `monitor_config` (schedule, margins, timezone), kept as sent for the monitor logic. */
  monitorConfig: z.record(z.string(), z.unknown()).optional(),
  timeMs: z.number(),
});

/**
 * Release health in Sentry's aggregate form. A single `session` update becomes one of these: it counts
 * as started when `init` is set, and in its outcome once it reaches a final status.
 */
export const sessionRecord = z.object({
  release: z.string().min(1),
  environment: z.string().optional(),
  startedMs: z.number(),
  started: z.number().int().nonnegative(),
  exited: z.number().int().nonnegative(),
  errored: z.number().int().nonnegative(),
  crashed: z.number().int().nonnegative(),
  abnormal: z.number().int().nonnegative(),
});

export const feedbackSources = ['feedback', 'user_report', 'api'] as const;

export const feedbackRecord = z.object({
  /** The feedback's own id: the event id of a `feedback` item, or generated. Stored once. */
  feedbackId: hex32,
  message: z.string().min(1).max(4096),
  contactEmail: z.string().max(254).optional(),
  name: z.string().max(256).optional(),
  url: z.string().max(2048).optional(),
  associatedEventId: hex32.optional(),
  replayId: hex32.optional(),
  environment: z.string().optional(),
  release: z.string().optional(),
  source: z.enum(feedbackSources),
  timeMs: z.number(),
});

export const replayEventRecord = z.object({
  replayId: hex32,
  segmentId: z.number().int().nonnegative(),
  replayType: z.string().optional(),
  startMs: z.number().optional(),
  timeMs: z.number(),
  urls: z.array(z.string()),
  traceIds: z.array(z.string()),
  errorIds: z.array(z.string()),
  user: z.object({ id: z.string().optional(), email: z.string().optional(), username: z.string().optional(), ipAddress: z.string().optional() }).optional(),
  release: z.string().optional(),
  environment: z.string().optional(),
});

/** One rrweb segment: the bytes after the `{"segment_id":N}` line, still compressed if they came so. */
export const replayRecordingRecord = z.object({
  replayId: hex32,
  segmentId: z.number().int().nonnegative(),
  payloadBase64: z.string(),
  timeMs: z.number(),
});

export type ErrorEventRecord = z.infer<typeof errorEventRecord>;
export type CheckInRecord = z.infer<typeof checkInRecord>;
export type SessionRecord = z.infer<typeof sessionRecord>;
export type FeedbackRecord = z.infer<typeof feedbackRecord>;
export type ReplayEventRecord = z.infer<typeof replayEventRecord>;
export type ReplayRecordingRecord = z.infer<typeof replayRecordingRecord>;

/** What a dropped item would have counted as: a usage category, or sessions (release health). */
export const outcomeCategories = ['errors', 'spans', 'logs', 'metrics', 'replays', 'checkins', 'feedback', 'sessions'] as const;
/** Why: not valid for its type, over its size limit, or spooled longer than INGEST_SPOOL_MAX_AGE_HOURS. */
export const outcomeReasons = ['invalid', 'too_large', 'spool_expired'] as const;

/** Items of an accepted request that could not be stored, counted (Relay's outcomes) for the usage figures. */
const outcomeRecord = z.object({
  category: z.enum(outcomeCategories),
  reason: z.enum(outcomeReasons),
  quantity: z.number().int().positive(),
});
export type OutcomeRecord = z.infer<typeof outcomeRecord>;

/** Every record kind a batch can carry, each with its schema. */
export const recordSchemas = {
  errors: errorEventRecord,
  spans: spanRecord,
  logs: logRecord,
  metrics: metricPoint,
  checkins: checkInRecord,
  sessions: sessionRecord,
  feedback: feedbackRecord,
  replay_events: replayEventRecord,
  replay_recordings: replayRecordingRecord,
  outcomes: outcomeRecord,
} as const;

export type RecordKind = keyof typeof recordSchemas;
export type RecordOf<K extends RecordKind> = z.infer<(typeof recordSchemas)[K]>;
export const recordKinds = Object.keys(recordSchemas) as RecordKind[];

/** A record and the project it belongs to (ids as hex strings: jobs are JSON). */
export interface Stamped<T> {
  orgId: string;
  projectId: string;
  record: T;
}

/** One telemetry batch's records: its id is what lets a retry of the batch change nothing twice. */
export interface RecordBatch<T> {
  batchId: string;
  items: Stamped<T>[];
}
