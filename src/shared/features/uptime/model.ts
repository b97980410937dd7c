import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const monitorStates = ['pending', 'up', 'down'] as const;

const uptimeMonitorSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  url: { type: String, required: true },
  method: { type: String, required: true },
  /**
   * Header names may hold dots, which FerretDB does not take in keys: kept as pairs. Values are sealed
   * with the secret box (`sealed`); monitors written before that hold `value` in plain text until their next change.
   */
  headers: { type: Schema.Types.Mixed, default: [] },
  body: { type: String, default: null },
  intervalSeconds: { type: Number, required: true },
  timeoutMs: { type: Number, required: true },
  /** As given: status codes and "200-299" / "2xx" ranges. */
  expectedStatus: { type: [Schema.Types.Mixed], required: true },
  keyword: { type: String, default: null },
  /** Text that must not be in the body, or `true`: the keyword must not be. */
  keywordAbsent: { type: Schema.Types.Mixed, default: null },
  maxRedirects: { type: Number, required: true },
  failureThreshold: { type: Number, required: true },
  recoveryThreshold: { type: Number, required: true },
  verifyTls: { type: Boolean, required: true },
  state: { type: String, enum: monitorStates, required: true },
  paused: { type: Boolean, default: false },
  consecutiveFailures: { type: Number, default: 0 },
  consecutiveSuccesses: { type: Number, default: 0 },
  /** When the next probe is due; each probe claims its turn by moving it on. */
  nextProbeAt: { type: Date, required: true },
  lastCheckedAt: { type: Date, default: null },
  lastError: { type: String, default: null },
  tlsValidTo: { type: Date, default: null },
  openAlertKey: { type: String, default: null },
  tlsAlertKey: { type: String, default: null },
  createdAt: { type: Date, required: true },
});
// an organisation's monitors, oldest first (keyset paging).
uptimeMonitorSchema.index({ orgId: 1, createdAt: 1, _id: 1 });
// the probe scheduler's tick: monitors that are due.
uptimeMonitorSchema.index({ paused: 1, nextProbeAt: 1 });

export type MonitorHeader = { name: string; sealed: string } | { name: string; value: string };
export type UptimeMonitorDoc = Omit<InferSchemaType<typeof uptimeMonitorSchema>, 'headers'> & { _id: Types.ObjectId; headers: MonitorHeader[] };
export const UptimeMonitor = model('UptimeMonitor', uptimeMonitorSchema, 'uptime_monitors');

/** One probe's result. */
const uptimeCheckSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  monitorId: { type: Schema.Types.ObjectId, required: true },
  checkedAt: { type: Date, required: true },
  ok: { type: Boolean, required: true },
  statusCode: { type: Number, default: null },
  latencyMs: { type: Number, default: null },
  error: { type: String, default: null },
  tlsDaysLeft: { type: Number, default: null },
});
// a monitor's probe results, newest first (keyset paging); uptime over a period.
uptimeCheckSchema.index({ monitorId: 1, checkedAt: -1, _id: -1 });
// retention cleanup by organisation and age.
uptimeCheckSchema.index({ orgId: 1, checkedAt: 1 });

export type UptimeCheckDoc = InferSchemaType<typeof uptimeCheckSchema> & { _id: Types.ObjectId };
export const UptimeCheck = model('UptimeCheck', uptimeCheckSchema, 'uptime_checks');
