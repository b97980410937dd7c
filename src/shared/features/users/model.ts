import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

/** An end user of a customer's application, as seen in the `user` of its events; `_id` derived from project and userKey. */
const endUserSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** The strongest identity the SDK sent: `id:…`, else `email:…`, `username:…`, `ip:…`. */
  userKey: { type: String, required: true },
  userId: { type: String, default: null },
  email: { type: String, default: null },
  username: { type: String, default: null },
  ipAddress: { type: String, default: null },
  firstSeen: { type: Date, required: true },
  lastSeen: { type: Date, required: true },
  eventCount: { type: Number, default: 0 },
});
// one document per project and identity (the upsert itself is by the derived _id).
endUserSchema.index({ projectId: 1, userKey: 1 }, { unique: true });
// the user list, most recently seen first, keyset-paged within an organisation.
endUserSchema.index({ orgId: 1, lastSeen: -1, _id: -1 });

export const EndUser = model('EndUser', endUserSchema);
export type EndUserDoc = InferSchemaType<typeof endUserSchema> & { _id: Types.ObjectId };
