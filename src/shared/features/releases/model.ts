import { Schema, model } from 'mongoose';

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
