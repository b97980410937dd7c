import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

const projectSchema = new Schema(
  {
    orgId: { type: Schema.Types.ObjectId, required: true },
    name: { type: String, required: true },
    slug: { type: String, required: true },
    /** Numeric ingest number: unmodified Sentry SDKs accept only digits as a DSN's project id. */
    number: { type: Number, required: true },
    platform: { type: String, default: null },
    replayCapture: { type: Boolean, default: false },
    /** Field names scrubbed from this project's telemetry besides the defaults (see telemetry/scrub). */
    scrubFields: { type: [String], default: [] },
  },
  { timestamps: true },
);
// the project list, keyset-paged by creation, and one slug per organisation.
projectSchema.index({ orgId: 1, createdAt: 1, _id: 1 });
projectSchema.index({ orgId: 1, slug: 1 }, { unique: true });
// ingest resolves the project named in a DSN's path.
projectSchema.index({ number: 1 }, { unique: true });

const projectKeySchema = new Schema(
  {
    orgId: { type: Schema.Types.ObjectId, required: true },
    projectId: { type: Schema.Types.ObjectId, required: true },
    publicKey: { type: String, required: true },
    label: { type: String, default: 'Default' },
    createdBy: { type: Schema.Types.ObjectId, default: null },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: true },
);
// every ingest request resolves its DSN by public key.
projectKeySchema.index({ publicKey: 1 }, { unique: true });
// a project's DSN list.
projectKeySchema.index({ projectId: 1, createdAt: 1, _id: 1 });

/** Monotonic sequences (project numbers), advanced atomically with $inc. */
const counterSchema = new Schema({ _id: String, seq: { type: Number, required: true } });

export const Project = model('Project', projectSchema);
export const ProjectKey = model('ProjectKey', projectKeySchema);
export const Counter = model('Counter', counterSchema);

export type ProjectDoc = InferSchemaType<typeof projectSchema> & { _id: Types.ObjectId; createdAt: Date };
export type ProjectKeyDoc = InferSchemaType<typeof projectKeySchema> & { _id: Types.ObjectId; createdAt: Date };
