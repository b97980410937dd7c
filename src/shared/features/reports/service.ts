import { Cron } from 'croner';
import type { Types } from 'mongoose';
import type { z } from 'zod';
import { MailBudgetExceeded, type Mailer } from '../../clients/mailer.js';
import { AppError, notFound } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { oneAtATime } from '../../telemetry/storage.js';
import { auditAs } from '../audit/service.js';
import { nextRun, timezoneProblem } from '../cron/schedule.js';
import { addressStates, confirmedAmong, requestConfirmations, type ConfirmationMail } from '../recipients/service.js';
import { gatherDigest, renderDigest, type Digest } from './digest.js';
import { ReportSchedule, type ReportScheduleDoc } from './model.js';
import { weekdays, type putScheduleBody, type scheduleJson } from './schemas.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

const scheduleJsonOf = async (schedule: ReportScheduleDoc): Promise<z.infer<typeof scheduleJson>> => ({
  cadence: schedule.cadence,
  weekday: weekdays[schedule.weekday]!,
  hour: schedule.hour,
  minute: schedule.minute,
  timezone: schedule.timezone,
  recipients: schedule.recipients,
  addresses: await addressStates(schedule._id, schedule.recipients),
  next_send_at: schedule.nextSendAt.toISOString(),
  last_sent_at: schedule.lastSentAt?.toISOString() ?? null,
  last_error: schedule.lastError ?? null,
});

type ScheduleTimes = Pick<ReportScheduleDoc, 'cadence' | 'weekday' | 'hour' | 'minute' | 'timezone'>;

const crontabOf = (schedule: ScheduleTimes) => `${schedule.minute} ${schedule.hour} * * ${schedule.cadence === 'weekly' ? schedule.weekday : '*'}`;

/** The next send time after `after`, in the schedule's zone (a crontab, so DST is handled as for cron checks). */
const nextSendAfter = (schedule: ScheduleTimes, after: Date) => nextRun({ type: 'crontab', value: crontabOf(schedule) }, schedule.timezone, after);

const periodLength = (cadence: ReportScheduleDoc['cadence']) => (cadence === 'weekly' ? 7 : 1) * DAY_MS;

/**
 * Where the period ending at `to` starts: the send before it, in the schedule's zone, so that across a
 * daylight-saving change the period is an hour longer or shorter and consecutive digests meet rather
 * than overlap or leave an hour out. A send time changed since leaves no such send a period's length
 * (± the hour) earlier: then the plain length.
 */
function sendBefore(schedule: ScheduleTimes, to: Date): Date {
  const plain = new Date(to.getTime() - periodLength(schedule.cadence));
  const [previous] = new Cron(crontabOf(schedule), { timezone: schedule.timezone, paused: true }).previousRuns(1, to);
  return previous && Math.abs(previous.getTime() - plain.getTime()) <= HOUR_MS ? previous : plain;
}

export async function getSchedule(orgId: Types.ObjectId) {
  const schedule = await ReportSchedule.findById(orgId).lean<ReportScheduleDoc>();
  if (!schedule) throw notFound('report schedule');
  return scheduleJsonOf(schedule);
}

/** Sets the schedule; recipients not confirmed yet are each sent a confirmation link first (`confirmations` unset: email is off). */
export async function putSchedule(principal: MemberPrincipal, input: z.infer<typeof putScheduleBody>, confirmations: ConfirmationMail | undefined, ip: string | undefined, now = new Date()) {
  if (!confirmations) throw new AppError('validation_failed', 'email is off on this server: set SMTP_URL to send digests', { details: [{ path: 'body.recipients', message: 'email is off (SMTP_URL is not set)' }] });
  const problem = timezoneProblem(input.timezone);
  if (problem) throw new AppError('validation_failed', problem, { details: [{ path: 'body.timezone', message: problem }] });
  const fields = {
    cadence: input.cadence,
    weekday: typeof input.weekday === 'number' ? input.weekday % 7 : weekdays.indexOf(input.weekday),
    hour: input.hour,
    minute: input.minute,
    timezone: input.timezone,
    recipients: [...new Set(input.recipients.map((email) => email.toLowerCase()))],
  };
  const schedule = await ReportSchedule.findOneAndUpdate(
    { _id: principal.orgId },
    { $set: { ...fields, nextSendAt: nextSendAfter(fields, now), lastError: null, updatedAt: now } },
    { upsert: true, returnDocument: 'after' },
  ).lean<ReportScheduleDoc>();
  await auditAs(principal, ip)('report_schedule.set', { type: 'report_schedule', id: principal.orgId }, { cadence: fields.cadence });
  await requestConfirmations(principal.orgId, fields.recipients, confirmations, now);
  return scheduleJsonOf(schedule!);
}

export async function deleteSchedule(principal: MemberPrincipal, ip: string | undefined): Promise<void> {
  const removed = await ReportSchedule.findOneAndDelete({ _id: principal.orgId }).lean();
  if (!removed) throw notFound('report schedule');
  await auditAs(principal, ip)('report_schedule.delete', { type: 'report_schedule', id: principal.orgId });
}

/** The digest for the schedule's period ending at `to`, against the period before it. */
async function digestFor(orgId: Types.ObjectId, schedule: ScheduleTimes, to: Date): Promise<Digest> {
  const from = sendBefore(schedule, to);
  const data = await gatherDigest(orgId, from, to, sendBefore(schedule, from));
  return renderDigest(data, { from: from.toISOString(), to: to.toISOString(), cadence: schedule.cadence }, schedule.timezone);
}

/**
 * The next digest, rendered now and not sent: the period that ends at the schedule's next send time
 * (with what has arrived so far), or without a schedule, the last day.
 */
export async function previewDigest(orgId: Types.ObjectId, now = new Date()): Promise<Digest> {
  const schedule = await ReportSchedule.findById(orgId).lean<ReportScheduleDoc>();
  if (schedule) return digestFor(orgId, schedule, schedule.nextSendAt);
  const from = new Date(now.getTime() - DAY_MS);
  const data = await gatherDigest(orgId, from, now);
  return renderDigest(data, { from: from.toISOString(), to: now.toISOString(), cadence: 'daily' });
}

/**
 * Schedules whose send time has come: each is moved on to its next send time by a write conditional
 * on the time read, so one tick (of however many workers) claims it, and answered with the send time
 * that names the digest for its job.
 */
export async function claimDueReports(now = new Date()): Promise<{ orgId: string; sendAt: number }[]> {
  const due = await ReportSchedule.find({ nextSendAt: { $lte: now } }).lean<ReportScheduleDoc[]>();
  const claimed: { orgId: string; sendAt: number }[] = [];
  for (const schedule of due) {
    // one at a time against FerretDB, whose conditional update is not atomic (see oneAtATime)
    const moved = await oneAtATime(ReportSchedule.collection.collectionName, schedule._id, () =>
      ReportSchedule.updateOne({ _id: schedule._id, nextSendAt: schedule.nextSendAt }, { $set: { nextSendAt: nextSendAfter(schedule, now) } }),
    );
    if (moved.modifiedCount === 1) claimed.push({ orgId: schedule._id.toHexString(), sendAt: schedule.nextSendAt.getTime() });
  }
  return claimed;
}

/**
 * Renders the digest that was due at `sendAt` (exactly what the preview showed for it) and mails it to
 * the recipients who confirmed their address. Not sendable (none confirmed, the organisation's mail
 * budget used up): the reason is kept in `last_error` and the digest is skipped, not retried.
 */
export async function sendDigest(orgId: Types.ObjectId, sendAt: Date, mailer: Mailer | undefined, now = new Date()): Promise<'sent' | 'skipped'> {
  const schedule = await ReportSchedule.findById(orgId).lean<ReportScheduleDoc>();
  if (!schedule) return 'skipped';
  const digest = await digestFor(orgId, schedule, sendAt);
  const failed = (error: Error) => ReportSchedule.updateOne({ _id: orgId }, { $set: { lastError: error.message.slice(0, 500) } });
  const to = await confirmedAmong(orgId, schedule.recipients);
  if (to.length === 0) {
    await failed(new Error('not sent: no recipient has confirmed their address yet'));
    return 'skipped';
  }
  try {
    if (!mailer) throw new Error('email is off: SMTP_URL is not set');
    await mailer.send({ orgId: orgId.toHexString(), to, subject: digest.subject, text: digest.text, html: digest.html });
  } catch (error) {
    await failed(error as Error);
    if (error instanceof MailBudgetExceeded) return 'skipped';
    throw error;
  }
  await ReportSchedule.updateOne({ _id: orgId }, { $set: { lastSentAt: now, lastError: null } });
  return 'sent';
}
