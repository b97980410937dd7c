import { Schema, model } from 'mongoose';

export const anomalyMetrics = ['throughput', 'error_rate', 'p95_ms', 'log_volume'] as const;

/**
 * A stretch of time in which a service's metric stayed outside its band (detector.ts). Open while
 * `endedAt` is null; `_id` derived from the service, the metric and the start, so a detection
 * repeated by another tick or worker meets the same document.
 */
const anomalySchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  service: { type: String, required: true },
  metric: { type: String, enum: anomalyMetrics, required: true },
  /** The start of the first window found outside the band. */
  startedAt: { type: Date, required: true },
  /** The end of the first window found back inside it. */
  endedAt: { type: Date, default: null },
  /** The latest anomalous window's value, baseline (median), band and score. */
  observed: { type: Number, required: true },
  baseline: { type: Number, required: true },
  bandLow: { type: Number, required: true },
  bandHigh: { type: Number, required: true },
  score: { type: Number, required: true },
  peakScore: { type: Number, required: true },
  reason: { type: String, required: true },
  evaluatedAt: { type: Date, required: true },
});
// an organisation's anomalies, and those still open across organisations (the detector's state).
anomalySchema.index({ orgId: 1, startedAt: -1 });
anomalySchema.index({ endedAt: 1 });

export const Anomaly = model('Anomaly', anomalySchema, 'anomalies');
