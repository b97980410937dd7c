import { Schema, model } from 'mongoose';
import { recordKinds } from '../../telemetry/records.js';

/** How many records of each kind a project sent per UTC day (plan figures count; they never throttle). */
const usageSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  category: { type: String, enum: recordKinds, required: true },
  /** YYYY-MM-DD, UTC. */
  day: { type: String, required: true },
  quantity: { type: Number, default: 0 },
});
// the counter upsert; by its prefix, an organisation's usage.
usageSchema.index({ orgId: 1, projectId: 1, category: 1, day: 1 }, { unique: true });

export const Usage = model('Usage', usageSchema, 'usage');
