import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const verdicts = ['healthy', 'degraded', 'insufficient_data'] as const;
export type Verdict = (typeof verdicts)[number];

const deploymentSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** The release name the SDKs send. */
  version: { type: String, required: true },
  environment: { type: String, required: true },
  commitSha: { type: String, default: null },
  repository: { type: String, default: null },
  url: { type: String, default: null },
  deployedAt: { type: Date, required: true },
  createdAt: { type: Date, required: true },
  /** The verdict over the default window once that window had passed (set by the evaluator job). */
  verdict: { type: String, enum: [...verdicts, null], default: null },
  evaluatedAt: { type: Date, default: null },
});
// an organisation's deployments, newest first (keyset paging on deployedAt, _id).
deploymentSchema.index({ orgId: 1, deployedAt: -1, _id: -1 });
// the evaluator's tick: deployments not judged yet.
deploymentSchema.index({ evaluatedAt: 1 });

export type DeploymentDoc = InferSchemaType<typeof deploymentSchema> & { _id: Types.ObjectId };
export const Deployment = model('Deployment', deploymentSchema, 'deployments');
