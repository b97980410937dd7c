import { Schema, model } from 'mongoose';
import { checkInStatuses } from '../../telemetry/records.js';

/** A cron job's check-in: one document per status it reported (a run sends in_progress, then ok or error). */
const checkInSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  checkInId: { type: String, required: true },
  monitorSlug: { type: String, required: true },
  status: { type: String, enum: checkInStatuses, required: true },
  durationMs: { type: Number, default: null },
  environment: { type: String, default: null },
  /**
   * Sentry's `monitor_config` as JSON text: it is only read whole by the monitor logic, and as
   * client-sent JSON its keys may hold dots or `$`, which FerretDB does not accept in document keys.
   */
  monitorConfig: { type: String, default: null },
  time: { type: Date, required: true },
});
// each status change of a check-in stored once, however often it is sent.
checkInSchema.index({ projectId: 1, checkInId: 1, status: 1 }, { unique: true });
// a monitor's check-ins, newest first.
checkInSchema.index({ projectId: 1, monitorSlug: 1, time: -1 });
// retention cleanup by organisation and age.
checkInSchema.index({ orgId: 1, time: 1 });

export const CheckIn = model('CheckIn', checkInSchema, 'checkins');
