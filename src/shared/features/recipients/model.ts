import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

/**
 * An address an organisation mails alerts or digests to, and whether its owner confirmed it. `_id`
 * derives from the organisation and the address, so one address has one record per organisation.
 */
const recipientSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  email: { type: String, required: true },
  /** Set when the link in the confirmation mail was used; until then nothing but that mail is sent here. */
  verifiedAt: { type: Date, default: null },
  /** SHA-256 of the confirmation link's token while one is out; cleared when used. */
  tokenHash: { type: String, default: null },
  tokenExpiresAt: { type: Date, default: null },
  createdAt: { type: Date, required: true },
});
// confirming by the link's token.
recipientSchema.index({ tokenHash: 1 });

export type RecipientDoc = InferSchemaType<typeof recipientSchema> & { _id: Types.ObjectId };
export const Recipient = model('Recipient', recipientSchema, 'recipients');
