import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const cadences = ['daily', 'weekly'] as const;

/** The digest schedule: one per organisation, so `_id` is the organisation's id. */
const reportScheduleSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  cadence: { type: String, enum: cadences, required: true },
  /** 0 = Sunday … 6 = Saturday; weekly digests only. */
  weekday: { type: Number, required: true },
  hour: { type: Number, required: true },
  minute: { type: Number, required: true },
  timezone: { type: String, required: true },
  recipients: { type: [String], required: true },
  nextSendAt: { type: Date, required: true },
  lastSentAt: { type: Date, default: null },
  lastError: { type: String, default: null },
  updatedAt: { type: Date, required: true },
});
// the sender's tick: schedules that are due.
reportScheduleSchema.index({ nextSendAt: 1 });

export type ReportScheduleDoc = InferSchemaType<typeof reportScheduleSchema> & { _id: Types.ObjectId };
export const ReportSchedule = model('ReportSchedule', reportScheduleSchema, 'report_schedules');
