import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { providers } from '../../clients/code-hosts.js';

/** A project's link to its repository on a code host; one per provider. */
const integrationSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  provider: { type: String, enum: providers, required: true },
  repository: { type: String, required: true },
  defaultBranch: { type: String, required: true },
  /** The repository's page on the host, as the host reported it. */
  webUrl: { type: String, required: true },
  /** The access token, sealed with the configured key (never answered). */
  tokenSealed: { type: String, required: true },
  tokenLast4: { type: String, required: true },
  verifiedAt: { type: Date, required: true },
  createdAt: { type: Date, required: true },
  updatedAt: { type: Date, required: true },
});
// one integration per project and provider; a project's integrations.
integrationSchema.index({ projectId: 1, provider: 1 }, { unique: true });

export type IntegrationDoc = InferSchemaType<typeof integrationSchema> & { _id: Types.ObjectId };
export const Integration = model('Integration', integrationSchema, 'integrations');
