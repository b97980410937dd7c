import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

const auditEntrySchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  actor: {
    type: { type: String, enum: ['user', 'api_key', 'dsn', 'system'], required: true },
    id: { type: Schema.Types.ObjectId, default: null },
  },
  action: { type: String, required: true },
  target: {
    type: { type: String, required: true },
    id: { type: String, required: true },
  },
  details: { type: Schema.Types.Mixed, default: undefined },
  requestId: { type: String, default: null },
  ip: { type: String, default: null },
  at: { type: Date, required: true },
});
// the audit-log read: one organisation's entries, newest first, keyset-paged.
auditEntrySchema.index({ orgId: 1, at: -1, _id: -1 });

export const AuditEntry = model('AuditEntry', auditEntrySchema);
export type AuditEntryDoc = InferSchemaType<typeof auditEntrySchema> & { _id: Types.ObjectId };
