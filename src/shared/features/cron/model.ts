import { Schema, model, type InferSchemaType, type Types } from 'mongoose';
import { intervalUnits } from './schedule.js';

export const checkStates = ['new', 'up', 'late', 'down'] as const;
export const downReasons = ['missed', 'failed', 'timed_out'] as const;

const cronCheckSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  name: { type: String, required: true },
  slug: { type: String, required: true },
  schedule: {
    type: { type: String, enum: ['crontab', 'interval'], required: true },
    value: { type: Schema.Types.Mixed, required: true },
    unit: { type: String, enum: [...intervalUnits, null], default: null },
  },
  timezone: { type: String, required: true },
  checkinMargin: { type: Number, required: true },
  maxRuntime: { type: Number, required: true },
  /** The state the schedule gives; while `paused`, answered as `paused`. */
  state: { type: String, enum: checkStates, required: true },
  paused: { type: Boolean, default: false },
  downReason: { type: String, enum: [...downReasons, null], default: null },
  /** The credential of /v1/checkins/{token}: 256 random bits, unique. */
  token: { type: String, required: true },
  lastCheckinAt: { type: Date, default: null },
  nextExpectedAt: { type: Date, default: null },
  /** An open run: a start without its end yet. */
  runStartedAt: { type: Date, default: null },
  runId: { type: String, default: null },
  /** The key of the open incident's alert, resolved by the next success. */
  openAlertKey: { type: String, default: null },
  createdAt: { type: Date, required: true },
});
// check-ins find their check by token.
cronCheckSchema.index({ token: 1 }, { unique: true });
// one slug per project; SDK check-ins find their check by it.
cronCheckSchema.index({ projectId: 1, slug: 1 }, { unique: true });
// an organisation's checks, oldest first (keyset paging).
cronCheckSchema.index({ orgId: 1, createdAt: 1, _id: 1 });

export type CronCheckDoc = Omit<InferSchemaType<typeof cronCheckSchema>, 'schedule'> & {
  _id: Types.ObjectId;
  schedule: { type: 'crontab' | 'interval'; value: string | number; unit?: string | null };
};
export const CronCheck = model('CronCheck', cronCheckSchema, 'cron_checks');

/** start/ok/fail are what a job reported; missed and timeout are the monitor's verdicts. */
export const pingStatuses = ['start', 'ok', 'fail', 'missed', 'timeout'] as const;
export type PingStatus = (typeof pingStatuses)[number];

const cronPingSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  checkId: { type: Schema.Types.ObjectId, required: true },
  receivedAt: { type: Date, required: true },
  status: { type: String, enum: pingStatuses, required: true },
  durationMs: { type: Number, default: null },
  runId: { type: String, default: null },
  excerpt: { type: String, default: null },
  source: { type: String, enum: ['http', 'sdk', 'monitor'], required: true },
});
// a check's history, newest first (keyset paging); a run's start, by check and run id.
cronPingSchema.index({ checkId: 1, receivedAt: -1, _id: -1 });
// retention cleanup by organisation and age.
cronPingSchema.index({ orgId: 1, receivedAt: 1 });

export type CronPingDoc = InferSchemaType<typeof cronPingSchema> & { _id: Types.ObjectId };
export const CronPing = model('CronPing', cronPingSchema, 'cron_pings');
