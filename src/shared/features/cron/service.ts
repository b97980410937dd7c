import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { randomBase62 } from '../../secrets.js';
import { slugify } from '../../slug.js';
import type { CheckInRecord, Stamped } from '../../telemetry/records.js';
import { contentId, insertNew, inTurn, oneAtATime } from '../../telemetry/storage.js';
import { namedProjects, projectFilter } from '../../views.js';
import { openAlert, resolveAlert } from '../alerts/service.js';
import { auditAs } from '../audit/service.js';
import { findProject } from '../projects/service.js';
import { CronCheck, CronPing, type CronCheckDoc, type CronPingDoc, type PingStatus } from './model.js';
import { nextExpectedAfter, nextRun, timezoneProblem, type Schedule } from './schedule.js';
import { MAX_MINUTES, scheduleSchema, type checkJson, type createCheckBody, type listChecksQuery, type pingJson, type updateCheckBody } from './schemas.js';

/** Text kept from a check-in's body: enough for a log tail, not a log store. */
export const EXCERPT_BYTES = 10_000;
const MINUTE_MS = 60_000;

type CheckJson = z.infer<typeof checkJson>;

const scheduleOf = (check: CronCheckDoc): Schedule =>
  check.schedule.type === 'crontab'
    ? { type: 'crontab', value: String(check.schedule.value) }
    : { type: 'interval', value: Number(check.schedule.value), unit: check.schedule.unit as Extract<Schedule, { type: 'interval' }>['unit'] };

const pingUrlOf = (baseUrl: string, token: string) => `${baseUrl.replace(/\/+$/, '')}/v1/checkins/${token}`;

/**
 * When a check that has not checked in yet would next run: shown, never enforced. A new check waits
 * for its first check-in before it can be late (as Healthchecks.io does), so a check created ahead of
 * its job's first deploy raises nothing.
 */
const upcoming = (check: CronCheckDoc, now: Date) => nextRun(scheduleOf(check), check.timezone, now);

export function checkJsonOf(check: CronCheckDoc, baseUrl: string, now = new Date()): CheckJson {
  return {
    id: check._id.toHexString(),
    project_id: check.projectId.toHexString(),
    name: check.name,
    slug: check.slug,
    schedule: scheduleOf(check),
    timezone: check.timezone,
    checkin_margin: check.checkinMargin,
    max_runtime: check.maxRuntime,
    state: check.paused ? 'paused' : check.state,
    down_reason: check.state === 'down' ? (check.downReason ?? null) : null,
    last_checkin_at: check.lastCheckinAt?.toISOString() ?? null,
    next_expected_at: (check.state === 'new' && !check.paused ? upcoming(check, now) : check.nextExpectedAt)?.toISOString() ?? null,
    ping_url: pingUrlOf(baseUrl, check.token),
    created_at: check.createdAt.toISOString(),
  };
}

const pingJsonOf = (ping: CronPingDoc): z.infer<typeof pingJson> => ({
  id: ping._id.toHexString(),
  received_at: ping.receivedAt.toISOString(),
  status: ping.status,
  duration_ms: ping.durationMs ?? null,
  run_id: ping.runId ?? null,
  excerpt: ping.excerpt ?? null,
  source: ping.source,
});

function checkTimezone(timezone: string | undefined): void {
  const problem = timezone === undefined ? undefined : timezoneProblem(timezone);
  if (problem) throw new AppError('validation_failed', problem, { details: [{ path: 'body.timezone', message: problem }] });
}

const newToken = () => randomBase62(32);

async function findCheck(orgId: Types.ObjectId, checkId: string): Promise<CronCheckDoc> {
  const check = await CronCheck.findOne({ _id: parseId(checkId, 'cron check'), orgId }).lean<CronCheckDoc>();
  if (!check) throw notFound('cron check');
  return check;
}

const slugTaken = (slug: string) => new AppError('conflict', `a check with slug "${slug}" already exists in this project`);

export async function createCheck(principal: MemberPrincipal, input: z.infer<typeof createCheckBody>, baseUrl: string, ip: string | undefined, now = new Date()) {
  checkTimezone(input.timezone);
  const project = await findProject(principal.orgId, input.project_id);
  const slug = input.slug ?? slugify(input.name, { max: 128, fallback: 'check' });
  let check: CronCheckDoc;
  try {
    check = (
      await CronCheck.create({
        orgId: principal.orgId,
        projectId: project._id,
        name: input.name,
        slug,
        schedule: { type: input.schedule.type, value: input.schedule.value, unit: input.schedule.type === 'interval' ? input.schedule.unit : null },
        timezone: input.timezone,
        checkinMargin: input.checkin_margin,
        maxRuntime: input.max_runtime,
        state: 'new',
        paused: input.paused,
        token: newToken(),
        createdAt: now,
      })
    ).toObject() as CronCheckDoc;
  } catch (error) {
    if (isDuplicateKey(error)) throw slugTaken(slug);
    throw error;
  }
  await auditAs(principal, ip)('cron_check.create', { type: 'cron_check', id: check._id }, { name: check.name, slug });
  return checkJsonOf(check, baseUrl, now);
}

export async function listChecks(orgId: Types.ObjectId, query: z.infer<typeof listChecksQuery>, baseUrl: string, now = new Date()) {
  const filter: Record<string, unknown> = { orgId, ...projectFilter(await namedProjects(orgId, [...(query.project ?? []), ...(query.project_id ?? [])])) };
  if (query.state === 'paused') filter.paused = true;
  else if (query.state) Object.assign(filter, { state: query.state, paused: false });
  const page = await paginate(CronCheck, filter, { sortField: 'createdAt', direction: 1, limit: query.limit, cursor: query.cursor });
  return { data: (page.items as CronCheckDoc[]).map((check) => checkJsonOf(check, baseUrl, now)), next_cursor: page.nextCursor };
}

export async function getCheck(orgId: Types.ObjectId, checkId: string, baseUrl: string) {
  return checkJsonOf(await findCheck(orgId, checkId), baseUrl);
}

export async function updateCheck(principal: MemberPrincipal, checkId: string, input: z.infer<typeof updateCheckBody>, baseUrl: string, ip: string | undefined, now = new Date()) {
  checkTimezone(input.timezone);
  const check = await findCheck(principal.orgId, checkId);
  // Asked first: FerretDB reports a unique clash on an update as an internal error, not 11000.
  if (input.slug !== undefined && input.slug !== check.slug && (await CronCheck.exists({ projectId: check.projectId, slug: input.slug }))) throw slugTaken(input.slug);
  const set: Record<string, unknown> = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.slug !== undefined) set.slug = input.slug;
  if (input.schedule) set.schedule = { type: input.schedule.type, value: input.schedule.value, unit: input.schedule.type === 'interval' ? input.schedule.unit : null };
  if (input.timezone !== undefined) set.timezone = input.timezone;
  if (input.checkin_margin !== undefined) set.checkinMargin = input.checkin_margin;
  if (input.max_runtime !== undefined) set.maxRuntime = input.max_runtime;
  const changed = { ...check, ...set } as CronCheckDoc;
  if (input.paused === true) set.paused = true;
  const resumed = input.paused === false && check.paused;
  if (resumed) {
    // Resumed: like a new check, it waits for its next check-in before it can be late again. A new
    // check has no incident: the one open before the pause ends here, else a later incident would
    // take its place as the open one and leave it open for good.
    Object.assign(set, { paused: false, state: 'new', downReason: null, openAlertKey: null, nextExpectedAt: null, runStartedAt: null, runId: null });
  } else if ((input.schedule || input.timezone) && check.lastCheckinAt && check.state !== 'new') {
    // A new schedule applies from the last check-in, so the next deadline is the new schedule's.
    set.nextExpectedAt = nextExpectedAfter(scheduleOf(changed), changed.timezone, check.lastCheckinAt);
    if (check.state === 'late' && (set.nextExpectedAt as Date) > now) set.state = 'up';
  }
  let updated: CronCheckDoc | null;
  try {
    updated = await CronCheck.findOneAndUpdate({ _id: check._id, orgId: principal.orgId }, { $set: set }, { returnDocument: 'after' }).lean<CronCheckDoc>();
  } catch (error) {
    if (isDuplicateKey(error)) throw slugTaken(String(input.slug));
    throw error;
  }
  if (!updated) throw notFound('cron check');
  if (resumed && check.openAlertKey) await resolveAlert(check.openAlertKey, now, { reason: 'check resumed' });
  await auditAs(principal, ip)('cron_check.update', { type: 'cron_check', id: check._id }, { fields: Object.keys(input) });
  return checkJsonOf(updated, baseUrl, now);
}

export async function deleteCheck(principal: MemberPrincipal, checkId: string, ip: string | undefined, now = new Date()): Promise<void> {
  const check = await CronCheck.findOneAndDelete({ _id: parseId(checkId, 'cron check'), orgId: principal.orgId }).lean<CronCheckDoc>();
  if (!check) throw notFound('cron check');
  await CronPing.deleteMany({ checkId: check._id });
  if (check.openAlertKey) await resolveAlert(check.openAlertKey, now, { reason: 'check deleted' });
  await auditAs(principal, ip)('cron_check.delete', { type: 'cron_check', id: check._id }, { name: check.name });
}

/** A new token: the old one stops working with this write. */
export async function rotateToken(principal: MemberPrincipal, checkId: string, baseUrl: string, ip: string | undefined) {
  const check = await findCheck(principal.orgId, checkId);
  const updated = await CronCheck.findOneAndUpdate({ _id: check._id }, { $set: { token: newToken() } }, { returnDocument: 'after' }).lean<CronCheckDoc>();
  if (!updated) throw notFound('cron check');
  await auditAs(principal, ip)('cron_check.rotate_token', { type: 'cron_check', id: check._id });
  return checkJsonOf(updated, baseUrl);
}

export async function listPings(orgId: Types.ObjectId, checkId: string, options: { limit: number; cursor?: string | undefined }) {
  const check = await findCheck(orgId, checkId);
  const page = await paginate(CronPing, { checkId: check._id }, { sortField: 'receivedAt', direction: -1, ...options });
  return { data: (page.items as CronPingDoc[]).map(pingJsonOf), next_cursor: page.nextCursor };
}

// ---------------------------------------------------------------------------------------------------
// Check-ins and the state machine

export interface CheckInInput {
  status: 'start' | 'ok' | 'fail';
  runId?: string | undefined;
  excerpt?: string | undefined;
  /** Given by an SDK; else measured from the run's start. */
  durationMs?: number | undefined;
  source: 'http' | 'sdk';
  /** An SDK check-in's own id: the same check-in stored twice is one check-in. */
  clientId?: string | undefined;
}

const reasonText = { missed: 'missed a check-in', failed: 'reported a failure', timed_out: 'ran past its maximum runtime' } as const;

/** Opens the incident's alert when the check goes down. */
async function raiseDown(check: CronCheckDoc, reason: keyof typeof reasonText, key: string, at: Date, details: Record<string, string | number | null>) {
  await openAlert({
    key,
    orgId: check.orgId,
    projectId: check.projectId,
    kind: 'cron.down',
    subject: { type: 'cron_check', id: check._id.toHexString() },
    title: `Cron check "${check.name}" ${reasonText[reason]}`,
    details: { reason, slug: check.slug, ...details },
    at,
  });
}

/** How long the run this end closes took: from its start (same run id, or the open run). */
async function runDuration(check: CronCheckDoc, input: CheckInInput, at: Date): Promise<number | null> {
  if (input.durationMs !== undefined) return Math.round(input.durationMs);
  if (input.runId) {
    if (check.runId === input.runId && check.runStartedAt) return at.getTime() - check.runStartedAt.getTime();
    const start = await CronPing.findOne({ checkId: check._id, runId: input.runId, status: 'start' }, { receivedAt: 1 }).lean<CronPingDoc>();
    return start ? at.getTime() - start.receivedAt.getTime() : null;
  }
  return check.runStartedAt && !check.runId ? at.getTime() - check.runStartedAt.getTime() : null;
}

/**
 * Records a check-in and moves the check: a start opens a run (timed out after `max_runtime`); an ok
 * makes the check `up` (resolving a down incident); a fail makes it `down` at once. Every check-in
 * sets the next deadline from the schedule. A paused check records check-ins and stays paused.
 */
export async function checkIn(check: CronCheckDoc, input: CheckInInput, at: Date): Promise<void> {
  const durationMs = input.status === 'start' ? null : await runDuration(check, input, at);
  const pingId = input.clientId ? contentId('cron-ping', check._id.toHexString(), input.clientId, input.status) : new Types.ObjectId();
  const [stored] = await insertNew(CronPing.collection, [
    { _id: pingId, orgId: check.orgId, checkId: check._id, receivedAt: at, status: input.status, durationMs, runId: input.runId ?? null, excerpt: input.excerpt ?? null, source: input.source },
  ]);
  if (!stored) return; // the same SDK check-in, stored before
  await oneAtATime(CronCheck.collection.collectionName, check._id, async () => {
    // read again in this check's turn: a check-in arriving at the same moment may have moved it
    const current = await CronCheck.findById(check._id).lean<CronCheckDoc>();
    if (!current) return;
    const set: Record<string, unknown> = { lastCheckinAt: at, nextExpectedAt: nextExpectedAfter(scheduleOf(current), current.timezone, at) };
    const closesRun = !input.runId || input.runId === current.runId || !current.runId;
    if (input.status === 'start') Object.assign(set, { runStartedAt: at, runId: input.runId ?? null });
    else if (closesRun) Object.assign(set, { runStartedAt: null, runId: null });
    if (input.status === 'fail' && current.state !== 'down') {
      const key = `cron:${current._id.toHexString()}:failed:${pingId.toHexString()}`;
      // conditional on the state read, so of two failures at once only one takes the check down
      const moved = await CronCheck.updateOne({ _id: current._id, state: current.state }, { $set: { ...set, state: 'down', downReason: 'failed', openAlertKey: key } });
      if (moved.modifiedCount === 1 && !current.paused) await raiseDown(current, 'failed', key, at, { excerpt: input.excerpt?.slice(0, 200) ?? null });
      return;
    }
    if (input.status === 'ok') Object.assign(set, { state: 'up', downReason: null, openAlertKey: null });
    else if (input.status === 'start' && (current.state === 'new' || current.state === 'late')) set.state = 'up';
    await CronCheck.updateOne({ _id: current._id }, { $set: set });
    if (input.status === 'ok' && current.openAlertKey) await resolveAlert(current.openAlertKey, at, { recovered_at: at.toISOString() });
  });
}

/** The check of a ping URL's token, or 404 as for any unknown token. */
async function checkOfToken(token: string): Promise<CronCheckDoc> {
  const check = /^[0-9A-Za-z]{20,100}$/.test(token) ? await CronCheck.findOne({ token }).lean<CronCheckDoc>() : null;
  if (!check) throw notFound('check-in token');
  return check;
}

export async function checkInByToken(token: string, input: CheckInInput, now = new Date()): Promise<void> {
  await checkIn(await checkOfToken(token), input, now);
}

/**
 * The sweep (every few seconds, once per tick): a started run past `max_runtime` → down (timed out);
 * a deadline passed by more than the margin → down (missed), the deadline moving to the next run; a
 * deadline just passed → late. Each verdict is a conditional write on the fields it read, and each
 * incident's alert key is derived from the run or deadline it judged, so overlapping sweeps agree.
 */
export async function sweepChecks(now = new Date()): Promise<{ late: number; down: number }> {
  const counts = { late: 0, down: 0 };
  const checks = await CronCheck.find({ paused: false }).lean<CronCheckDoc[]>();
  for (const check of checks) {
    if (check.state === 'new') continue;
    const id = check._id.toHexString();
    // each verdict in the check's turn, so it never interleaves with a check-in's write (see oneAtATime)
    const judge = (filter: Record<string, unknown>, set: Record<string, unknown>) => oneAtATime(CronCheck.collection.collectionName, check._id, () => CronCheck.updateOne({ _id: check._id, ...filter }, { $set: set }));
    if (check.runStartedAt && now.getTime() >= check.runStartedAt.getTime() + check.maxRuntime * MINUTE_MS) {
      const key = `cron:${id}:timed_out:${check.runStartedAt.getTime()}`;
      const judged = await judge({ runStartedAt: check.runStartedAt }, { runStartedAt: null, runId: null, ...(check.state !== 'down' && { state: 'down', downReason: 'timed_out', openAlertKey: key }) });
      if (judged.modifiedCount === 0) continue;
      await insertNew(CronPing.collection, [{ _id: contentId('cron-ping', key), orgId: check.orgId, checkId: check._id, receivedAt: now, status: 'timeout' satisfies PingStatus, durationMs: now.getTime() - check.runStartedAt.getTime(), runId: check.runId ?? null, excerpt: null, source: 'monitor' }]);
      if (check.state !== 'down') {
        await raiseDown(check, 'timed_out', key, now, { started_at: check.runStartedAt.toISOString(), max_runtime_minutes: check.maxRuntime });
        counts.down += 1;
      }
      continue;
    }
    const deadline = check.nextExpectedAt;
    if (!deadline) continue;
    if (now.getTime() >= deadline.getTime() + check.checkinMargin * MINUTE_MS) {
      const key = `cron:${id}:missed:${deadline.getTime()}`;
      // While it stays silent, each later run it misses is recorded too (one alert for the incident).
      let next = nextRun(scheduleOf(check), check.timezone, deadline);
      while (next <= now) next = nextRun(scheduleOf(check), check.timezone, next);
      const judged = await judge({ nextExpectedAt: deadline }, { nextExpectedAt: next, ...(check.state !== 'down' && { state: 'down', downReason: 'missed', openAlertKey: key }) });
      if (judged.modifiedCount === 0) continue;
      await insertNew(CronPing.collection, [{ _id: contentId('cron-ping', key), orgId: check.orgId, checkId: check._id, receivedAt: now, status: 'missed' satisfies PingStatus, durationMs: null, runId: null, excerpt: null, source: 'monitor' }]);
      if (check.state !== 'down') {
        await raiseDown(check, 'missed', key, now, { expected_at: deadline.toISOString(), margin_minutes: check.checkinMargin });
        counts.down += 1;
      }
    } else if (check.state === 'up' && now >= deadline) {
      const judged = await judge({ state: 'up', nextExpectedAt: deadline }, { state: 'late' });
      counts.late += judged.modifiedCount;
    }
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------------
// Sentry check-ins

const sdkStatus = { in_progress: 'start', ok: 'ok', error: 'fail' } as const;
const sdkUnits: Record<string, [number, Extract<Schedule, { type: 'interval' }>['unit']]> = {
  minute: [1, 'minute'],
  hour: [1, 'hour'],
  day: [1, 'day'],
  week: [1, 'week'],
  month: [1, 'month'],
  year: [12, 'month'],
};

/** A Sentry `monitor_config` as our fields, or undefined when its schedule is not one we can keep. */
function configOf(config: Record<string, unknown>): Record<string, unknown> | undefined {
  const schedule = config.schedule as { type?: unknown; value?: unknown; unit?: unknown } | undefined;
  let value: Record<string, unknown> | undefined;
  if (schedule?.type === 'crontab' && typeof schedule.value === 'string') value = { type: 'crontab', value: schedule.value, unit: null };
  const unit = typeof schedule?.unit === 'string' ? sdkUnits[schedule.unit] : undefined;
  if (schedule?.type === 'interval' && typeof schedule.value === 'number' && schedule.value >= 1 && unit) {
    value = { type: 'interval', value: Math.round(schedule.value) * unit[0], unit: unit[1] };
  }
  // The API's rules: a crontab that cannot be read (or never runs), or an interval past the dates a
  // Date can hold, would make every later read of the check fail.
  if (!value || !scheduleSchema.safeParse(value).success) return undefined;
  const minutes = (raw: unknown, fallback: number) => (typeof raw === 'number' && raw >= 1 ? Math.min(Math.round(raw), MAX_MINUTES) : fallback);
  const timezone = typeof config.timezone === 'string' && !timezoneProblem(config.timezone) ? config.timezone : 'UTC';
  return { schedule: value, timezone, checkinMargin: minutes(config.checkin_margin, 1), maxRuntime: minutes(config.max_runtime, 30) };
}

/**
 * Sentry `check_in` items: each checks in the project's check with that slug. A `monitor_config`
 * creates the check or updates its schedule, as Sentry's monitor upsert does; a check-in for an
 * unknown slug without one is dropped.
 */
export async function ingestSdkCheckIns(items: Stamped<CheckInRecord>[], now = new Date()): Promise<void> {
  for (const item of [...items].sort((a, b) => a.record.timeMs - b.record.timeMs)) {
    const slug = slugify(item.record.monitorSlug, { max: 128, fallback: 'check' });
    // two batches checking in to one check at once would each create it or judge it from the same state
    await inTurn('cron-check-ingest', `${item.projectId}:${slug}`, () => ingestSdkCheckIn(item, slug, now));
  }
}

async function ingestSdkCheckIn({ orgId, projectId, record }: Stamped<CheckInRecord>, slug: string, now: Date): Promise<void> {
  const config = record.monitorConfig ? configOf(record.monitorConfig) : undefined;
  const project = new Types.ObjectId(projectId);
  let check = await CronCheck.findOne({ projectId: project, slug }).lean<CronCheckDoc>();
  if (config) {
    const changed = !check || JSON.stringify([check.schedule.type, check.schedule.value, check.schedule.unit ?? null, check.timezone, check.checkinMargin, check.maxRuntime]) !== JSON.stringify([(config.schedule as { type: string }).type, (config.schedule as { value: unknown }).value, (config.schedule as { unit: unknown }).unit, config.timezone, config.checkinMargin, config.maxRuntime]);
    if (changed) {
      try {
        check = await CronCheck.findOneAndUpdate(
          { projectId: project, slug },
          { $set: config, $setOnInsert: { orgId: new Types.ObjectId(orgId), name: record.monitorSlug, state: 'new', paused: false, token: newToken(), createdAt: now } },
          { upsert: true, returnDocument: 'after' },
        ).lean<CronCheckDoc>();
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        check = await CronCheck.findOne({ projectId: project, slug }).lean<CronCheckDoc>();
      }
    }
  }
  if (!check) return;
  const at = new Date(Math.min(record.timeMs, now.getTime()));
  await checkIn(check, { status: sdkStatus[record.status], runId: record.checkInId, durationMs: record.durationMs, source: 'sdk', clientId: record.checkInId }, at);
}
