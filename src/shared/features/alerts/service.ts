import { performance } from 'node:perf_hooks';
import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { currentContext } from '../../context.js';
import { paginate, parseId } from '../../paging.js';
import { randomBase62 } from '../../secrets.js';
import type { MemberPrincipal } from '../../principal.js';
import { contentId, insertNew } from '../../telemetry/storage.js';
import { namedProjects, optionalWindow, projectFilter } from '../../views.js';
import { auditAs } from '../audit/service.js';
import type { SecretBox } from '../../clients/secret-box.js';
import { addressStates, requestConfirmations, type ConfirmationMail } from '../recipients/service.js';
import { NotDeliverable, ReceiverRefused, renderAlert, sendToDestination, WEBHOOK_TIMEOUT_MS, type Channels } from './channels.js';
import { Alert, AlertDelivery, AlertDestination, type AlertDoc, type AlertEvent, type AlertKind, type DeliveryDoc, type DestinationDoc } from './model.js';
import type { alertJson, alertsQuery, createDestinationBody, destinationJson, testOutcomeJson } from './schemas.js';

export interface AlertInput {
  /** Names the incident: the same key opens one alert, however often or by how many processes it is raised. */
  key: string;
  orgId: Types.ObjectId;
  projectId: Types.ObjectId | null;
  kind: AlertKind;
  subject: { type: string; id: string };
  title: string;
  details?: Record<string, string | number | boolean | null>;
  at: Date;
}

/** Kinds whose end a person caused (they resolved the issue), so no one is told about it. */
const SILENT_RESOLUTION = new Set<AlertKind>(['issue.new', 'issue.regression']);

export const alertIdOf = (key: string) => contentId('alert', key);

/** Opens the incidents' alerts, in one insert; answers those opened now (an incident opened before is left as it is). */
export async function openAlerts(inputs: AlertInput[]): Promise<AlertDoc[]> {
  const docs = inputs.map((input) => ({
    _id: alertIdOf(input.key),
    orgId: input.orgId,
    projectId: input.projectId,
    kind: input.kind,
    status: 'open',
    subjectType: input.subject.type,
    subjectId: input.subject.id,
    title: input.title,
    details: input.details ?? {},
    openedAt: input.at,
    resolvedAt: null,
    dispatched: [],
    pendingDispatch: true,
  }));
  return (await insertNew(Alert.collection, docs)) as AlertDoc[];
}

/** Opens the incident's alert; answers it, or undefined when that incident was opened before. */
export async function openAlert(input: AlertInput): Promise<AlertDoc | undefined> {
  const [opened] = await openAlerts([input]);
  return opened;
}

/** Resolves the incident's alert if it is open; true when this call resolved it. */
export const resolveAlert = (key: string, at: Date, details: Record<string, string | number | boolean | null> = {}) => resolveAlertById(alertIdOf(key), at, details);

async function resolveAlertById(_id: Types.ObjectId, at: Date, details: Record<string, string | number | boolean | null> = {}): Promise<boolean> {
  const alert = await Alert.findById(_id, { kind: 1, details: 1 }).lean<AlertDoc>();
  if (!alert) return false;
  const silent = SILENT_RESOLUTION.has(alert.kind);
  // A silent resolution leaves `pendingDispatch` alone: an `opened` event not yet handed over must still go out.
  const result = await Alert.updateOne(
    { _id, status: 'open' },
    {
      $set: { status: 'resolved', resolvedAt: at, details: { ...(alert.details as object), ...details }, ...(!silent && { pendingDispatch: true }) },
      ...(silent && { $addToSet: { dispatched: 'resolved' } }),
    },
  );
  return result.modifiedCount === 1;
}

/**
 * Resolves every open alert about one subject (an issue someone resolved), silently: the `resolved`
 * event counts as handed over, while `pendingDispatch` is left as it is, so an `opened` event the
 * dispatcher has not reached yet is still delivered.
 */
export async function resolveAlertsAbout(orgId: Types.ObjectId, subject: { type: string; id: string }, at: Date): Promise<void> {
  const open = await Alert.find({ orgId, subjectId: subject.id, subjectType: subject.type, status: 'open' }, { _id: 1 }).lean();
  for (const alert of open) {
    await Alert.updateOne({ _id: alert._id, status: 'open' }, { $set: { status: 'resolved', resolvedAt: at }, $addToSet: { dispatched: 'resolved' } });
  }
}

export interface Condition {
  /** What is in that condition (an endpoint, a log pattern): one open alert per subject at a time. */
  subjectId: string;
  subjectType: string;
  projectId: Types.ObjectId | null;
  title: string;
  details: Record<string, string | number | boolean | null>;
}

/**
 * For conditions a detector re-judges on every tick (surges): opens an alert for each subject newly
 * in the condition and resolves the open ones whose subject no longer is.
 */
export async function syncConditionAlerts(orgId: Types.ObjectId, kind: AlertKind, active: Condition[], at: Date): Promise<{ opened: number; resolved: number }> {
  const open = await Alert.find({ orgId, kind, status: 'open' }, { subjectId: 1 }).lean<AlertDoc[]>();
  const openBySubject = new Map(open.map((alert) => [alert.subjectId, alert._id]));
  let opened = 0;
  let resolved = 0;
  for (const condition of active) {
    if (openBySubject.has(condition.subjectId)) continue;
    const key = `${kind}:${orgId.toHexString()}:${condition.subjectId}:${at.getTime()}`;
    const subject = { type: condition.subjectType, id: condition.subjectId };
    if (await openAlert({ key, orgId, projectId: condition.projectId, kind, subject, title: condition.title, details: condition.details, at })) opened += 1;
  }
  const still = new Set(active.map((condition) => condition.subjectId));
  for (const [subjectId, id] of openBySubject) if (!still.has(subjectId) && (await resolveAlertById(id, at))) resolved += 1;
  return { opened, resolved };
}

type AlertJson = z.infer<typeof alertJson>;

const alertPayloadOf = (alert: AlertDoc): Omit<AlertJson, 'deliveries'> => ({
  id: alert._id.toHexString(),
  kind: alert.kind,
  status: alert.status,
  project_id: alert.projectId?.toHexString() ?? null,
  subject: { type: alert.subjectType, id: alert.subjectId },
  title: alert.title,
  details: (alert.details ?? {}) as Record<string, unknown>,
  opened_at: alert.openedAt.toISOString(),
  resolved_at: alert.resolvedAt?.toISOString() ?? null,
});

const deliveryJsonOf = (delivery: DeliveryDoc) => ({
  destination_id: delivery.destinationId.toHexString(),
  event: delivery.event,
  status: delivery.status,
  attempts: delivery.attempts,
  last_error: delivery.lastError ?? null,
  last_attempt_at: delivery.lastAttemptAt?.toISOString() ?? null,
});

export async function listAlerts(orgId: Types.ObjectId, query: z.infer<typeof alertsQuery>) {
  // The history is not a time-bounded view: without from/to it reaches back to the first alert.
  const filter: Record<string, unknown> = { orgId, ...projectFilter(await namedProjects(orgId, query.project)), ...optionalWindow('openedAt', query) };
  if (query.kind) filter.kind = query.kind;
  if (query.status) filter.status = query.status;
  const page = await paginate(Alert, filter, { sortField: 'openedAt', direction: -1, limit: query.limit, cursor: query.cursor });
  const alerts = page.items as AlertDoc[];
  const deliveries = alerts.length ? await AlertDelivery.find({ alertId: { $in: alerts.map((a) => a._id) } }).sort({ createdAt: 1 }).lean<DeliveryDoc[]>() : [];
  return {
    data: alerts.map((alert) => ({
      ...alertPayloadOf(alert),
      deliveries: deliveries.filter((d) => d.alertId.equals(alert._id)).map(deliveryJsonOf),
    })),
    next_cursor: page.nextCursor,
  };
}

/** The events of an alert that destinations are told about, given its status. */
const eventsOf = (alert: AlertDoc): AlertEvent[] => (alert.status === 'open' ? ['opened'] : ['opened', 'resolved']);

const wants = (destination: DestinationDoc, alert: AlertDoc) =>
  (destination.kinds.length === 0 || destination.kinds.includes(alert.kind)) &&
  (destination.projectIds.length === 0 || (alert.projectId !== null && destination.projectIds.some((id) => id.equals(alert.projectId!))));

/**
 * Hands every alert event not yet handed over to the destinations that want it: one delivery record
 * and one job per (alert, destination, event), both keyed by the delivery's derived id, so a second
 * dispatcher run (or a crash between the two) never sends twice. Answers how many deliveries it made.
 */
export async function dispatchAlerts(enqueue: (deliveryId: string) => Promise<void>, now = new Date()): Promise<number> {
  const pending = await Alert.find({ pendingDispatch: true }).limit(200).lean<AlertDoc[]>();
  let made = 0;
  // each organisation's destinations read once per tick, however many of its alerts are pending
  const byOrg = new Map<string, Promise<DestinationDoc[]>>();
  const destinationsOf = (orgId: Types.ObjectId) => {
    if (!byOrg.has(orgId.toHexString())) byOrg.set(orgId.toHexString(), AlertDestination.find({ orgId }).lean<DestinationDoc[]>().exec());
    return byOrg.get(orgId.toHexString())!;
  };
  for (const alert of pending) {
    const events = eventsOf(alert).filter((event) => !alert.dispatched.includes(event));
    const destinations = (await destinationsOf(alert.orgId)).filter((d) => wants(d, alert));
    const deliveries = events.flatMap((event) =>
      destinations.map((destination) => ({
        _id: deliveryIdOf(alert._id, destination._id, event),
        orgId: alert.orgId,
        alertId: alert._id,
        destinationId: destination._id,
        event,
        status: 'pending',
        attempts: 0,
        lastError: null,
        lastAttemptAt: null,
        createdAt: now,
      })),
    );
    await insertNew(AlertDelivery.collection, deliveries);
    for (const delivery of deliveries) await enqueue(delivery._id.toHexString());
    made += deliveries.length;
    // Matched only while the status is the one read: an alert resolved meanwhile stays pending for its next event.
    await Alert.updateOne({ _id: alert._id, status: alert.status }, { $set: { pendingDispatch: false }, $addToSet: { dispatched: { $each: events } } });
  }
  return made;
}

/** How long a `resolved` delivery waits for the first attempt of its `opened` one before it goes anyway. */
const OPENED_FIRST_MS = 2 * 60_000;

const deliveryIdOf = (alertId: Types.ObjectId, destinationId: Types.ObjectId, event: AlertEvent) =>
  contentId('delivery', alertId.toHexString(), destinationId.toHexString(), event);

/**
 * One attempt of one delivery. Safe to run twice: a sent delivery is not sent again. Throws on a
 * failed attempt so the queue retries it with backoff; the last attempt's failure stays recorded.
 * Answers `after-opened` (nothing sent or recorded) for a `resolved` event whose `opened` event to the
 * same destination has not been attempted yet — both are handed over in one pass when an incident
 * ends between two dispatcher ticks — so the caller runs it again shortly and "Resolved" never
 * arrives before "Alert".
 */
export async function deliverAlert(deliveryId: string, channels: Channels, attempt: { final: boolean }, now = new Date()): Promise<'sent' | 'skipped' | 'after-opened'> {
  const delivery = await AlertDelivery.findById(parseId(deliveryId, 'delivery')).lean<DeliveryDoc>();
  if (!delivery || delivery.status === 'sent' || delivery.status === 'failed') return 'skipped';
  if (delivery.event === 'resolved') {
    const opened = await AlertDelivery.findById(deliveryIdOf(delivery.alertId, delivery.destinationId, 'opened'), { status: 1, createdAt: 1 }).lean<DeliveryDoc>();
    if (opened?.status === 'pending' && now.getTime() - opened.createdAt.getTime() < OPENED_FIRST_MS) return 'after-opened';
  }
  const [alert, destination] = await Promise.all([
    Alert.findById(delivery.alertId).lean<AlertDoc>(),
    AlertDestination.findById(delivery.destinationId).lean<DestinationDoc>(),
  ]);
  const record = (fields: Partial<DeliveryDoc>) =>
    AlertDelivery.updateOne({ _id: delivery._id }, { $set: { ...fields, lastAttemptAt: now }, $inc: { attempts: 1 } });
  if (!alert || !destination) {
    await record({ status: 'failed', lastError: alert ? 'the destination was removed' : 'the alert was removed' });
    return 'skipped';
  }
  const payload = { event: `alert.${delivery.event}`, alert: alertPayloadOf(alert) };
  try {
    await sendToDestination(destination, renderAlert(alert as never, delivery.event, payload), channels);
  } catch (error) {
    const reason = (error as Error).message.slice(0, 500);
    const final = attempt.final || error instanceof NotDeliverable;
    await record({ status: final ? 'failed' : 'retrying', lastError: reason });
    // Not sendable now is not sendable in a minute either: no retry to pile mail up for later.
    if (error instanceof NotDeliverable) return 'skipped';
    throw error;
  }
  await record({ status: 'sent', lastError: null });
  return 'sent';
}

type DestinationJson = z.infer<typeof destinationJson>;

/**
 * A webhook or Slack URL as answered: scheme and host kept; the path and query (where the credential
 * of a Slack URL, and often of a webhook, is) replaced by `…`, plus their last four characters when
 * there are enough that four give nothing away, so a URL can still be told from another.
 */
function maskedUrl(url: string): string {
  const parsed = new URL(url);
  const rest = `${parsed.pathname}${parsed.search}${parsed.hash}`;
  return `${parsed.origin}/…${rest.length >= 16 ? rest.slice(-4) : ''}`;
}

/**
 * Seals the URLs and secrets of destinations saved before they were sealed, in place, so an upgrade
 * leaves none in plaintext. Each write is conditional on the plaintext it replaced: processes doing this
 * at once agree. Answers how many it sealed.
 */
export async function sealStoredDestinations(secrets: SecretBox): Promise<number> {
  const plain = await AlertDestination.find({ url: { $ne: null } }).lean<DestinationDoc[]>();
  let sealed = 0;
  for (const destination of plain) {
    const url = destination.url!;
    const { modifiedCount } = await AlertDestination.updateOne(
      { _id: destination._id, url },
      { $set: { urlSealed: secrets.seal(url), urlShown: maskedUrl(url), secretSealed: destination.secret ? secrets.seal(destination.secret) : null, url: null, secret: null } },
    );
    sealed += modifiedCount;
  }
  return sealed;
}

/** Each destination as answered; `addresses` tells an email destination's confirmed addresses from the others. */
async function destinationJsonsOf(orgId: Types.ObjectId, destinations: DestinationDoc[]): Promise<DestinationJson[]> {
  const states = new Map((await addressStates(orgId, [...new Set(destinations.flatMap((d) => d.emails))])).map((state) => [state.email, state]));
  return destinations.map((destination) => ({
    id: destination._id.toHexString(),
    type: destination.type,
    name: destination.name ?? null,
    ...(destination.type === 'email' && { emails: destination.emails, addresses: destination.emails.map((email) => states.get(email)!) }),
    ...(destination.type !== 'email' && { url: destination.urlShown ?? maskedUrl(destination.url!) }),
    ...(destination.type === 'webhook' && { secret_set: (destination.secretSealed ?? destination.secret) !== null }),
    kinds: destination.kinds as AlertKind[],
    project_ids: destination.projectIds.map((id) => id.toHexString()),
    created_at: destination.createdAt.toISOString(),
  }));
}

export async function listDestinations(orgId: Types.ObjectId, options: { limit: number; cursor?: string | undefined }) {
  const page = await paginate(AlertDestination, { orgId }, { sortField: 'createdAt', direction: 1, ...options });
  return { data: await destinationJsonsOf(orgId, page.items as DestinationDoc[]), next_cursor: page.nextCursor };
}

export interface DestinationDeps {
  /** Unset: email is off (no SMTP_URL). */
  confirmations: ConfirmationMail | undefined;
  urlProblem(url: string): string | undefined;
  secrets: SecretBox;
}

/**
 * Saves a destination with its URL and secret sealed. The addresses of an email destination are each
 * sent a confirmation link first; alerts reach only those whose owners used it.
 */
export async function createDestination(principal: MemberPrincipal, input: z.infer<typeof createDestinationBody>, deps: DestinationDeps, ip: string | undefined) {
  if (input.type === 'email' && !deps.confirmations) {
    throw new AppError('validation_failed', 'email is off on this server: set SMTP_URL to send alert email', { details: [{ path: 'body.type', message: 'email is off (SMTP_URL is not set)' }] });
  }
  if (input.type !== 'email') {
    const problem = deps.urlProblem(input.url);
    if (problem) throw new AppError('validation_failed', `url cannot be used: ${problem}`, { details: [{ path: 'body.url', message: problem }] });
  }
  const projectIds = await namedProjects(principal.orgId, input.project_ids);
  const emails = input.type === 'email' ? [...new Set(input.emails.map((email) => email.toLowerCase()))] : [];
  const generated = input.type === 'webhook' && input.generate_secret ? `whsec_${randomBase62(32)}` : undefined;
  const secret = input.type === 'webhook' ? (input.secret ?? generated) : undefined;
  const destination = (
    await AlertDestination.create({
      orgId: principal.orgId,
      type: input.type,
      name: input.name ?? null,
      emails,
      urlSealed: input.type === 'email' ? null : deps.secrets.seal(input.url),
      urlShown: input.type === 'email' ? null : maskedUrl(input.url),
      secretSealed: secret === undefined ? null : deps.secrets.seal(secret),
      kinds: [...new Set(input.kinds ?? [])],
      projectIds: [...new Map((projectIds ?? []).map((id) => [id.toHexString(), id])).values()],
      createdAt: new Date(),
    })
  ).toObject() as DestinationDoc;
  await auditAs(principal, ip)('alert_destination.create', { type: 'alert_destination', id: destination._id }, { type: destination.type });
  if (deps.confirmations && emails.length > 0) await requestConfirmations(principal.orgId, emails, deps.confirmations);
  const [answer] = await destinationJsonsOf(principal.orgId, [destination]);
  return { ...answer!, ...(generated && { secret: generated }) };
}

export async function deleteDestination(principal: MemberPrincipal, destinationId: string, ip: string | undefined): Promise<void> {
  const removed = await AlertDestination.findOneAndDelete({ _id: parseId(destinationId, 'alert destination'), orgId: principal.orgId }).lean<DestinationDoc>();
  if (!removed) throw notFound('alert destination');
  await auditAs(principal, ip)('alert_destination.delete', { type: 'alert_destination', id: removed._id }, { type: removed.type });
}

/** How much sooner than the request's deadline a test's webhook or Slack request gives up, so its outcome is still answered. */
const TEST_DEADLINE_MARGIN_MS = 1_000;

/**
 * Sends a test alert to one destination now, through the code real deliveries use (the same rendering,
 * webhook signature, outbound guard, confirmed-address rule and mail budget), and answers what happened.
 * It is not an incident: no alert or delivery is stored, only an audit entry. The webhook body is
 * `{"event": "alert.test", "alert": {…}}` with the shape of a real alert, so a receiver can tell it apart.
 */
export async function sendTestAlert(principal: MemberPrincipal, destinationId: string, channels: Channels, ip: string | undefined, now = new Date()): Promise<z.infer<typeof testOutcomeJson>> {
  const destination = await AlertDestination.findOne({ _id: parseId(destinationId, 'alert destination'), orgId: principal.orgId }).lean<DestinationDoc>();
  if (!destination) throw notFound('alert destination');
  const alert = {
    kind: 'test',
    status: 'open',
    title: 'This destination receives Sluice alerts',
    details: { note: 'sent with "Send a test"; nothing is wrong' },
    openedAt: now,
    resolvedAt: null,
  };
  const payload = {
    event: 'alert.test',
    alert: {
      // a fresh id per test, so a receiver that drops repeated alert ids takes each one
      id: new Types.ObjectId().toHexString(),
      kind: alert.kind,
      status: alert.status,
      project_id: null,
      subject: { type: 'alert_destination', id: destination._id.toHexString() },
      title: alert.title,
      details: alert.details,
      opened_at: now.toISOString(),
      resolved_at: null,
    },
  };
  const { deadline } = currentContext();
  const timeoutMs = deadline === undefined ? WEBHOOK_TIMEOUT_MS : Math.max(1, Math.min(WEBHOOK_TIMEOUT_MS, deadline - Date.now() - TEST_DEADLINE_MARGIN_MS));
  const started = performance.now();
  const outcome = await sendToDestination(destination, renderAlert(alert, 'test', payload), channels, timeoutMs).then(
    (receipt) => ({ status: 'delivered' as const, http_status: receipt.httpStatus, error: null, recipients: receipt.recipients }),
    (error: Error) => ({ status: 'failed' as const, http_status: error instanceof ReceiverRefused ? error.httpStatus : null, error: error.message.slice(0, 500), recipients: [] }),
  );
  await auditAs(principal, ip)('alert_destination.test', { type: 'alert_destination', id: destination._id }, { type: destination.type, status: outcome.status });
  return { destination_id: destination._id.toHexString(), ...outcome, attempted_at: now.toISOString(), duration_ms: Math.round(performance.now() - started) };
}
