import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const alertKinds = [
  'issue.new',
  'issue.regression',
  'cron.down',
  'uptime.down',
  'uptime.tls_expiring',
  'anomaly',
  'endpoint.surge',
  'log.surge',
  'deployment.degraded',
] as const;
export type AlertKind = (typeof alertKinds)[number];

/** What a destination is told: an alert opened, or the condition behind it cleared. */
export const alertEvents = ['opened', 'resolved'] as const;
export type AlertEvent = (typeof alertEvents)[number];

/**
 * One incident. `_id` is derived from the incident's key (the check and the deadline it missed, the
 * issue and its regression time…), so however many processes see an incident it is opened once.
 */
const alertSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, default: null },
  kind: { type: String, enum: alertKinds, required: true },
  status: { type: String, enum: ['open', 'resolved'], required: true },
  subjectType: { type: String, required: true },
  subjectId: { type: String, required: true },
  title: { type: String, required: true },
  /** The figures behind it (reason, status code, score…): flat scalars. */
  details: { type: Schema.Types.Mixed, default: {} },
  openedAt: { type: Date, required: true },
  resolvedAt: { type: Date, default: null },
  /** The events already handed to the destinations; `pendingDispatch` is set whenever one is not. */
  dispatched: { type: [String], default: [] },
  pendingDispatch: { type: Boolean, required: true },
});
// the alert history of an organisation, newest first (keyset paging on openedAt, _id).
alertSchema.index({ orgId: 1, openedAt: -1, _id: -1 });
// the dispatcher's tick: alerts with an event not yet handed to the destinations.
alertSchema.index({ pendingDispatch: 1 });
// retention cleanup by organisation and age.
alertSchema.index({ orgId: 1, resolvedAt: 1 });

export type AlertDoc = InferSchemaType<typeof alertSchema> & { _id: Types.ObjectId };
export const Alert = model('Alert', alertSchema, 'alerts');

export const deliveryStatuses = ['pending', 'retrying', 'sent', 'failed'] as const;

/** One event of one alert to one destination; `_id` derived from those three, so it is attempted as one job. */
const deliverySchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  alertId: { type: Schema.Types.ObjectId, required: true },
  destinationId: { type: Schema.Types.ObjectId, required: true },
  event: { type: String, enum: alertEvents, required: true },
  status: { type: String, enum: deliveryStatuses, required: true },
  attempts: { type: Number, default: 0 },
  lastError: { type: String, default: null },
  lastAttemptAt: { type: Date, default: null },
  createdAt: { type: Date, required: true },
});
// the deliveries of the alerts on a page of the history.
deliverySchema.index({ alertId: 1 });
// retention cleanup by organisation and age.
deliverySchema.index({ orgId: 1, createdAt: 1 });

export type DeliveryDoc = InferSchemaType<typeof deliverySchema> & { _id: Types.ObjectId };
export const AlertDelivery = model('AlertDelivery', deliverySchema, 'alert_deliveries');

export const destinationTypes = ['email', 'webhook', 'slack'] as const;

const destinationSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  type: { type: String, enum: destinationTypes, required: true },
  name: { type: String, default: null },
  emails: { type: [String], default: [] },
  /** Webhook and Slack: the URL sealed with ENCRYPTION_KEY (a Slack URL, and often a webhook's, is a credential). */
  urlSealed: { type: String, default: null },
  /** The URL as answered: scheme and host, the rest masked (maskedUrl). */
  urlShown: { type: String, default: null },
  /** Webhook: the signing secret sealed with ENCRYPTION_KEY; opened only to sign, never answered. */
  secretSealed: { type: String, default: null },
  /** Destinations saved before sealing keep their URL and secret here in plaintext, and still work. */
  url: { type: String, default: null },
  secret: { type: String, default: null },
  /** Empty: every kind; else only these. */
  kinds: { type: [String], default: [] },
  /** Empty: every project; else only alerts of these. */
  projectIds: { type: [Schema.Types.ObjectId], default: [] },
  createdAt: { type: Date, required: true },
});
// an organisation's destinations, oldest first.
destinationSchema.index({ orgId: 1, createdAt: 1 });

export type DestinationDoc = InferSchemaType<typeof destinationSchema> & { _id: Types.ObjectId };
export const AlertDestination = model('AlertDestination', destinationSchema, 'alert_destinations');
