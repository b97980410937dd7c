/**
 * The write side of issues: a flush of error events from one or more telemetry batches stored once
 * per {project, event_id} and grouped into issues, then counted into each issue once per batch by a
 * count that takes every flush placed meanwhile, with one write per issue and per rollup document
 * however many flushes and batches it holds.
 */
import { Types } from 'mongoose';
import { isDuplicateKey } from '../../errors.js';
import type { ErrorEventRecord, RecordBatch, Stamped } from '../../telemetry/records.js';
import { groupCommit } from '../../telemetry/group-commit.js';
import { batchApplied, claimBatches, contentId, groupBy, inParallel, insertNew, notePending, oneAtATime, PARALLEL_WRITES, pendingBefore, settlePending, updateEach } from '../../telemetry/storage.js';
import { openAlert, openAlerts, type AlertInput } from '../alerts/service.js';
import type { Symbolicator } from '../artifacts/symbolicate.js';
import { countIntoReleases } from '../releases/service.js';
import { recordEndUsers, userKeyOf, type SentUser } from '../users/service.js';
import { culprit, exceptionsOf, groupingHash, issueTitle, type SentryEventLike } from './grouping.js';
import { ErrorEvent, EVENT_PAGE_SIZE, HOUR_MS, hourKey, Issue, IssueUser, type IssueDoc } from './model.js';
import { obj, str } from './values.js';


/**
 * What an issue takes from an event when the event is counted into it: the fields it shows of its
 * newest event, and the release and environment it was seen in. A placed event keeps only these
 * until its count, not the event itself (several kilobytes once parsed).
 */
interface IssueFacts {
  title: string;
  culprit: string | null;
  level: string;
  platform: string | null;
  errorType: string | null;
  errorValue: string | null;
  release: string | null;
  environment: string | null;
}

function issueFactsOf(event: Record<string, unknown>): IssueFacts {
  const sentry = event as SentryEventLike;
  const exception = exceptionsOf(sentry).at(-1);
  return {
    title: issueTitle(sentry),
    culprit: culprit(sentry),
    level: str(event.level) ?? 'error',
    platform: str(event.platform),
    errorType: str(exception?.type),
    errorValue: str(exception?.value),
    release: str(event.release),
    environment: str(event.environment),
  };
}

interface PreparedEvent {
  key: string;
  batchId: string;
  _id: Types.ObjectId;
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  issueId: Types.ObjectId;
  eventId: string;
  at: Date;
  event: Record<string, unknown>;
  facts: IssueFacts;
  user: SentUser | undefined;
  userKey: string | null;
  hash: string;
  groupingKind: string;
}

/** An event stored on its page and waiting to be counted: what its count needs, without the event. */
type PlacedEvent = Omit<PreparedEvent, 'event'> & { page: number };

/** An error event's `_id`: the same project and event id always address the same document. */
export const eventKey = (projectId: Types.ObjectId, eventId: string) => contentId('event', projectId.toHexString(), eventId);
/** An issue's `_id`: the same project and grouping hash always address the same issue. */
export const issueKey = (projectId: Types.ObjectId, hash: string) => contentId('issue', projectId.toHexString(), hash);

/** How far ahead of the server an event's own timestamp may be; beyond it the client's clock is wrong, as Relay judges. */
const FUTURE_TOLERANCE_MS = 60_000;

function prepare({ orgId, projectId, record }: Stamped<ErrorEventRecord>, batchId: string, now: Date): PreparedEvent {
  const event = record.event;
  const user = (obj(event.user) as SentUser | null) ?? undefined;
  const grouping = groupingHash(event as SentryEventLike);
  const project = new Types.ObjectId(projectId);
  return {
    key: `${projectId}:${record.eventId}`,
    batchId,
    _id: eventKey(project, record.eventId),
    orgId: new Types.ObjectId(orgId),
    projectId: project,
    issueId: issueKey(project, grouping.hash),
    eventId: record.eventId,
    at: new Date(record.timeMs > now.getTime() + FUTURE_TOLERANCE_MS ? now.getTime() : record.timeMs),
    event,
    facts: issueFactsOf(event),
    user,
    userKey: userKeyOf(user),
    hash: grouping.hash,
    groupingKind: grouping.kind,
  };
}

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
const knownIssues = new Map<string, { state: CountedState | null; at: number }>();
const KNOWN_ISSUES = 10_000;
/** How long what a count left is trusted instead of reading the issue. */
const KNOWN_FOR_MS = 60_000;

/** Remembers an issue's state, or (null) that it is not there yet: the count that creates it finds out if another process did first. */
function know(id: Types.ObjectId, state: CountedState | null): void {
  const key = id.toHexString();
  knownIssues.delete(key);
  knownIssues.set(key, { state: state && { eventCount: state.eventCount, countedBatches: state.countedBatches }, at: Date.now() });
  if (knownIssues.size > KNOWN_ISSUES) knownIssues.delete(knownIssues.keys().next().value!);
}

/** Drops what this process knew of an issue and its uncounted events. */
function forget(id: Types.ObjectId): void {
  knownIssues.delete(id.toHexString());
  placedUncounted.delete(id.toHexString());
}

/**
 * Past this many issues of one project that this process does not know in one flush or count, their
 * states are read in one find (on FerretDB, which filters a list of ids itself, one pass over the
 * project's issues) instead of one lookup each: a burst of new issues, as a release that breaks
 * everywhere sends, otherwise cost the flush a round trip per issue before any of its events was
 * listed (500 new issues held one flush 8.4 s during the bench's burst).
 */
const READ_TOGETHER_FROM = 32;

/**
 * What this process knows of these issues' states (null: not there yet), keyed by issue id, and the
 * issues it must read; taken in one step, beside the events placed after each (see countedInto).
 */
function knownStates<T extends { issueId: Types.ObjectId }>(issues: T[]): { states: Map<string, CountedState | null>; unknown: T[] } {
  const states = new Map<string, CountedState | null>();
  const unknown: T[] = [];
  for (const issue of issues) {
    const known = knownIssues.get(issue.issueId.toHexString());
    if (known && Date.now() - known.at < KNOWN_FOR_MS) states.set(issue.issueId.toHexString(), known.state);
    else unknown.push(issue);
  }
  return { states, unknown };
}

/**
 * Reads the states of issues this process does not know, keyed by issue id: one lookup each, or
 * together for a project with READ_TOGETHER_FROM or more of them. An issue that is not there is
 * remembered as such (null); the count that creates it finds out if another process did first.
 */
async function readCountedStates(issues: { issueId: Types.ObjectId; projectId: Types.ObjectId }[]): Promise<Map<string, CountedState | null>> {
  const states = new Map<string, CountedState | null>();
  const byProject = [...groupBy(issues, (issue) => issue.projectId.toHexString()).values()];
  await Promise.all([
    inParallel(
      byProject.filter((ofProject) => ofProject.length < READ_TOGETHER_FROM).flat(),
      PARALLEL_WRITES,
      async ({ issueId }) => void states.set(issueId.toHexString(), await readCountedState(issueId)),
    ),
    ...byProject
      .filter((ofProject) => ofProject.length >= READ_TOGETHER_FROM)
      .map(async (ofProject) => {
        const ids = ofProject.map(({ issueId }) => issueId);
        const found = await Issue.find({ projectId: ofProject[0]!.projectId, _id: { $in: ids } }, { eventCount: 1, countedBatches: 1 }).lean<(CountedState & { _id: Types.ObjectId })[]>();
        for (const { _id, ...state } of found) states.set(_id.toHexString(), state);
      }),
  ]);
  for (const { issueId } of issues) {
    if (states.get(issueId.toHexString())) continue;
    states.set(issueId.toHexString(), null);
    know(issueId, null);
  }
  return states;
}

/** A count that did not land this many times in a row (other batches counting first each time) is an error. */
const COUNT_ATTEMPTS = 50;

/**
 * The update that counts `events` into their issue: the event and new-user counts, first/last seen,
 * the newest event's details and the batches counted into it (see countIntoIssue).
 */
function issueUpdate(events: PlacedEvent[], newUsers: number, countedBatches: string[], lastPage: number) {
  const newest = events.reduce((a, b) => (b.at >= a.at ? b : a));
  const earliest = events.reduce((a, b) => (b.at < a.at ? b : a));
  const { facts } = newest;
  return {
    $setOnInsert: {
      orgId: newest.orgId,
      projectId: newest.projectId,
      hash: newest.hash,
      groupingKind: newest.groupingKind,
      platform: facts.platform,
      status: 'unresolved',
      // the release the issue first appeared in: a release's new issues
      firstRelease: earliest.facts.release,
    },
    $set: {
      title: facts.title,
      culprit: facts.culprit,
      level: facts.level,
      errorType: facts.errorType,
      errorValue: facts.errorValue,
      latestEventId: newest.eventId,
      countedBatches,
    },
    $min: { firstSeen: earliest.at },
    $max: { lastSeen: newest.at, lastPage },
    $inc: { eventCount: events.length, userCount: newUsers, ...hourlyIncrements(events) },
    $addToSet: {
      environments: { $each: [...new Set(events.flatMap((e) => e.facts.environment ?? []))] },
      releases: { $each: [...new Set(events.flatMap((e) => e.facts.release ?? []))] },
    },
  };
}

/** The issue an upsert of `update` would create, with the schema's defaults. */
function issueCreatedBy(id: Types.ObjectId, update: ReturnType<typeof issueUpdate>): IssueDoc {
  const { eventCount, userCount, ...increments } = update.$inc;
  const hourly = Object.fromEntries(Object.entries(increments).map(([path, count]) => [path.slice('hourly.'.length), count]));
  const fields = { _id: id, ...update.$setOnInsert, ...update.$set, ...update.$min, ...update.$max, eventCount, userCount, hourly };
  return new Issue({ ...fields, environments: update.$addToSet.environments.$each, releases: update.$addToSet.releases.$each }).toObject() as IssueDoc;
}

type IssueCount<E> = { issue: IssueDoc; created: boolean; before: number; events: E[] };

/** End users new to an issue, by `issueId:batchId`: a batch counts the users it brought into the issue along with its events. */
type NewUsers = Map<string, number>;

/** The users new to the issue of `events` (all of one issue) that their batches brought. */
const newUsersOf = (newUsers: NewUsers, events: PlacedEvent[]) =>
  [...new Set(events.map((e) => e.batchId))].reduce((sum, batchId) => sum + (newUsers.get(`${events[0]!.issueId.toHexString()}:${batchId}`) ?? 0), 0);

/**
 * Creates the issues of `groups` (events by issue id) that were not there when read, in one insert:
 * each as countIntoIssue's upsert would have, which costs FerretDB one update (a read and a write)
 * per issue where an insert is a fraction of that. Answers the counts made, by issue id; an issue
 * created meanwhile by another process is left out, for countIntoIssue.
 */
async function createIssues<E extends PlacedEvent>(groups: [string, E[]][], newUsers: NewUsers): Promise<Map<string, IssueCount<E>>> {
  const counts = new Map(
    groups.map(([issueId, events]) => {
      const batches = [...new Set(events.map((e) => e.batchId))];
      const issue = issueCreatedBy(events[0]!.issueId, issueUpdate(events, newUsersOf(newUsers, events), batches, pageOf(events.length)));
      return [issueId, { issue, created: true, before: 0, events }] as const;
    }),
  );
  const inserted = new Set((await insertNew(Issue.collection, [...counts.values()].map(({ issue }) => issue))).map((issue) => issue._id.toHexString()));
  for (const [issueId, { issue, events }] of counts) {
    if (inserted.has(issueId)) countedInto(issue, events);
    else counts.delete(issueId);
  }
  return counts;
}

/**
 * Counts a count's events of one issue into it (see countPlaced), once per batch: one write by the
 * issue's derived `_id` with the event and new-user counts, first/last seen, the newest event's
 * details and the ids of the batches counted into it and not yet finished, these batches' added. Events of a batch
 * already counted into the issue (a retry) are left out. The write is made only if the issue's
 * event count is still the one `known` read (on MongoDB updates are atomic; on FerretDB the turn
 * keeps others out), else the issue is read again. Answers the issue as counted, the events counted
 * (in the order given) and whether this count created it, or undefined when every batch was counted into it before.
 */
async function countIntoIssue<E extends PlacedEvent>(
  all: E[],
  newUsers: NewUsers,
  known: CountedState | null,
): Promise<IssueCount<E> | undefined> {
  const id = all[0]!.issueId;
  return oneAtATime(Issue.collection.collectionName, id, async () => {
    let state = known;
    for (let attempt = 1; ; attempt++) {
      const done = new Set(state?.countedBatches);
      const events = all.filter((e) => !done.has(e.batchId));
      if (events.length === 0) {
        place(all, -1);
        return undefined;
      }
      const counted = [...(state ? await unfinished(state.countedBatches) : []), ...new Set(events.map((e) => e.batchId))];
      const before = state?.eventCount ?? 0;
      const lastPage = pageOf(before + events.length);
      try {
        // An issue not there when read is created by an upsert that cannot match one made since (every issue has
        // countedBatches): that meets its `_id`, and the issue is read again.
        const issue = state
          ? await Issue.findOneAndUpdate({ _id: id, eventCount: state.eventCount }, issueUpdate(events, newUsersOf(newUsers, events), counted, lastPage), { returnDocument: 'after' }).lean<IssueDoc>()
          : await Issue.findOneAndUpdate({ _id: id, countedBatches: { $exists: false } }, issueUpdate(events, newUsersOf(newUsers, events), counted, lastPage), { upsert: true, returnDocument: 'after' }).lean<IssueDoc>();
        if (issue) {
          countedInto(issue, all);
          return { issue, created: !state, before, events };
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

/** One `$inc` per hour the batch's events happened in: the issue's events over time. */
function hourlyIncrements(events: ReadonlyArray<{ at: Date }>): Record<string, number> {
  const increments: Record<string, number> = {};
  for (const { at } of events) {
    const path = `hourly.${hourKey(Math.floor(at.getTime() / HOUR_MS))}`;
    increments[path] = (increments[path] ?? 0) + 1;
  }
  return increments;
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
    if (flipped.modifiedCount === 1) await raiseRegressionAlert(issue, now);
    return;
  }
  const countPassed = issue.ignoredUntilCount != null && issue.eventCount >= issue.ignoredUntilCount;
  const timePassed = issue.ignoredUntil != null && issue.ignoredUntil <= now;
  if (issue.status === 'ignored' && (countPassed || timePassed)) await set('ignored', { ignoredUntil: null, ignoredUntilCount: null });
}

/** What an alert about a new issue, or one that regressed at `at`, says. */
function issueAlert(issue: IssueDoc, kind: 'issue.new' | 'issue.regression', at: Date): AlertInput {
  const id = issue._id.toHexString();
  return {
    key: kind === 'issue.new' ? `issue:${id}:new` : `issue:${id}:regression:${at.getTime()}`,
    orgId: issue.orgId,
    projectId: issue.projectId,
    kind,
    subject: { type: 'issue', id },
    title: `${kind === 'issue.new' ? 'New issue' : 'Regression'}: ${issue.title}`,
    details: { culprit: issue.culprit ?? null, level: issue.level, events: issue.eventCount },
    at,
  };
}

/** A regression at `at`: one alert, however often the batch is retried. */
const raiseRegressionAlert = (issue: IssueDoc, at: Date) => openAlert(issueAlert(issue, 'issue.regression', at));

/** New issues: one alert each, however often the batch is retried, opened together. */
const raiseNewIssueAlerts = (issues: IssueDoc[], at: Date) => openAlerts(issues.map((issue) => issueAlert(issue, 'issue.new', at)));

/** The pages of the events this batch stored on an earlier attempt (a retry counts them now, unless it did then). */
async function storedByBatch(batchId: string): Promise<Map<string, number>> {
  const stored = await ErrorEvent.find({ batchId }, { _id: 1, page: 1 }).lean();
  return new Map(stored.map((doc) => [doc._id.toHexString(), doc.page]));
}

/** The page the n-th event counted into an issue is on (n from 1). */
const pageOf = (n: number) => Math.floor((n - 1) / EVENT_PAGE_SIZE);

/**
 * Events this process stored and has not counted yet, per issue: the next flush plans its pages after
 * them, so that the count, which numbers an issue's events in the order they were placed, leaves
 * them where they are.
 */
const placedUncounted = new Map<string, number>();

function place(events: { issueId: Types.ObjectId }[], sign: 1 | -1): void {
  for (const [issueId, ofIssue] of groupBy(events, (e) => e.issueId.toHexString())) {
    const left = (placedUncounted.get(issueId) ?? 0) + sign * ofIssue.length;
    if (left > 0) placedUncounted.set(issueId, left);
    else placedUncounted.delete(issueId);
  }
}

/**
 * What a count left on an issue, and that `events` (all of it) no longer wait for a count, noted at
 * once: a flush planning its pages in between would otherwise count those events twice (in the
 * issue's count and as placed), skip a page, and leave its events past an empty page, where the
 * issue's event list does not look, until their own count moved them back.
 */
function countedInto(issue: IssueDoc, events: { issueId: Types.ObjectId }[]): void {
  know(issue._id, issue);
  place(events, -1);
}

const byTime = (a: PreparedEvent, b: PreparedEvent) => a.at.getTime() - b.at.getTime();

/**
 * The page each event goes on: after the events its issue holds now and those this process placed
 * and has not counted yet, oldest first. Two processes counting into one issue at once may put their
 * events on the same page, so a page can hold somewhat more than EVENT_PAGE_SIZE; each event is
 * still on exactly one page.
 */
async function plannedPages(events: PreparedEvent[]): Promise<Map<string, number>> {
  const pages = new Map<string, number>();
  const groups = groupBy(events, (e) => e.issueId.toHexString());
  // an issue's state and the events placed after it are read together, without a turn of the event loop between
  const plan = (issueId: string, state: CountedState | null | undefined) => {
    const before = (state?.eventCount ?? 0) + (placedUncounted.get(issueId) ?? 0);
    [...groups.get(issueId)!].sort(byTime).forEach((e, index) => pages.set(e._id.toHexString(), pageOf(before + index + 1)));
  };
  const { states, unknown } = knownStates([...groups.values()].map((ofIssue) => ofIssue[0]!));
  for (const [issueId, state] of states) plan(issueId, state);
  for (const [issueId, state] of await readCountedStates(unknown)) plan(issueId, state);
  return pages;
}

/**
 * The (issue, end user) pairs this process knows are stored, so that a flush sends only the others:
 * FerretDB inserts a batch that meets a duplicate again one document at a time, and an issue's
 * users come back far more often than new ones appear.
 */
const storedPairs = new Set<string>();
const PAIRS_REMEMBERED = 50_000;

function rememberPair(id: string): void {
  storedPairs.delete(id);
  storedPairs.add(id);
  if (storedPairs.size > PAIRS_REMEMBERED) storedPairs.delete(storedPairs.values().next().value!);
}

/**
 * What a flush left to count: its events stored and not yet counted, oldest first per issue, each
 * issue's new end users, and the note that says so in the store until the count is done.
 */
interface Placed {
  events: PlacedEvent[];
  newUsers: NewUsers;
  now: Date;
  pending: Types.ObjectId;
}

/**
 * Stores the error events of one or more batches once per {project, event_id}, on their planned
 * page, where the issue's event list finds them at once, and answers with `counted`: a promise that
 * settles once they are counted into their issues (see countPlaced). An event another batch stored
 * is that batch's to count, so duplicates count once. A batch with events stored before (a retry)
 * counts them now, unless that attempt finished counting, which it says by its claim. Before it
 * answers, the batches left to count are noted in `pending_counts` (`noted`: the note of a lost
 * count being redone, see recountOrphaned), so a count lost with this process is redone from it.
 */
export async function placeErrorBatches(
  batches: RecordBatch<ErrorEventRecord>[],
  now = new Date(),
  symbolicator?: Symbolicator,
  noted?: Types.ObjectId,
): Promise<{ counted: Promise<void> }> {
  // a count far behind its placements holds the next flush back until it has caught up
  while (uncounted > UNCOUNTED_MAX && lastCount) await lastCount.catch(() => undefined);
  return placingFirst.place(() => placeFlush(batches, now, symbolicator, noted));
}

/**
 * Placing goes before counting. While this process places a flush's events, which a person waits to
 * see listed, a count under way counts one issue at a time instead of PARALLEL_WRITES, and takes up
 * the others again once no placement is under way: the two share the store, and a count of hundreds
 * of issues otherwise held every flush placed beside it (a job waited p50 0.6–1.2 s at half the
 * sustainable rate, 0.4–0.9 s with placing first; see performance.md). Once more than COUNT_BEHIND
 * placed events wait for their count, the count no longer gives way: under a steady load, where a
 * placement is nearly always under way, a count of hundreds of issues one at a time took 10 s and
 * more, and the events waiting grew until placing had to wait for the count.
 */
class PlacingFirst {
  private placing = 0;
  private ended: Promise<void> = Promise.resolve();
  private end = () => {};
  private counting = 0;

  async place<T>(placement: () => Promise<T>): Promise<T> {
    if (this.placing++ === 0) this.ended = new Promise((resolve) => (this.end = resolve));
    try {
      return await placement();
    } finally {
      if (--this.placing === 0) this.end();
    }
  }

  /** Counts into one issue: at once, unless a placement is under way, another issue is being counted and the count is not behind. */
  async count<T>(write: () => Promise<T>): Promise<T> {
    while (this.placing > 0 && this.counting >= 1 && uncounted <= COUNT_BEHIND) await this.ended;
    this.counting++;
    try {
      return await write();
    } finally {
      this.counting--;
    }
  }
}
const placingFirst = new PlacingFirst();

/** Stores a flush's error events on their pages and notes them for their count (see placeErrorBatches). */
async function placeFlush(
  batches: RecordBatch<ErrorEventRecord>[],
  now: Date,
  symbolicator: Symbolicator | undefined,
  noted: Types.ObjectId | undefined,
): Promise<{ counted: Promise<void> }> {
  const items = batches.flatMap(({ items }) => items);
  const batchIds = batches.flatMap(({ batchId, items }) => items.map(() => batchId));
  const symbolicated = symbolicator ? await symbolicateBatch(items, symbolicator) : items;
  const prepared = [...new Map(symbolicated.map((item, index) => prepare(item, batchIds[index]!, now)).map((e) => [e.key, e] as const)).values()].sort(byTime);
  const planned = await plannedPages(prepared);
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
      level: e.facts.level,
      title: e.facts.title,
      environment: e.facts.environment,
      release: e.facts.release,
      userKey: e.userKey,
      traceId: str(obj(obj(e.event.contexts)?.trace)?.trace_id)?.toLowerCase() ?? null,
      batchId: e.batchId,
      data: JSON.stringify(e.event),
    })),
  );
  const pages = new Map(inserted.map((doc) => [doc._id.toHexString(), doc.page]));
  const finished = new Set<string>();
  const retried = [...new Set(prepared.filter((e) => !pages.has(e._id.toHexString())).map((e) => e.batchId))];
  await inParallel(retried, PARALLEL_WRITES, async (batchId) => {
    for (const [id, page] of await storedByBatch(batchId)) pages.set(id, page);
    if (!(await batchApplied(batchId, ISSUES_COUNTED))) return;
    finished.add(batchId);
    rememberFinished(batchId);
  });
  const events = prepared.flatMap(({ event: _, ...e }): PlacedEvent[] => {
    const page = pages.get(e._id.toHexString());
    return page === undefined || finished.has(e.batchId) ? [] : [{ ...e, page }];
  });
  if (events.length === 0) return { counted: Promise.resolve() };
  // New (issue, user) pairs now, so each issue's user count moves in the same write as its event count.
  const again = new Set(retried.filter((batchId) => !finished.has(batchId)));
  const affected = [
    ...new Map(
      events
        .filter((e) => e.userKey)
        .map((e) => [`${e.issueId.toHexString()}:${e.userKey}`, { _id: contentId('issue-user', e.issueId.toHexString(), e.userKey), issueId: e.issueId, userKey: e.userKey!, batchId: e.batchId }]),
    ).values(),
  ].filter((pair) => !storedPairs.has(pair._id.toHexString()) || again.has(pair.batchId));
  // the pairs a batch counted again stored on its earlier attempt are still that batch's to count
  const brought: { issueId: Types.ObjectId; batchId: string }[] = [];
  await inParallel([...again], PARALLEL_WRITES, async (batchId) => {
    brought.push(...(await IssueUser.find({ batchId }, { issueId: 1, batchId: 1 }).lean<{ issueId: Types.ObjectId; batchId: string }[]>()));
  });
  brought.push(...(await insertNew(IssueUser.collection, affected)));
  const newUsers: NewUsers = new Map([...groupBy(brought, (pair) => `${pair.issueId.toHexString()}:${pair.batchId}`)].map(([key, pairs]) => [key, pairs.length]));
  for (const pair of affected) rememberPair(pair._id.toHexString());
  // the note goes in before the job that placed them completes: a count lost with this process is redone from it
  const pending = noted ?? (await notePending(ISSUES_COUNTED, [...new Set(events.map((e) => e.batchId))], now));
  place(events, 1);
  uncounted += events.length;
  const counted = countLater({ events, newUsers, now, pending }).finally(() => (uncounted -= events.length));
  lastCount = counted;
  return { counted };
}

/** Events placed by this process and not counted yet, and the count that takes the latest of them. */
let uncounted = 0;
let lastCount: Promise<void> | undefined;
/**
 * Past this many placed events waiting for their count, placing waits for the count (see
 * placeErrorBatches): a bound on the memory they hold (what a count needs of each, see IssueFacts)
 * and on how far issue counts trail the events listed. A count takes every event placed while the
 * one before it ran, with one write per issue, so under a steady load it trails by about two
 * counts' time whatever the rate.
 */
const UNCOUNTED_MAX = 50_000;
/** Past this many, the count no longer gives way to placing (see PlacingFirst). */
const COUNT_BEHIND = 5_000;

/** Settles once every count of the events this process placed has ended, for a worker that stops. */
export async function countsSettled(): Promise<void> {
  while (lastCount) {
    const last = lastCount;
    await last.catch(() => undefined);
    if (last === lastCount) lastCount = undefined;
  }
}

/**
 * Counts the error events of flushes whose count was lost (its worker died, or the store failed it):
 * each note older than `lostAfterMs` (WORKER_RECOUNT_AFTER_MS, several times the slowest count seen
 * under load) is rebuilt from the events its batches stored and counted as a retry would (the claims
 * and the batch ids on the issues keep what was counted from counting twice). Answers how many
 * batches it took up.
 */
export async function recountOrphaned(lostAfterMs: number, now = new Date()): Promise<number> {
  let taken = 0;
  for (const note of await pendingBefore(ISSUES_COUNTED, new Date(now.getTime() - lostAfterMs))) {
    const batches = await Promise.all(
      note.batchIds.map(async (batchId) => {
        const stored = await ErrorEvent.find({ batchId }, { orgId: 1, projectId: 1, eventId: 1, timestamp: 1, data: 1 }).lean();
        const items = stored.map((doc) => ({
          orgId: doc.orgId.toHexString(),
          projectId: doc.projectId.toHexString(),
          record: { eventId: doc.eventId, timeMs: doc.timestamp.getTime(), event: JSON.parse(doc.data) as Record<string, unknown> },
        }));
        return { batchId, items };
      }),
    );
    const { counted } = await placeErrorBatches(batches, now, undefined, note._id);
    await counted;
    // batches counted before (or events since removed) left nothing to count, and no count to drop the note
    await settlePending([note._id]);
    taken += note.batchIds.length;
  }
  return taken;
}

/**
 * Issue counts by group commit: one count runs at a time in this process, and takes every flush
 * placed while the one before it ran (waiting a moment more while the store is busy), so an issue
 * busy in many flushes gets one write for all of them. Events are stored (and listed) without
 * waiting for their count. A failed count leaves what this process knew of its issues wrong: the
 * next flush reads them again.
 */
const countLater = groupCommit(async (placed: Placed[]) => {
  try {
    await countPlaced(placed);
  } catch (error) {
    for (const { events } of placed) for (const e of events) forget(e.issueId);
    throw error;
  }
}, { gatherWhileBusy: true });

/**
 * Counts placed events into their issues once per batch, with one write per issue however many
 * flushes and batches it has events in, addressed by its derived `_id`: the event and new-user
 * counts, and the batch ids, so that a retry of a batch after a crash counts into each issue exactly
 * what it had not. Then the batches are claimed as counted. The release rollups and end users, plain
 * `$inc`s that cannot tell a retry, take each batch's events under that claim: once, or not at all if
 * the worker dies right after claiming (end users wait for `writeEndUsers`, see users/service).
 */
async function countPlaced(placed: Placed[]): Promise<void> {
  const now = placed.at(-1)!.now;
  const events = placed.flatMap((flush) => flush.events);
  const newUsers: NewUsers = new Map();
  for (const flush of placed) for (const [key, count] of flush.newUsers) newUsers.set(key, (newUsers.get(key) ?? 0) + count);
  const groups = [...groupBy(events, (e) => e.issueId.toHexString())];
  const { states, unknown } = knownStates(groups.map(([, ofIssue]) => ofIssue[0]!));
  for (const [issueId, state] of await readCountedStates(unknown)) states.set(issueId, state);
  // a failure here fails the count, and countLater forgets these issues' placed events
  const created = await createIssues(
    groups.filter(([issueId]) => states.get(issueId) === null),
    newUsers,
  );
  const newIssues: IssueDoc[] = [];
  await inParallel(groups, PARALLEL_WRITES, ([issueId, ofIssue]) => placingFirst.count(async () => {
    let counted = created.get(issueId);
    try {
      // not there when read, and there when created: another process created it meanwhile
      counted ??= await countIntoIssue(ofIssue, newUsers, states.get(issueId) === null ? await readCountedState(ofIssue[0]!.issueId) : states.get(issueId)!);
    } catch (error) {
      place(ofIssue, -1);
      throw error;
    }
    if (!counted) return;
    const { issue, created: isNew, before, events: countedEvents } = counted;
    // counted after other processes' events than planned: the events go on the pages that count put them on
    const moved = countedEvents.flatMap((e, index) => (pageOf(before + index + 1) === e.page ? [] : [{ updateOne: { filter: { _id: e._id }, update: { $set: { page: pageOf(before + index + 1) } } } }]));
    await updateEach(ErrorEvent.collection, moved);
    if (isNew) newIssues.push(issue);
    // a batch arriving late with the issue's earliest event: the release it first appeared in is this event's
    const earliest = countedEvents.reduce((a, b) => (b.at < a.at ? b : a));
    const release = earliest.facts.release;
    if (issue.firstSeen.getTime() === earliest.at.getTime() && (issue.firstRelease ?? null) !== release) {
      await oneAtATime(Issue.collection.collectionName, issue._id, () => Issue.updateOne({ _id: issue._id, firstSeen: earliest.at }, { $set: { firstRelease: release } }));
    }
    await applyEventTransitions(issue, now);
  }));
  await raiseNewIssueAlerts(newIssues, now);
  // From now on a retry counts nothing again, and later counts drop these batches' ids from their issues.
  const counting = [...new Set(events.map((e) => e.batchId))];
  const claimed = await claimBatches(counting, ISSUES_COUNTED, now);
  const once = events.filter((e) => claimed.has(e.batchId));
  recordEndUsers(once.map((e) => ({ orgId: e.orgId, projectId: e.projectId, user: e.user, seenAt: e.at })));
  await countIntoReleases(once.map((e) => ({ orgId: e.orgId, projectId: e.projectId, atMs: e.at.getTime(), release: e.facts.release, environment: e.facts.environment, counts: { errorEvents: 1 } })));
  counting.forEach(rememberFinished);
  await settlePending(placed.map((flush) => flush.pending));
}

/** Stores and counts the error events of one or more batches (see placeErrorBatches), answering once they are counted. */
export async function storeErrorBatches(batches: RecordBatch<ErrorEventRecord>[], now = new Date(), symbolicator?: Symbolicator): Promise<void> {
  const { counted } = await placeErrorBatches(batches, now, symbolicator);
  await counted;
}

/** One batch's error events (see storeErrorBatches). */
export const ingestErrorEvents = (items: Stamped<ErrorEventRecord>[], batchId: string, now = new Date(), symbolicator?: Symbolicator) =>
  storeErrorBatches([{ batchId, items }], now, symbolicator);
