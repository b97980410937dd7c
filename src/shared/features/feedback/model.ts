import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { feedbackSources } from '../../telemetry/records.js';

/** `_id` is derived from project and feedback id, so a resent submission clashes with its stored self. */
const feedbackSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  feedbackId: { type: String, required: true },
  message: { type: String, required: true },
  contactEmail: { type: String, default: null },
  name: { type: String, default: null },
  url: { type: String, default: null },
  associatedEventId: { type: String, default: null },
  replayId: { type: String, default: null },
  environment: { type: String, default: null },
  release: { type: String, default: null },
  source: { type: String, enum: feedbackSources, required: true },
  receivedAt: { type: Date, required: true },
});
// one submission per project and id, however often it is sent.
feedbackSchema.index({ projectId: 1, feedbackId: 1 }, { unique: true });
// the feedback list, newest first, keyset-paged within an organisation.
feedbackSchema.index({ orgId: 1, receivedAt: -1, _id: -1 });

export const Feedback = model('Feedback', feedbackSchema);
export type FeedbackDoc = InferSchemaType<typeof feedbackSchema> & { _id: Types.ObjectId };
