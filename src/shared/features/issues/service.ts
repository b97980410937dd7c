import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { ErrorEventRecord, Stamped } from '../../telemetry/records.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { insertNew } from '../../telemetry/storage.js';
import { recordEndUsers, userKeyOf, type SentUser } from '../users/service.js';
import { crashingFrames, culprit, groupingHash, issueTitle, type SentryEventLike, type SentryExceptionLike } from './grouping.js';
import { ErrorEvent, Issue, IssueUser, type ErrorEventDoc, type IssueDoc } from './model.js';
import { issueSorts, type eventJson, type issueJson, type listIssuesQuery, type updateIssueBody } from './schemas.js';

const str = (value: unknown) => (typeof value === 'string' && value ? value : null);
const obj = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null);

function exceptionsOf(event: SentryEventLike): SentryExceptionLike[] {
  const exception = event.exception;
  const values = Array.isArray(exception) ? exception : exception?.values;
  return Array.isArray(values) ? values.filter((value): value is SentryExceptionLike => !!obj(value)) : [];
}

/** Sentry sends tags as an object or as [key, value] pairs. */
function tagsOf(event: Record<string, unknown>): Record<string, string> {
  const tags = event.tags;
  const pairs = Array.isArray(tags) ? tags : Object.entries(obj(tags) ?? {});
  return Object.fromEntries(
    pairs.flatMap((pair) => (Array.isArray(pair) && pair.length === 2 && typeof pair[0] === 'string' && pair[1] != null ? [[pair[0], String(pair[1])]] : [])),
  );
}

interface PreparedEvent {
  key: string;
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  eventId: string;
  at: Date;
  event: Record<string, unknown>;
  user: SentUser | undefined;
  userKey: string | null;
  hash: string;
  groupingKind: string;
}

/** How far ahead of the server an event's own timestamp may be; beyond it the client's clock is wrong, as Relay judges. */
const FUTURE_TOLERANCE_MS = 60_000;

function prepare({ orgId, projectId, record }: Stamped<ErrorEventRecord>, now: Date): PreparedEvent {
  const event = record.event;
  const user = (obj(event.user) as SentUser | null) ?? undefined;
  const grouping = groupingHash(event as SentryEventLike);
  return {
    key: `${projectId}:${record.eventId}`,
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    eventId: record.eventId,
    at: new Date(record.timeMs > now.getTime() + FUTURE_TOLERANCE_MS ? now.getTime() : record.timeMs),
    event,
    user,
    userKey: userKeyOf(user),
    hash: grouping.hash,
    groupingKind: grouping.kind,
  };
}

/** One upsert for all of a batch's events of one issue: counts, first/last seen, and the newest event's details. */
async function upsertIssue(events: PreparedEvent[]): Promise<IssueDoc> {
  const newest = events.reduce((a, b) => (b.at >= a.at ? b : a));
  const sentry = newest.event as SentryEventLike;
  const exception = exceptionsOf(sentry).at(-1);
  const environments = [...new Set(events.flatMap((e) => str(e.event.environment) ?? []))];
  const releases = [...new Set(events.flatMap((e) => str(e.event.release) ?? []))];
  const update = {
    $setOnInsert: { orgId: newest.orgId, groupingKind: newest.groupingKind, platform: str(newest.event.platform), status: 'unresolved' },
    $set: {
      title: issueTitle(sentry),
      culprit: culprit(sentry),
      level: str(newest.event.level) ?? 'error',
      errorType: str(exception?.type),
      errorValue: str(exception?.value),
      latestEventId: newest.eventId,
    },
    $min: { firstSeen: events.reduce((a, b) => (b.at < a.at ? b : a)).at },
    $max: { lastSeen: newest.at },
    $inc: { eventCount: events.length },
    $addToSet: { environments: { $each: environments }, releases: { $each: releases } },
  };
  const upsert = () =>
    Issue.findOneAndUpdate({ projectId: newest.projectId, hash: newest.hash }, update, { upsert: true, returnDocument: 'after' }).lean<IssueDoc>();
  try {
    return (await upsert())!;
  } catch (error) {
    // Two workers creating the same issue at once: the loser's upsert now finds the winner's document.
    if (!isDuplicateKey(error)) throw error;
    return (await upsert())!;
  }
}

/**
 * CONTRACT.md's automatic transitions on new events: a resolved issue regresses to unresolved; an
 * ignored one reopens once its time or count condition is passed. The status condition in each
 * update makes concurrent batches flip an issue once.
 */
async function applyEventTransitions(issue: IssueDoc, now: Date): Promise<void> {
  if (issue.status === 'resolved') {
    await Issue.updateOne({ _id: issue._id, status: 'resolved' }, { $set: { status: 'unresolved', regressedAt: now, resolvedAt: null } });
    return;
  }
  const countPassed = issue.ignoredUntilCount != null && issue.eventCount >= issue.ignoredUntilCount;
  const timePassed = issue.ignoredUntil != null && issue.ignoredUntil <= now;
  if (issue.status === 'ignored' && (countPassed || timePassed)) {
    await Issue.updateOne({ _id: issue._id, status: 'ignored' }, { $set: { status: 'unresolved', ignoredUntil: null, ignoredUntilCount: null } });
  }
}

/**
 * Events this batch stored on an earlier attempt but never marked with their issue: counted now. An
 * unmarked event stored by another batch is that batch's to count, so concurrent duplicates count once.
 */
async function unfinished(events: PreparedEvent[], batchId: string): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const stored = await ErrorEvent.find(
    { $or: events.map((e) => ({ projectId: e.projectId, eventId: e.eventId })), issueId: null, batchId },
    { projectId: 1, eventId: 1 },
  ).lean();
  return new Set(stored.map((doc) => `${doc.projectId.toHexString()}:${doc.eventId}`));
}

const groupBy = <T>(values: T[], keyOf: (value: T) => string) => {
  const groups = new Map<string, T[]>();
  for (const value of values) groups.set(keyOf(value), [...(groups.get(keyOf(value)) ?? []), value]);
  return groups;
};

/**
 * Stores a batch of error events once per {project, event_id} and counts each into its issue once,
 * with a handful of writes per batch rather than per event. Events are stored first with no issue and
 * marked with it only after the issue and user counts are updated, so a retry of the same batch after
 * a crash counts exactly its unmarked ones.
 */
export async function ingestErrorEvents(items: Stamped<ErrorEventRecord>[], batchId: string, now = new Date()): Promise<void> {
  const prepared = [...new Map(items.map((item) => prepare(item, now)).map((e) => [e.key, e] as const)).values()];
  const inserted = await insertNew(
    ErrorEvent.collection,
    prepared.map((e) => ({
      orgId: e.orgId,
      projectId: e.projectId,
      eventId: e.eventId,
      issueId: null,
      timestamp: e.at,
      receivedAt: now,
      level: str(e.event.level) ?? 'error',
      title: issueTitle(e.event as SentryEventLike),
      environment: str(e.event.environment),
      release: str(e.event.release),
      userKey: e.userKey,
      batchId,
      data: JSON.stringify(e.event),
    })),
  );
  const fresh = new Set(inserted.map((doc) => `${doc.projectId.toHexString()}:${doc.eventId}`));
  const retried = await unfinished(prepared.filter((e) => !fresh.has(e.key)), batchId);
  const toCount = prepared.filter((e) => fresh.has(e.key) || retried.has(e.key));
  if (toCount.length === 0) return;

  const issues = new Map<string, IssueDoc>();
  for (const [group, events] of groupBy(toCount, (e) => `${e.projectId.toHexString()}:${e.hash}`)) {
    const issue = await upsertIssue(events);
    await applyEventTransitions(issue, now);
    issues.set(group, issue);
  }
  const issueOf = (e: PreparedEvent) => issues.get(`${e.projectId.toHexString()}:${e.hash}`)!;

  await recordEndUsers(toCount.map((e) => ({ orgId: e.orgId, projectId: e.projectId, user: e.user, seenAt: e.at })));
  const affected = [...new Map(toCount.filter((e) => e.userKey).map((e) => [`${issueOf(e)._id.toHexString()}:${e.userKey}`, { issueId: issueOf(e)._id, userKey: e.userKey! }])).values()];
  const newUsers = groupBy(await insertNew(IssueUser.collection, affected), (pair) => pair.issueId.toHexString());
  await Issue.bulkWrite([...newUsers].map(([issueId, pairs]) => ({ updateOne: { filter: { _id: new Types.ObjectId(issueId) }, update: { $inc: { userCount: pairs.length } } } })));

  const marks = [...groupBy(toCount, (e) => issueOf(e)._id.toHexString())].map(([issueId, events]) => ({
    updateMany: {
      filter: { $or: events.map((e) => ({ projectId: e.projectId, eventId: e.eventId })) },
      update: { $set: { issueId: new Types.ObjectId(issueId) } },
    },
  }));
  await ErrorEvent.bulkWrite(marks);
}

/** The scheduled half of "ignore until": reopens ignored issues whose time has passed without a new event. */
export async function reopenExpiredIgnores(now = new Date()): Promise<number> {
  const result = await Issue.updateMany(
    { status: 'ignored', ignoredUntil: { $ne: null, $lte: now } },
    { $set: { status: 'unresolved', ignoredUntil: null, ignoredUntilCount: null } },
  );
  return result.modifiedCount;
}

export function issueJsonOf(issue: IssueDoc): z.infer<typeof issueJson> {
  const ignored = issue.status === 'ignored';
  return {
    id: issue._id.toHexString(),
    project_id: issue.projectId.toHexString(),
    title: issue.title,
    culprit: issue.culprit ?? null,
    level: issue.level,
    platform: issue.platform ?? null,
    type: issue.errorType ?? null,
    value: issue.errorValue ?? null,
    status: issue.status,
    first_seen: issue.firstSeen.toISOString(),
    last_seen: issue.lastSeen.toISOString(),
    count: issue.eventCount,
    user_count: issue.userCount,
    environments: issue.environments,
    releases: issue.releases,
    resolved_at: issue.resolvedAt?.toISOString() ?? null,
    regressed_at: issue.regressedAt?.toISOString() ?? null,
    ignore: ignored ? { until: issue.ignoredUntil?.toISOString() ?? null, until_count: issue.ignoredUntilCount ?? null } : null,
  };
}

function frameJsonOf(frame: Record<string, unknown>) {
  const num = (value: unknown) => (typeof value === 'number' ? value : null);
  return {
    filename: str(frame.filename),
    abs_path: str(frame.abs_path),
    function: str(frame.function),
    module: str(frame.module),
    lineno: num(frame.lineno),
    colno: num(frame.colno),
    in_app: frame.in_app === true,
    context_line: str(frame.context_line),
  };
}

function eventJsonOf(doc: ErrorEventDoc): z.infer<typeof eventJson> {
  const event = obj(JSON.parse(doc.data)) ?? {};
  const sentry = event as SentryEventLike;
  const logentry = obj(event.logentry);
  const exceptions = exceptionsOf(sentry);
  return {
    event_id: doc.eventId,
    issue_id: doc.issueId?.toHexString() ?? null,
    timestamp: doc.timestamp.toISOString(),
    received_at: doc.receivedAt.toISOString(),
    level: doc.level,
    title: doc.title,
    message: str(logentry?.formatted) ?? str(logentry?.message) ?? str(event.message) ?? str(obj(event.message)?.formatted),
    platform: str(event.platform),
    environment: doc.environment ?? null,
    release: doc.release ?? null,
    transaction: str(event.transaction),
    user: obj(event.user),
    tags: tagsOf(event),
    exception: exceptions.map((exception, index) => ({
      type: str(exception.type),
      value: str(exception.value),
      mechanism: obj(exception.mechanism),
      // the newest exception's frames as grouping sees them; older ones as sent
      frames: (index === exceptions.length - 1 ? crashingFrames(sentry) : (exception.stacktrace?.frames ?? [])).map((frame) => frameJsonOf(frame as Record<string, unknown>)),
    })),
    contexts: obj(event.contexts) ?? {},
    request: obj(event.request),
    sdk: obj(event.sdk),
  };
}

export async function listIssues(scope: ViewScope, query: z.infer<typeof listIssuesQuery>) {
  const escaped = query.q?.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const filter = {
    ...scopeFilter(scope),
    lastSeen: { $gte: scope.from },
    firstSeen: { $lte: scope.to },
    ...(query.status && { status: query.status }),
    ...(query.environment && { environments: query.environment }),
    ...(query.release && { releases: query.release }),
    ...(query.level && { level: query.level }),
    ...(escaped && { $or: [{ title: { $regex: escaped, $options: 'i' } }, { culprit: { $regex: escaped, $options: 'i' } }] }),
  };
  const page = await paginate(Issue, filter, { sortField: issueSorts[query.sort], direction: -1, limit: query.limit, cursor: query.cursor });
  return { data: page.items.map((issue) => issueJsonOf(issue as IssueDoc)), next_cursor: page.nextCursor };
}

/** Another organisation's issue answers exactly like a missing one. */
async function findIssue(orgId: Types.ObjectId, issueId: string): Promise<IssueDoc> {
  const issue = await Issue.findOne({ _id: parseId(issueId, 'issue'), orgId }).lean<IssueDoc>();
  if (!issue) throw notFound('issue');
  return issue;
}

export async function getIssue(orgId: Types.ObjectId, issueId: string) {
  const issue = await findIssue(orgId, issueId);
  const latest = await ErrorEvent.findOne({ issueId: issue._id }).sort({ timestamp: -1, _id: -1 }).lean<ErrorEventDoc>();
  return { ...issueJsonOf(issue), latest_event: latest ? eventJsonOf(latest) : null };
}

export async function listIssueEvents(orgId: Types.ObjectId, issueId: string, options: { limit: number; cursor?: string | undefined }) {
  const issue = await findIssue(orgId, issueId);
  const page = await paginate(ErrorEvent, { issueId: issue._id }, { sortField: 'timestamp', direction: -1, ...options });
  return { data: page.items.map((doc) => eventJsonOf(doc as ErrorEventDoc)), next_cursor: page.nextCursor };
}

/** resolve → resolved, ignore → ignored (with optional conditions), reopen → unresolved; the same status again is a no-op. */
export async function updateIssueStatus(orgId: Types.ObjectId, issueId: string, body: z.infer<typeof updateIssueBody>, now = new Date()) {
  const issue = await findIssue(orgId, issueId);
  const cleared = { ignoredUntil: null, ignoredUntilCount: null };
  let set: Record<string, unknown>;
  switch (body.action) {
    case 'resolve':
      set = { status: 'resolved', resolvedAt: issue.status === 'resolved' ? issue.resolvedAt : now, ...cleared };
      break;
    case 'reopen':
      set = { status: 'unresolved', resolvedAt: null, ...cleared };
      break;
    case 'ignore': {
      const until = body.until ? new Date(body.until) : null;
      if (until && until <= now) throw new AppError('validation_failed', '`until` must be in the future', { details: [{ path: 'body.until', message: 'in the past' }] });
      set = { status: 'ignored', resolvedAt: null, ignoredUntil: until, ignoredUntilCount: body.until_count ? issue.eventCount + body.until_count : null };
      break;
    }
  }
  const updated = await Issue.findByIdAndUpdate(issue._id, { $set: set }, { returnDocument: 'after' }).lean<IssueDoc>();
  if (!updated) throw notFound('issue');
  return issueJsonOf(updated);
}
