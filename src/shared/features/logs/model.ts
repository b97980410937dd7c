import { Schema, model } from 'mongoose';
import { logLevels } from '../../telemetry/records.js';
import { rollupSchema } from '../../telemetry/rollups.js';
import { attributePairsField } from '../../telemetry/storage.js';

const logSchema = new Schema({
  /** Derived from the log's content (see ingestLogs), so a resent log clashes with its stored self. */
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  time: { type: Date, required: true },
  observedAt: { type: Date, default: null },
  severityNumber: { type: Number, required: true },
  level: { type: String, enum: logLevels, required: true },
  body: { type: String, required: true },
  attributes: attributePairsField,
  traceId: { type: String, default: null },
  spanId: { type: String, default: null },
  service: { type: String, required: true },
  environment: { type: String, default: null },
  release: { type: String, default: null },
  /** The log's pattern (see LogPattern), for the pattern views and "more like this". */
  patternId: { type: String, required: true },
  /** Lower-cased words of the body (see logTokens): log search without text indexes. */
  tokens: { type: [String], default: [] },
  /** Minutes since the epoch: log search reads a window a minute at a time, by equality. */
  minute: { type: Number, required: true },
  source: { type: String, required: true },
});
// log search: a minute of a project's (or an organisation's) logs, narrowed by a word of the query
// (multikey: every word must be among a log's tokens), a service, a level or a trace.
logSchema.index({ projectId: 1, minute: 1, tokens: 1 });
logSchema.index({ orgId: 1, minute: 1, service: 1, level: 1 });
// the log stream, newest first, keyset-paged.
logSchema.index({ projectId: 1, time: -1, _id: -1 });
// a trace's logs beside its spans.
logSchema.index({ projectId: 1, traceId: 1 });
// retention cleanup by organisation and age.
logSchema.index({ orgId: 1, time: 1 });

/** The registry of log patterns: the template text once per pattern, not in every log; `_id` derived from project and pattern. */
const logPatternSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  patternId: { type: String, required: true },
  /** The template, `<*>` where the pattern's lines differ. */
  pattern: { type: String, required: true },
  /** Drain's group (word count and first word) the template is compared within; null for SDK templates. */
  group: { type: String, default: null },
  firstSeenAt: { type: Date, required: true },
  lastSeenAt: { type: Date, required: true },
  /** The body of the first log seen with the pattern. */
  example: { type: String, default: null },
});
// one document per project and pattern (the upsert is by the derived _id), and naming a pattern in a view.
logPatternSchema.index({ projectId: 1, patternId: 1 }, { unique: true });
// a project's templates of one group, which a worker compares new lines with.
logPatternSchema.index({ projectId: 1, group: 1 });
// retention cleanup: a pattern goes once its newest log has expired.
logPatternSchema.index({ orgId: 1, lastSeenAt: 1 });

/**
 * Log volume per minute (src/shared/telemetry/rollups.ts), per project, service and pattern, with a
 * count per level: what the pattern and surge views read instead of raw logs.
 */
const logRollupSchema = rollupSchema({
  service: { type: String, required: true },
  patternId: { type: String, required: true },
  count: { type: Number, default: 0 },
  /** Count per level name. */
  levels: { type: Schema.Types.Mixed, default: {} },
});

export const Log = model('Log', logSchema);
export const LogRollup = model('LogRollup', logRollupSchema, 'log_rollups');
/** The same counts per hour (`at` the hour's start): what views over whole hours of a long window read (views.ts, inWindowByWholeHour). */
export const LogRollupHourly = model('LogRollupHourly', logRollupSchema.clone(), 'log_rollups_hourly');
export const LogPattern = model('LogPattern', logPatternSchema, 'log_patterns');

