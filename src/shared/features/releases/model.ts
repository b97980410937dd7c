import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { rollupSchema } from '../../telemetry/rollups.js';

/**
 * Release health: session outcomes per release, environment and hour in which the sessions started.
 * `_id` is derived from those four, so the rollup upsert is addressed by `_id` alone.
 */
const releaseHealthSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  release: { type: String, required: true },
  environment: { type: String, default: null },
  hour: { type: Date, required: true },
  started: { type: Number, default: 0 },
  exited: { type: Number, default: 0 },
  errored: { type: Number, default: 0 },
  crashed: { type: Number, default: 0 },
  abnormal: { type: Number, default: 0 },
});
// one rollup per release, environment and hour; by its prefix, one release's health over time.
releaseHealthSchema.index({ projectId: 1, release: 1, environment: 1, hour: 1 }, { unique: true });
// retention cleanup by organisation and age.
releaseHealthSchema.index({ orgId: 1, hour: 1 });

export const ReleaseHealth = model('ReleaseHealth', releaseHealthSchema, 'release_health');

/**
 * Per minute, per release and environment (either may be null): the requests services served (entry
 * spans) with failures and a latency histogram, the error events, and the sessions that started with
 * how many crashed. Deployment health compares windows of these; nothing reads raw telemetry for it.
 */
const releaseRollupSchema = rollupSchema({
  release: { type: String, default: null },
  environment: { type: String, default: null },
  requests: { type: Number, default: 0 },
  failed: { type: Number, default: 0 },
  latency: { type: Schema.Types.Mixed, default: {} },
  errorEvents: { type: Number, default: 0 },
  sessions: { type: Number, default: 0 },
  crashed: { type: Number, default: 0 },
});

export const ReleaseRollup = model('ReleaseRollup', releaseRollupSchema, 'release_rollups');

/**
 * One release in one project and environment, over its whole life: what the release list reads.
 * `_id` is derived from the three, so each batch adds to it with one upsert.
 */
const releaseSummarySchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  release: { type: String, required: true },
  environment: { type: String, default: null },
  firstSeen: { type: Date, required: true },
  lastSeen: { type: Date, required: true },
  requests: { type: Number, default: 0 },
  errorEvents: { type: Number, default: 0 },
  sessions: { type: Number, default: 0 },
  crashed: { type: Number, default: 0 },
});
// the release list of an organisation; retention cleanup by organisation and age.
releaseSummarySchema.index({ orgId: 1, lastSeen: 1 });

export const ReleaseSummary = model('ReleaseSummary', releaseSummarySchema, 'release_summaries');

/**
 * A release as release tooling declared it (sentry-cli `releases new`, the bundler plugins): its projects,
 * the commits it was built from and when it was finalized. Releases the telemetry names exist without one.
 * `_id` is derived from the organisation and version, so declaring one twice finds the first.
 */
const declaredReleaseSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  version: { type: String, required: true },
  projectIds: { type: [Schema.Types.ObjectId], default: [] },
  /** Head commits per repository (`previousCommit`: where the release's range starts, when the tool gave one). */
  refs: { type: [{ _id: false, repository: String, commit: String, previousCommit: { type: String, default: null } }], default: [] },
  url: { type: String, default: null },
  dateStarted: { type: Date, default: null },
  /** Set by finalize. */
  dateReleased: { type: Date, default: null },
  createdAt: { type: Date, required: true },
});
// an organisation's declared releases (the release lists read them all and filter by project).
declaredReleaseSchema.index({ orgId: 1 });

export type DeclaredReleaseDoc = InferSchemaType<typeof declaredReleaseSchema> & { _id: Types.ObjectId };
export const DeclaredRelease = model('DeclaredRelease', declaredReleaseSchema, 'declared_releases');
