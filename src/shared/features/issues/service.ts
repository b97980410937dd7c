import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { ErrorEventRecord, Stamped } from '../../telemetry/records.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { recordEndUser, type SentUser } from '../users/service.js';
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

async function upsertIssue(orgId: Types.ObjectId, projectId: Types.ObjectId, event: Record<string, unknown>, eventId: string, at: Date): Promise<IssueDoc> {
  const sentry = event as SentryEventLike;
  const grouping = groupingHash(sentry);
  const newest = exceptionsOf(sentry).at(-1);
  const environment = str(event.environment);
  const release = str(event.release);
  const update = {
    $setOnInsert: { orgId, groupingKind: grouping.kind, platform: str(event.platform), status: 'unresolved' },
    $set: {
      title: issueTitle(sentry),
      culprit: culprit(sentry),
      level: str(event.level) ?? 'error',
      errorType: str(newest?.type),
      errorValue: str(newest?.value),
      latestEventId: eventId,
    },
    $min: { firstSeen: at },
    $max: { lastSeen: at },
    $inc: { eventCount: 1 },
    $addToSet: { ...(environment && { environments: environment }), ...(release && { releases: release }) },
  };
  const upsert = () =>
    Issue.findOneAndUpdate({ projectId, hash: grouping.hash }, update, { upsert: true, returnDocument: 'after' }).lean<IssueDoc>();
  try {
    return (await upsert())!;
  } catch (error) {
    // Two workers creating the same issue at once: the loser's upsert now finds the winner's document.
    if (!isDuplicateKey(error)) throw error;
    return (await upsert())!;
  }
}

/**
 * CONTRACT.md's automatic transitions on a new event: a resolved issue regresses to unresolved; an
 * ignored one reopens once its time or count condition is passed. The status condition in each
 * update makes concurrent events flip an issue once.
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
 * Stores error events once per {project, event_id} and counts each into its issue once. An event is
 * stored first with no issue; it is marked with its issue only after the issue and user counts are
 * updated, so a retry after a crash finishes the work instead of skipping it.
 */
export async function ingestErrorEvents(items: Stamped<ErrorEventRecord>[], now = new Date()): Promise<void> {
  for (const { orgId: org, projectId: project, record } of items) {
    const orgId = new Types.ObjectId(org);
    const projectId = new Types.ObjectId(project);
    const at = new Date(record.timeMs);
    const event = record.event;
    const user = obj(event.user) as SentUser | null;
    try {
      await ErrorEvent.collection.insertOne({
        orgId,
        projectId,
        eventId: record.eventId,
        issueId: null,
        timestamp: at,
        receivedAt: now,
        level: str(event.level) ?? 'error',
        title: issueTitle(event as SentryEventLike),
        environment: str(event.environment),
        release: str(event.release),
        userKey: null,
        data: JSON.stringify(event),
      });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      const stored = await ErrorEvent.findOne({ projectId, eventId: record.eventId }, { issueId: 1 }).lean();
      if (stored?.issueId) continue; // already done
    }
    const issue = await upsertIssue(orgId, projectId, event, record.eventId, at);
    await applyEventTransitions(issue, now);
    const userKey = await recordEndUser(orgId, projectId, user ?? undefined, at);
    if (userKey) {
      try {
        await IssueUser.collection.insertOne({ issueId: issue._id, userKey });
        await Issue.updateOne({ _id: issue._id }, { $inc: { userCount: 1 } });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
    await ErrorEvent.updateOne({ projectId, eventId: record.eventId }, { $set: { issueId: issue._id, userKey } });
  }
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
