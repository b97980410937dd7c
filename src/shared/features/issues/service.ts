import { linkFrames } from '../integrations/service.js';
import { resolveAlertsAbout } from '../alerts/service.js';
import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { cursorId, decodeCursor, encodeCursor, paginate, parseId } from '../../paging.js';
import { oneAtATime } from '../../telemetry/storage.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import type { Symbolicator } from '../artifacts/symbolicate.js';
import { crashingFrames, exceptionsOf, type SentryEventLike } from './grouping.js';
import { ErrorEvent, EVENT_PAGE_SIZE, HOUR_MS, hourKey, Issue, type ErrorEventDoc, type IssueDoc } from './model.js';
import { issueSorts, type eventJson, type issueJson, type listIssuesQuery, type updateIssueBody } from './schemas.js';
import { obj, str } from './values.js';

/** Sentry sends tags as an object or as [key, value] pairs. */
function tagsOf(event: Record<string, unknown>): Record<string, string> {
  const tags = event.tags;
  const pairs = Array.isArray(tags) ? tags : Object.entries(obj(tags) ?? {});
  return Object.fromEntries(
    pairs.flatMap((pair) => (Array.isArray(pair) && pair.length === 2 && typeof pair[0] === 'string' && pair[1] != null ? [[pair[0], String(pair[1])]] : [])),
  );
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

/** Pages past the issue's counted one looked for at once, after the first: a busy issue's events wait for their count a few pages ahead. */
const PAGES_PROBED_TOGETHER = 4;

/**
 * The issue's newest page: the one its count reached, or a later one holding events stored and not
 * counted yet. The page after the counted one is looked for alone (at a quiet issue it is not
 * there); past it, several pages at a time, so a read does not wait a round trip per page.
 */
async function newestPage(issue: IssueDoc): Promise<number> {
  const exists = (page: number) => ErrorEvent.exists({ issueId: issue._id, page });
  if (!(await exists(issue.lastPage + 1))) return issue.lastPage;
  for (let from = issue.lastPage + 2; ; from += PAGES_PROBED_TOGETHER) {
    const found = await Promise.all(Array.from({ length: PAGES_PROBED_TOGETHER }, (_, k) => exists(from + k)));
    const missing = found.findIndex((there) => !there);
    if (missing !== -1) return from + missing - 1;
  }
}

/**
 * An issue's occurrences, newest first: page by page from the newest (each page one equality lookup),
 * and within a page by the events' own time. The cursor names the page and the last event returned.
 */
async function occurrences(issue: IssueDoc, limit: number, cursor?: string): Promise<{ events: ErrorEventDoc[]; nextCursor: string | null }> {
  let page: number;
  let after: { time: Date; id: Types.ObjectId } | undefined;
  if (cursor) {
    const [cursorPage, time, id] = decodeCursor(cursor, 3);
    if (!Number.isInteger(cursorPage) || !(time instanceof Date)) throw new AppError('invalid_request', 'cursor is not one this API issued');
    // the cursor's page is at or before the newest one: the pages after it are not read
    page = cursorPage as number;
    after = { time, id: cursorId(id) };
  } else page = await newestPage(issue);
  const newestFirst = (a: ErrorEventDoc, b: ErrorEventDoc) => b.timestamp.getTime() - a.timestamp.getTime() || b._id.toHexString().localeCompare(a._id.toHexString());
  const isAfter = (doc: ErrorEventDoc) => !after || doc.timestamp < after.time || (doc.timestamp.getTime() === after.time.getTime() && doc._id.toHexString() < after.id.toHexString());
  const found: (ErrorEventDoc & { page: number })[] = [];
  // the first page is taken as half full, the rest as full: a round reads as many pages at once as that says the answer needs
  let pages = Math.ceil((limit + 1) / EVENT_PAGE_SIZE + 0.5);
  for (let empty = 0; page >= 0 && found.length <= limit && empty < MAX_EMPTY_PAGES; ) {
    const round = Array.from({ length: Math.min(pages, page + 1) }, (_, k) => page - k);
    const read = await Promise.all(round.map((n) => ErrorEvent.find({ issueId: issue._id, page: n }).lean<ErrorEventDoc[]>()));
    for (const [k, docs] of read.entries()) {
      if (found.length > limit || empty >= MAX_EMPTY_PAGES) break;
      const listed = docs.sort(newestFirst).filter(isAfter);
      empty = listed.length === 0 ? empty + 1 : 0;
      for (const doc of listed) found.push({ ...doc, page: round[k]! });
      after = undefined;
    }
    page -= round.length;
    pages = Math.ceil((limit + 1 - found.length) / EVENT_PAGE_SIZE);
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
