import { Schema, model } from 'mongoose';
import { logLevels } from '../../telemetry/records.js';
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
  source: { type: String, required: true },
});
// log search: every word of the query must be among a log's tokens (multikey).
logSchema.index({ projectId: 1, tokens: 1 });
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
  pattern: { type: String, required: true },
  firstSeenAt: { type: Date, required: true },
  lastSeenAt: { type: Date, required: true },
});
// one document per project and pattern (the upsert is by the derived _id), and naming a pattern in a view.
logPatternSchema.index({ projectId: 1, patternId: 1 }, { unique: true });
// retention cleanup: a pattern goes once its newest log has expired.
logPatternSchema.index({ orgId: 1, lastSeenAt: 1 });

export const Log = model('Log', logSchema);
export const LogPattern = model('LogPattern', logPatternSchema, 'log_patterns');

