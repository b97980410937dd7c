import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { roles } from '../../principal.js';

const apiKeySchema = new Schema(
  {
    orgId: { type: Schema.Types.ObjectId, required: true },
    name: { type: String, required: true },
    role: { type: String, enum: roles, required: true },
    /** SHA-256 of the secret; the secret itself is shown once and never stored. */
    secretHash: { type: String, required: true },
    /** The first characters of the secret, so people can tell their keys apart. */
    prefix: { type: String, required: true },
    createdBy: { type: Schema.Types.ObjectId, required: true },
    lastUsedAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: true },
);
// every Bearer-authenticated request resolves its key by hash.
apiKeySchema.index({ secretHash: 1 }, { unique: true });
// the organisation's key list.
apiKeySchema.index({ orgId: 1, createdAt: 1, _id: 1 });

export const ApiKey = model('ApiKey', apiKeySchema);
export type ApiKeyDoc = InferSchemaType<typeof apiKeySchema> & { _id: Types.ObjectId; createdAt: Date };
