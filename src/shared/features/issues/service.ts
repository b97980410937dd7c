import { linkFrames } from '../integrations/service.js';
import { countIntoReleases } from '../releases/service.js';
import { openAlert, resolveAlertsAbout } from '../alerts/service.js';
import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { cursorId, decodeCursor, encodeCursor, paginate, parseId } from '../../paging.js';
import type { ErrorEventRecord, Stamped } from '../../telemetry/records.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { batchApplied, claimBatch, contentId, inParallel, insertNew, oneAtATime, PARALLEL_WRITES, updateEach } from '../../telemetry/storage.js';
import { recordEndUsers, userKeyOf, type SentUser } from '../users/service.js';
import type { Symbolicator } from '../artifacts/symbolicate.js';
import { crashingFrames, culprit, groupingHash, issueTitle, type SentryEventLike, type SentryExceptionLike } from './grouping.js';
import { ErrorEvent, EVENT_PAGE_SIZE, Issue, IssueUser, type ErrorEventDoc, type IssueDoc } from './model.js';
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
  _id: Types.ObjectId;
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  issueId: Types.ObjectId;
  eventId: string;
  at: Date;
  event: Record<string, unknown>;
  user: SentUser | undefined;
  userKey: string | null;
  hash: string;
  groupingKind: string;
}

/** An error event's `_id`: the same project and event id always address the same document. */
export const eventKey = (projectId: Types.ObjectId, eventId: string) => contentId('event', projectId.toHexString(), eventId);
/** An issue's `_id`: the same project and grouping hash always address the same issue. */
export const issueKey = (projectId: Types.ObjectId, hash: string) => contentId('issue', projectId.toHexString(), hash);

/** How far ahead of the server an event's own timestamp may be; beyond it the client's clock is wrong, as Relay judges. */
const FUTURE_TOLERANCE_MS = 60_000;

function prepare({ orgId, projectId, record }: Stamped<ErrorEventRecord>, now: Date): PreparedEvent {
  const event = record.event;
  const user = (obj(event.user) as SentUser | null) ?? undefined;
  const grouping = groupingHash(event as SentryEventLike);
  const project = new Types.ObjectId(projectId);
  return {
    key: `${projectId}:${record.eventId}`,
    _id: eventKey(project, record.eventId),
    orgId: new Types.ObjectId(orgId),
    projectId: project,
    issueId: issueKey(project, grouping.hash),
    eventId: record.eventId,
    at: new Date(record.timeMs > now.getTime() + FUTURE_TOLERANCE_MS ? now.getTime() : record.timeMs),
    event,
    user,
    userKey: userKeyOf(user),
    hash: grouping.hash,
    groupingKind: grouping.kind,
  };
}

// ---------------------------------------------------------------------------------------------
// Symbolication (features/artifacts): JavaScript frames resolved through uploaded source maps
// ---------------------------------------------------------------------------------------------

/** Before grouping, so that builds of the same code (different minified names and columns) group together. */
async function symbolicateBatch(items: Stamped<ErrorEventRecord>[], symbolicator: Symbolicator): Promise<Stamped<ErrorEventRecord>[]> {
  const out = [...items];
  const byProject = groupBy([...items.keys()], (index) => items[index]!.projectId);
  await inParallel([...byProject], PARALLEL_WRITES, async ([projectId, indexes]) => {
    const events = await symbolicator.symbolicate(new Types.ObjectId(projectId), indexes.map((index) => items[index]!.record.event));
    indexes.forEach((index, n) => (out[index] = { ...items[index]!, record: { ...items[index]!.record, event: events[n]! } }));
  });
  return out;
}

/** Events stored before their source map was uploaded are symbolicated when read, once it exists (the stored event is left as it is). */
async function readEvents(docs: ErrorEventDoc[], symbolicator: Symbolicator | undefined): Promise<Record<string, unknown>[]> {
  const stored = docs.map((doc) => obj(JSON.parse(doc.data)) ?? {});
  if (docs.length === 0) return stored;
  const events = symbolicator ? await symbolicator.symbolicate(docs[0]!.projectId, stored) : stored;
  await linkFrames(docs[0]!.projectId, events);
  return events;
}

/** An event's symbolication as the API shows it: null without JavaScript frames to resolve, else whether every one was. */
function symbolicationOf(event: Record<string, unknown>) {
  const frames = exceptionsOf(event as SentryEventLike).flatMap((exception) => exception.stacktrace?.frames ?? []);
  const marks = [...frames, ...((event as SentryEventLike).stacktrace?.frames ?? [])].flatMap((frame): Record<string, unknown>[] => {
    const mark = obj(obj(frame)?.symbolication);
    return mark ? [mark] : [];
  });
  if (marks.length === 0) return { symbolicated: null, symbolication_errors: [] };
  const errors = [...new Set(marks.flatMap((mark) => str(mark.reason) ?? []))];
  return { symbolicated: marks.every((mark) => mark.status === 'resolved'), symbolication_errors: errors };
}

/** The claim a batch makes once it has counted into every issue of its events. */
const ISSUES_COUNTED = 'issue-counts';

/**
 * A batch's id stays on the issues it counted into until it has counted into all of them and
 * claimed that (see ingestErrorEvents); the next batch counting into an issue then drops it in
 * the same write as its own count. This process remembers the batches it finished, so it drops
 * their ids without asking the store; past this many other ids on one issue, it asks the claims.
 */
const UNCHECKED_BATCHES = 16;
/**
 * Past twice this many ids still unfinished on one issue, the oldest are dropped: a guard against
 * ids left by batches that failed for good.
 */
const COUNTED_BATCHES_KEPT = 256;
/** How many finished batch ids this process remembers. */
const FINISHED_REMEMBERED = 10_000;
const finishedBatches = new Set<string>();

function rememberFinished(batchId: string): void {
  finishedBatches.add(batchId);
  if (finishedBatches.size > FINISHED_REMEMBERED) finishedBatches.delete(finishedBatches.values().next().value!);
}

/** The ids among `ids` of batches that may not have counted into all their issues yet. */
async function unfinished(ids: string[]): Promise<string[]> {
  const left = ids.filter((id) => !finishedBatches.has(id));
  if (left.length <= UNCHECKED_BATCHES) return left;
  const finished = new Set<string>();
  await inParallel(left, PARALLEL_WRITES, async (id) => {
    if (!(await batchApplied(id, ISSUES_COUNTED))) return;
    finished.add(id);
    rememberFinished(id);
  });
  const kept = left.filter((id) => !finished.has(id));
  return kept.length > 2 * COUNTED_BATCHES_KEPT ? kept.slice(-COUNTED_BATCHES_KEPT) : kept;
}

/** What a count needs to know of an issue before writing: its count (which every count changes) and the batches on it. */
type CountedState = Pick<IssueDoc, 'eventCount' | 'countedBatches'>;
const readCountedState = (id: Types.ObjectId) => Issue.findById(id, { eventCount: 1, countedBatches: 1 }).lean<CountedState>();

/**
 * What this process's last count left on an issue, so that the next batch into it plans its pages
 * without reading the issue first. Another process may have counted since: then the count's
 * condition fails, the issue is read, and the events are moved to the pages the count put them on.
 */
const knownIssues = new Map<string, { state: CountedState; at: number }>();
const KNOWN_ISSUES = 10_000;
/** How long what a count left is trusted instead of reading the issue. */
const KNOWN_FOR_MS = 60_000;

function know(id: Types.ObjectId, { eventCount, countedBatches }: CountedState): void {
  const key = id.toHexString();
  knownIssues.delete(key);
  knownIssues.set(key, { state: { eventCount, countedBatches }, at: Date.now() });
  if (knownIssues.size > KNOWN_ISSUES) knownIssues.delete(knownIssues.keys().next().value!);
}

async function countedState(id: Types.ObjectId): Promise<CountedState | null> {
  const known = knownIssues.get(id.toHexString());
  if (known && Date.now() - known.at < KNOWN_FOR_MS) return known.state;
  return readCountedState(id);
}

/** A count that did not land this many times in a row (other batches counting first each time) is an error. */
const COUNT_ATTEMPTS = 50;

/**
 * Counts a batch's events of one issue into it, once per batch: one write by the issue's derived
 * `_id` with the event and new-user counts, first/last seen, the newest event's details and the
 * ids of the batches counted into it and not yet finished, this one's added. The write is made
 * only if the issue's event count is still the one `known` read (on MongoDB updates are atomic; on
 * FerretDB the turn keeps others out), else the issue is read again. Answers the issue as counted
 * and whether this batch created it, or undefined when this batch was counted into it before (a retry).
 */
async function countIntoIssue(
  events: PreparedEvent[],
  newUsers: number,
  batchId: string,
  known: CountedState | null,
): Promise<{ issue: IssueDoc; created: boolean; before: number } | undefined> {
  const newest = events.reduce((a, b) => (b.at >= a.at ? b : a));
  const sentry = newest.event as SentryEventLike;
  const exception = exceptionsOf(sentry).at(-1);
  const environments = [...new Set(events.flatMap((e) => str(e.event.environment) ?? []))];
  const releases = [...new Set(events.flatMap((e) => str(e.event.release) ?? []))];
  const update = (countedBatches: string[], lastPage: number) => ({
    $setOnInsert: {
      orgId: newest.orgId,
      projectId: newest.projectId,
      hash: newest.hash,
      groupingKind: newest.groupingKind,
      platform: str(newest.event.platform),
      status: 'unresolved',
      // the release the issue first appeared in: a release's new issues
      firstRelease: str(events.reduce((a, b) => (b.at < a.at ? b : a)).event.release),
    },
    $set: {
      title: issueTitle(sentry),
      culprit: culprit(sentry),
      level: str(newest.event.level) ?? 'error',
      errorType: str(exception?.type),
      errorValue: str(exception?.value),
      latestEventId: newest.eventId,
      countedBatches,
    },
    $min: { firstSeen: events.reduce((a, b) => (b.at < a.at ? b : a)).at },
    $max: { lastSeen: newest.at, lastPage },
    $inc: { eventCount: events.length, userCount: newUsers, ...hourlyIncrements(events) },
    $addToSet: { environments: { $each: environments }, releases: { $each: releases } },
  });
  const id = newest.issueId;
  return oneAtATime(Issue.collection.collectionName, id, async () => {
    let state = known;
    for (let attempt = 1; ; attempt++) {
      if (state?.countedBatches.includes(batchId)) return undefined;
      const counted = [...(state ? await unfinished(state.countedBatches) : []), batchId];
      const before = state?.eventCount ?? 0;
      const lastPage = pageOf(before + events.length);
      try {
        // An issue not there when read is created by an upsert that cannot match one made since (every issue has
        // countedBatches): that meets its `_id`, and the issue is read again.
        const issue = state
          ? await Issue.findOneAndUpdate({ _id: id, eventCount: state.eventCount }, update(counted, lastPage), { returnDocument: 'after' }).lean<IssueDoc>()
          : await Issue.findOneAndUpdate({ _id: id, countedBatches: { $exists: false } }, update(counted, lastPage), { upsert: true, returnDocument: 'after' }).lean<IssueDoc>();
        if (issue) {
          know(id, issue);
          return { issue, created: !state, before };
        }
      } catch (error) {
        knownIssues.delete(id.toHexString());
        if (!isDuplicateKey(error)) throw error;
      }
      if (attempt === COUNT_ATTEMPTS) throw new Error(`issue ${id.toHexString()} changed under ${COUNT_ATTEMPTS} counts in a row`);
      state = await readCountedState(id);
    }
  });
}

const HOUR_MS = 3_600_000;
const hourKey = (hour: number) => `h${hour}`;

/** One `$inc` per hour the batch's events happened in: the issue's events over time. */
function hourlyIncrements(events: ReadonlyArray<{ at: Date }>): Record<string, number> {
  const increments: Record<string, number> = {};
  for (const { at } of events) {
    const path = `hourly.${hourKey(Math.floor(at.getTime() / HOUR_MS))}`;
    increments[path] = (increments[path] ?? 0) + 1;
  }
  return increments;
}

/** The issue's events per hour of the window (hours before the counts were kept read 0). */
export async function issueSeries(orgId: Types.ObjectId, issueId: string, window: { from: Date; to: Date }) {
  const issue = await findIssue(orgId, issueId);
  const hourly = (issue.hourly ?? {}) as Record<string, number>;
  const data = [];
  for (let hour = Math.floor(window.from.getTime() / HOUR_MS); hour <= Math.floor(window.to.getTime() / HOUR_MS); hour++) {
    data.push({ time: new Date(hour * HOUR_MS).toISOString(), events: hourly[hourKey(hour)] ?? 0 });
  }
  return { step_seconds: 3600 as const, data };
}

/**
 * CONTRACT.md's automatic transitions on new events: a resolved issue regresses to unresolved; an
 * ignored one reopens once its time or count condition is passed. The status condition in each
 * update makes concurrent batches flip an issue once.
 */
async function applyEventTransitions(issue: IssueDoc, now: Date): Promise<void> {
  const set = (status: IssueDoc['status'], fields: Record<string, unknown>) =>
    oneAtATime(Issue.collection.collectionName, issue._id, () => Issue.updateOne({ _id: issue._id, status }, { $set: { status: 'unresolved', ...fields } }));
  if (issue.status === 'resolved') {
    const flipped = await set('resolved', { regressedAt: now, resolvedAt: null });
    if (flipped.modifiedCount === 1) await raiseIssueAlert(issue, 'issue.regression', now);
    return;
  }
  const countPassed = issue.ignoredUntilCount != null && issue.eventCount >= issue.ignoredUntilCount;
  const timePassed = issue.ignoredUntil != null && issue.ignoredUntil <= now;
  if (issue.status === 'ignored' && (countPassed || timePassed)) await set('ignored', { ignoredUntil: null, ignoredUntilCount: null });
}

/** A new issue, or one that regressed at `at`: one alert each, however often the batch is retried. */
async function raiseIssueAlert(issue: IssueDoc, kind: 'issue.new' | 'issue.regression', at: Date): Promise<void> {
  const id = issue._id.toHexString();
  await openAlert({
    key: kind === 'issue.new' ? `issue:${id}:new` : `issue:${id}:regression:${at.getTime()}`,
    orgId: issue.orgId,
    projectId: issue.projectId,
    kind,
    subject: { type: 'issue', id },
    title: `${kind === 'issue.new' ? 'New issue' : 'Regression'}: ${issue.title}`,
    details: { culprit: issue.culprit ?? null, level: issue.level, events: issue.eventCount },
    at,
  });
}

/** The pages of the events this batch stored on an earlier attempt (a retry counts them now, unless it did then). */
async function storedByBatch(batchId: string): Promise<Map<string, number>> {
  const stored = await ErrorEvent.find({ batchId }, { _id: 1, page: 1 }).lean();
  return new Map(stored.map((doc) => [doc._id.toHexString(), doc.page]));
}

const groupBy = <T>(values: T[], keyOf: (value: T) => string) => {
  const groups = new Map<string, T[]>();
  for (const value of values) {
    const group = groups.get(keyOf(value));
    if (group) group.push(value);
    else groups.set(keyOf(value), [value]);
  }
  return groups;
};

/** The page the n-th event counted into an issue is on (n from 1). */
const pageOf = (n: number) => Math.floor((n - 1) / EVENT_PAGE_SIZE);

/**
 * The page each event goes on: after the events its issue holds now, oldest first. Two batches
 * counting into one issue at once may put their events on the same page, so a page can hold somewhat
 * more than EVENT_PAGE_SIZE; each event is still on exactly one page.
 */
async function plannedPages(events: PreparedEvent[]): Promise<{ pages: Map<string, number>; issues: Map<string, CountedState | null> }> {
  const pages = new Map<string, number>();
  const issues = new Map<string, CountedState | null>();
  await inParallel([...groupBy(events, (e) => e.issueId.toHexString())], PARALLEL_WRITES, async ([issueId, ofIssue]) => {
    const issue = await countedState(ofIssue[0]!.issueId);
    issues.set(issueId, issue);
    const before = issue?.eventCount ?? 0;
    [...ofIssue].sort((a, b) => a.at.getTime() - b.at.getTime()).forEach((e, index) => pages.set(e._id.toHexString(), pageOf(before + index + 1)));
  });
  return { pages, issues };
}

/**
 * Stores a batch of error events once per {project, event_id} and counts each into its issue once,
 * with a handful of writes per batch rather than per event, every one addressed by a derived `_id`.
 * Events are stored first, on their planned page; each issue then counts the batch's events in one
 * write that also records the batch id, so a retry of the batch after a crash counts into each issue
 * exactly what it had not (a crash between the user records and the count leaves those users
 * uncounted). An event another batch stored is that batch's to count, so duplicates count once.
 */
export async function ingestErrorEvents(items: Stamped<ErrorEventRecord>[], batchId: string, now = new Date(), symbolicator?: Symbolicator): Promise<void> {
  const symbolicated = symbolicator ? await symbolicateBatch(items, symbolicator) : items;
  const prepared = [...new Map(symbolicated.map((item) => prepare(item, now)).map((e) => [e.key, e] as const)).values()];
  const { pages: planned, issues: read } = await plannedPages(prepared);
  const inserted = await insertNew(
    ErrorEvent.collection,
    prepared.map((e) => ({
      _id: e._id,
      orgId: e.orgId,
      projectId: e.projectId,
      eventId: e.eventId,
      issueId: e.issueId,
      page: planned.get(e._id.toHexString())!,
      timestamp: e.at,
      receivedAt: now,
      level: str(e.event.level) ?? 'error',
      title: issueTitle(e.event as SentryEventLike),
      environment: str(e.event.environment),
      release: str(e.event.release),
      userKey: e.userKey,
      traceId: str(obj(obj(e.event.contexts)?.trace)?.trace_id)?.toLowerCase() ?? null,
      batchId,
      data: JSON.stringify(e.event),
    })),
  );
  const pages = new Map(inserted.map((doc) => [doc._id.toHexString(), doc.page]));
  if (inserted.length < prepared.length) for (const [id, page] of await storedByBatch(batchId)) pages.set(id, page);
  const toCount = prepared.filter((e) => pages.has(e._id.toHexString()));
  if (toCount.length === 0) return;
  // Events stored on an earlier attempt: that attempt may have counted into every issue already.
  if (inserted.length < prepared.length && (await batchApplied(batchId, ISSUES_COUNTED))) return rememberFinished(batchId);
  // New (issue, user) pairs first, so each issue's user count moves in the same write as its event count.
  await recordEndUsers(toCount.map((e) => ({ orgId: e.orgId, projectId: e.projectId, user: e.user, seenAt: e.at })));
  const affected = [
    ...new Map(
      toCount
        .filter((e) => e.userKey)
        .map((e) => [`${e.issueId.toHexString()}:${e.userKey}`, { _id: contentId('issue-user', e.issueId.toHexString(), e.userKey), issueId: e.issueId, userKey: e.userKey! }]),
    ).values(),
  ];
  const newUsers = groupBy(await insertNew(IssueUser.collection, affected), (pair) => pair.issueId.toHexString());

  await inParallel([...groupBy(toCount, (e) => e.issueId.toHexString())], PARALLEL_WRITES, async ([issueId, events]) => {
    const counted = await countIntoIssue(events, newUsers.get(issueId)?.length ?? 0, batchId, read.get(issueId) ?? null);
    if (!counted) return;
    const { issue, created, before } = counted;
    // counted after other batches than planned: the events go on the pages that count put them on
    const moved = [...events]
      .sort((a, b) => a.at.getTime() - b.at.getTime())
      .flatMap((e, index) => (pageOf(before + index + 1) === pages.get(e._id.toHexString()) ? [] : [{ updateOne: { filter: { _id: e._id }, update: { $set: { page: pageOf(before + index + 1) } } } }]));
    await updateEach(ErrorEvent.collection, moved);
    if (created) await raiseIssueAlert(issue, 'issue.new', now);
    // a batch arriving late with the issue's earliest event: the release it first appeared in is this event's
    const earliest = events.reduce((a, b) => (b.at < a.at ? b : a));
    const release = str(earliest.event.release);
    if (issue.firstSeen.getTime() === earliest.at.getTime() && (issue.firstRelease ?? null) !== release) {
      await oneAtATime(Issue.collection.collectionName, issue._id, () => Issue.updateOne({ _id: issue._id, firstSeen: earliest.at }, { $set: { firstRelease: release } }));
    }
    await applyEventTransitions(issue, now);
  });
  // From now on a retry counts nothing again, and later counts drop this batch's id from its issues.
  // `$inc` cannot tell a retry, so the release rollups take the batch's events under the same claim:
  // once, or not at all if the worker dies right after claiming.
  if (await claimBatch(batchId, ISSUES_COUNTED)) {
    await countIntoReleases(toCount.map((e) => ({ orgId: e.orgId, projectId: e.projectId, atMs: e.at.getTime(), release: str(e.event.release), environment: str(e.event.environment), counts: { errorEvents: 1 } })));
  }
  rememberFinished(batchId);
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
  const lines = (value: unknown) => (Array.isArray(value) ? value.filter((line): line is string => typeof line === 'string') : []);
  const symbolication = obj(frame.symbolication);
  const minified = obj(frame.minified);
  return {
    filename: str(frame.filename),
    abs_path: str(frame.abs_path),
    function: str(frame.function),
    module: str(frame.module),
    lineno: num(frame.lineno),
    colno: num(frame.colno),
    in_app: frame.in_app === true,
    context_line: str(frame.context_line),
    pre_context: lines(frame.pre_context),
    post_context: lines(frame.post_context),
    symbolicated: symbolication ? symbolication.status === 'resolved' : null,
    symbolication_error: str(symbolication?.reason),
    source_map: str(symbolication?.source_map),
    source_url: str(frame.source_url),
    minified: minified
      ? { filename: str(minified.filename), abs_path: str(minified.abs_path), function: str(minified.function), lineno: num(minified.lineno), colno: num(minified.colno) }
      : null,
  };
}

/** A breadcrumb's time: Sentry sends epoch seconds (with fractions) or ISO-8601 text. */
const crumbTime = (value: unknown) => {
  const time = typeof value === 'number' ? new Date(value * 1000) : typeof value === 'string' ? new Date(value) : undefined;
  return time && !Number.isNaN(time.getTime()) ? time.toISOString() : null;
};

/** Sentry's breadcrumbs, a list or `{values: [...]}`, oldest first; the newest 100 (the SDKs' own default). */
function breadcrumbsOf(event: Record<string, unknown>) {
  const crumbs = Array.isArray(event.breadcrumbs) ? event.breadcrumbs : obj(event.breadcrumbs)?.values;
  if (!Array.isArray(crumbs)) return [];
  return crumbs.slice(-100).flatMap((value) => {
    const crumb = obj(value);
    if (!crumb) return [];
    return [{ timestamp: crumbTime(crumb.timestamp), type: str(crumb.type), category: str(crumb.category), level: str(crumb.level), message: str(crumb.message), data: obj(crumb.data) }];
  });
}

function eventJsonOf(doc: ErrorEventDoc, event: Record<string, unknown> = obj(JSON.parse(doc.data)) ?? {}): z.infer<typeof eventJson> {
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
    breadcrumbs: breadcrumbsOf(event),
    exception: exceptions.map((exception, index) => ({
      type: str(exception.type),
      value: str(exception.value),
      mechanism: obj(exception.mechanism),
      // the newest exception's frames as grouping sees them; older ones as sent
      frames: (index === exceptions.length - 1 ? crashingFrames(sentry) : (exception.stacktrace?.frames ?? [])).map((frame) => frameJsonOf(frame as Record<string, unknown>)),
    })),
    contexts: obj(event.contexts) ?? {},
    extra: obj(event.extra) ?? {},
    request: obj(event.request),
    sdk: obj(event.sdk),
    ...symbolicationOf(event),
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
  const page = await paginate(Issue, filter, { sortField: issueSorts[query.sort], direction: -1, limit: query.limit, cursor: query.cursor, projection: { countedBatches: 0, hourly: 0 } });
  return { data: page.items.map((issue) => issueJsonOf(issue as IssueDoc)), next_cursor: page.nextCursor };
}

/** Another organisation's issue answers exactly like a missing one. */
async function findIssue(orgId: Types.ObjectId, issueId: string): Promise<IssueDoc> {
  const issue = await Issue.findOne({ _id: parseId(issueId, 'issue'), orgId }).lean<IssueDoc>();
  if (!issue) throw notFound('issue');
  return issue;
}

/** After this many empty pages in a row, the older ones are gone (retention removes the oldest first). */
const MAX_EMPTY_PAGES = 20;

/**
 * An issue's occurrences, newest first: page by page from the newest (each page one equality lookup),
 * and within a page by the events' own time. The cursor names the page and the last event returned.
 */
async function occurrences(issue: IssueDoc, limit: number, cursor?: string): Promise<{ events: ErrorEventDoc[]; nextCursor: string | null }> {
  let page = issue.lastPage;
  let after: { time: Date; id: Types.ObjectId } | undefined;
  if (cursor) {
    const [cursorPage, time, id] = decodeCursor(cursor, 3);
    if (!Number.isInteger(cursorPage) || !(time instanceof Date)) throw new AppError('invalid_request', 'cursor is not one this API issued');
    page = Math.min(page, cursorPage as number);
    after = { time, id: cursorId(id) };
  }
  const newestFirst = (a: ErrorEventDoc, b: ErrorEventDoc) => b.timestamp.getTime() - a.timestamp.getTime() || b._id.toHexString().localeCompare(a._id.toHexString());
  const isAfter = (doc: ErrorEventDoc) => !after || doc.timestamp < after.time || (doc.timestamp.getTime() === after.time.getTime() && doc._id.toHexString() < after.id.toHexString());
  const found: (ErrorEventDoc & { page: number })[] = [];
  for (let empty = 0; page >= 0 && found.length <= limit && empty < MAX_EMPTY_PAGES; page--) {
    const docs = (await ErrorEvent.find({ issueId: issue._id, page }).lean<ErrorEventDoc[]>()).sort(newestFirst).filter(isAfter);
    empty = docs.length === 0 ? empty + 1 : 0;
    for (const doc of docs) found.push({ ...doc, page });
    after = undefined;
  }
  const events = found.slice(0, limit);
  const last = events.at(-1);
  return { events, nextCursor: found.length > limit && last ? encodeCursor([last.page, last.timestamp, last._id.toHexString()]) : null };
}

export async function getIssue(orgId: Types.ObjectId, issueId: string, symbolicator?: Symbolicator) {
  const issue = await findIssue(orgId, issueId);
  const [latest] = (await occurrences(issue, 1)).events;
  const [event] = latest ? await readEvents([latest], symbolicator) : [];
  return { ...issueJsonOf(issue), latest_event: latest ? eventJsonOf(latest, event) : null };
}

export async function listIssueEvents(orgId: Types.ObjectId, issueId: string, options: { limit: number; cursor?: string | undefined }, symbolicator?: Symbolicator) {
  const issue = await findIssue(orgId, issueId);
  const page = await occurrences(issue, options.limit, options.cursor);
  const events = await readEvents(page.events, symbolicator);
  return { data: page.events.map((doc, index) => eventJsonOf(doc, events[index])), next_cursor: page.nextCursor };
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
  const updated = await oneAtATime(Issue.collection.collectionName, issue._id, () => Issue.findByIdAndUpdate(issue._id, { $set: set }, { returnDocument: 'after' }).lean<IssueDoc>());
  if (!updated) throw notFound('issue');
  if (updated.status === 'resolved') await resolveAlertsAbout(orgId, { type: 'issue', id: updated._id.toHexString() }, now);
  return issueJsonOf(updated);
}
