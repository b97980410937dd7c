import { Schema, model } from 'mongoose';
import { outcomeCategories, outcomeReasons, recordKinds } from '../../telemetry/records.js';

/** How many records of each kind a project sent per UTC day (plan figures count; they never throttle). */
/** `_id` is derived from project, category and day, so the counter upsert is addressed by `_id` alone. */
const usageSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  category: { type: String, enum: recordKinds, required: true },
  /** YYYY-MM-DD, UTC. */
  day: { type: String, required: true },
  quantity: { type: Number, default: 0 },
});
// one counter per project, category and day; by its prefix, an organisation's (or a project's) usage
// for GET /v1/usage, whose month is then a range on `day` over at most a few hundred counters per project.
usageSchema.index({ orgId: 1, projectId: 1, category: 1, day: 1 }, { unique: true });

export const Usage = model('Usage', usageSchema, 'usage');

/**
 * Items of accepted requests that could not be stored, per project, category, reason and UTC day;
 * `_id` is derived from those four, like the usage counters'.
 */
const droppedSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  category: { type: String, enum: outcomeCategories, required: true },
  reason: { type: String, enum: outcomeReasons, required: true },
  /** YYYY-MM-DD, UTC. */
  day: { type: String, required: true },
  quantity: { type: Number, default: 0 },
});
// GET /v1/usage: an organisation's (or a project's) counters, then a range on `day` for the month
droppedSchema.index({ orgId: 1, projectId: 1, day: 1 });

export const DroppedUsage = model('DroppedUsage', droppedSchema, 'usage_dropped');
