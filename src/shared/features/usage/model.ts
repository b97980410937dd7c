import { Schema, model } from 'mongoose';
import { recordKinds } from '../../telemetry/records.js';

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
