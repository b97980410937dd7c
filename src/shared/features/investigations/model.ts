import { Schema, model, type Types } from 'mongoose';

export const investigationKinds = ['issue', 'alert', 'project', 'explain'] as const;
export type InvestigationKind = (typeof investigationKinds)[number];

export const investigationStatuses = ['queued', 'running', 'completed', 'failed'] as const;
export type InvestigationStatus = (typeof investigationStatuses)[number];

/**
 * One AI investigation of a subject (an issue, an alert, a project's state) or one question about a
 * project's topology. The evidence our code gathered is kept beside the model's answer, so a reader
 * sees exactly what the model was shown.
 */
const investigationSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, default: null },
  kind: { type: String, enum: investigationKinds, required: true },
  subjectType: { type: String, required: true },
  subjectId: { type: String, required: true },
  /** `explain` only: the question asked. */
  question: { type: String, default: null },
  status: { type: String, enum: investigationStatuses, required: true },
  /**
   * `kind:subject` while queued or running, then the investigation's own id: the unique index lets
   * one investigation per subject be in progress, so a second request joins the first.
   */
  activeKey: { type: String, required: true },
  /** The evidence as JSON text: it holds tag and attribute keys with dots, which FerretDB refuses as keys. */
  evidence: { type: String, default: null },
  summary: { type: String, default: null },
  suggestedActions: { type: [String], default: null },
  answer: { type: String, default: null },
  model: { type: String, required: true },
  promptTokens: { type: Number, default: null },
  completionTokens: { type: Number, default: null },
  error: { type: String, default: null },
  requestedBy: { type: Schema.Types.ObjectId, default: null },
  createdAt: { type: Date, required: true },
  startedAt: { type: Date, default: null },
  completedAt: { type: Date, default: null },
});
// one investigation in progress per subject (see activeKey); a second request finds it by this key.
investigationSchema.index({ activeKey: 1 }, { unique: true });
// the organisation's investigations, newest first (keyset paging on createdAt, _id).
investigationSchema.index({ orgId: 1, createdAt: -1, _id: -1 });
// the latest investigation of one issue, alert or project.
investigationSchema.index({ orgId: 1, subjectType: 1, subjectId: 1, createdAt: -1 });
// the sweep for investigations left in progress by a worker that died.
investigationSchema.index({ status: 1 });

export interface InvestigationDoc {
  _id: Types.ObjectId;
  orgId: Types.ObjectId;
  projectId: Types.ObjectId | null;
  kind: InvestigationKind;
  subjectType: string;
  subjectId: string;
  question: string | null;
  status: InvestigationStatus;
  activeKey: string;
  evidence: string | null;
  summary: string | null;
  suggestedActions: string[] | null;
  answer: string | null;
  model: string;
  promptTokens: number | null;
  completionTokens: number | null;
  error: string | null;
  requestedBy: Types.ObjectId | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

export const Investigation = model('Investigation', investigationSchema, 'investigations');
