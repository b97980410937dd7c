import { Schema, model } from 'mongoose';
import { metricTypes } from '../../telemetry/records.js';
import { rollupSchema } from '../../telemetry/rollups.js';
import { attributePairsField } from '../../telemetry/storage.js';

const metricPointSchema = new Schema({
  /** Derived from the series and time (see ingestMetricPoints), so a resent point clashes with its stored self. */
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  type: { type: String, enum: metricTypes, required: true },
  unit: { type: String, default: null },
  /** The series a view draws as one line: name, service and attributes (see metricSeriesKey). */
  seriesKey: { type: String, required: true },
  service: { type: String, required: true },
  environment: { type: String, default: null },
  release: { type: String, default: null },
  time: { type: Date, required: true },
  startAt: { type: Date, default: null },
  /** Monotonic sums and explicit histograms arrive cumulative and are stored as deltas; other points as sent. */
  temporality: { type: String, enum: ['delta', 'cumulative'], default: null },
  isMonotonic: { type: Boolean, default: null },
  value: { type: Number, default: null },
  count: { type: Number, default: null },
  sum: { type: Number, default: null },
  min: { type: Number, default: null },
  max: { type: Number, default: null },
  bucketCounts: { type: [Number], default: null },
  explicitBounds: { type: [Number], default: null },
  exponential: { type: Schema.Types.Mixed, default: null },
  quantiles: { type: [{ _id: false, quantile: Number, value: Number }], default: null },
  attributes: attributePairsField,
  /** Hours since the epoch: a series is read an hour at a time, by equality. */
  hour: { type: Number, required: true },
  /** Minutes since the epoch: a minute that the series' steps split across its points is read from them (absent before the rollups). */
  minute: { type: Number },
  source: { type: String, required: true },
});
// a metric's points over a time window, an hour at a time (and in order of time, on MongoDB).
metricPointSchema.index({ projectId: 1, name: 1, hour: 1, time: 1 });
metricPointSchema.index({ orgId: 1, name: 1, hour: 1 });
// a metric's points of one minute, where a step of the series starts inside a rolled-up minute.
metricPointSchema.index({ orgId: 1, name: 1, minute: 1 });
// retention cleanup by organisation and age.
metricPointSchema.index({ orgId: 1, time: 1 });

/**
 * The last cumulative point of each series, from which the next one's delta is taken. Its `_id` is
 * the series key plus the point's start time: each process incarnation of an exporter is its own
 * series, so replicas of one service (whose instance attributes are not kept) never look like resets.
 */
const metricSeriesSchema = new Schema({
  _id: { type: String, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  lastAt: { type: Date, required: true },
  /** lastAt to the nanosecond, zero-padded decimal: a later point can fall in the same millisecond. */
  lastAtNanos: { type: String },
  value: { type: Number, default: null },
  count: { type: Number, default: null },
  sum: { type: Number, default: null },
  bucketCounts: { type: [Number], default: null },
  explicitBounds: { type: [Number], default: null },
});
// retention cleanup of series that stopped reporting.
metricSeriesSchema.index({ orgId: 1, lastAt: 1 });

/** Every metric name a project has reported, with its type and unit; `_id` derived from project and name. */
const metricNameSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  type: { type: String, enum: metricTypes, required: true },
  unit: { type: String, default: null },
  firstSeenAt: { type: Date, required: true },
  lastSeenAt: { type: Date, required: true },
  /** The attribute keys its points have carried. */
  attributeKeys: { type: [String], default: [] },
});
// an organisation's metric names.
metricNameSchema.index({ orgId: 1, name: 1 });
// one document per project and name (the upsert is by the derived _id), and the metric picker (a project's names in order).
metricNameSchema.index({ projectId: 1, name: 1 }, { unique: true });
// retention cleanup of names no longer reported.
metricNameSchema.index({ orgId: 1, lastSeenAt: 1 });

/** What a series of a metric is, beside its project: the key of its rollups and of its hours. */
const seriesKeyFields = {
  name: { type: String, required: true },
  type: { type: String, enum: metricTypes, required: true },
  service: { type: String, required: true },
  attributes: attributePairsField,
  /** The buckets' upper bounds, for explicit-bounds histograms; null otherwise. */
  explicitBounds: { type: [Number], default: null },
};

/**
 * One minute of one series of a metric (project, name, type, service, attributes and, for explicit-bounds
 * histograms, the bucket layout), as its points add up: what the series view read instead of the points
 * until MetricHour took over (metric-hour documents are written since; these are read for the hours before).
 * Gauges and sums count their values (`values`, `valueSum`, `valueMin`, `valueMax`); histograms and
 * summaries their `count`, `sum`, `min`, `max` and, per bucket index, `buckets` (cumulative points as the
 * deltas they are stored as). `points` counts every point, with or without a value.
 */
const metricRollupSchema = rollupSchema({
  ...seriesKeyFields,
  points: { type: Number, default: 0 },
  values: { type: Number, default: 0 },
  valueSum: { type: Number, default: 0 },
  valueMin: { type: Number, default: null },
  valueMax: { type: Number, default: null },
  count: { type: Number, default: 0 },
  sum: { type: Number, default: 0 },
  min: { type: Number, default: null },
  max: { type: Number, default: null },
  buckets: { type: Schema.Types.Mixed, default: undefined },
  /**
   * Its earliest and latest point's time (epoch ms): a minute a step's start or the window's edge falls
   * inside is still read from the rollup when every point lies on one side. Null in rollups written before
   * these were kept; a minute rolled up on both sides of that upgrade holds only the later points' times.
   */
  earliestMs: { type: Number, default: null },
  latestMs: { type: Number, default: null },
});
// a metric's rollups in a window, of an organisation (and filtered to its projects), an hour at a time.
metricRollupSchema.index({ orgId: 1, name: 1, hour: 1 });

/**
 * One hour of one series (the same key as a MetricRollup's), its minutes in `minutes` by their minute of
 * the hour ("0" to "59"), each holding what a MetricRollup holds for its minute. The series view reads a
 * document per series and hour, not one per series and minute: a steady series over a day is 24 reads'
 * worth of documents, not 1,440. `at` is the hour's start.
 */
const metricHourSchema = rollupSchema({
  ...seriesKeyFields,
  minutes: { type: Schema.Types.Mixed, default: undefined },
});
// a metric's hours in a window, of an organisation (and filtered to its projects), an hour at a time.
metricHourSchema.index({ orgId: 1, name: 1, hour: 1 });

export const MetricPoint = model('MetricPoint', metricPointSchema, 'metric_points');
export const MetricSeries = model('MetricSeries', metricSeriesSchema, 'metric_series');
export const MetricName = model('MetricName', metricNameSchema, 'metric_names');
export const MetricRollup = model('MetricRollup', metricRollupSchema, 'metric_rollups');
export const MetricHour = model('MetricHour', metricHourSchema, 'metric_hours');

