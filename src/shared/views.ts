import { Types, type mongo } from 'mongoose';
import { z } from 'zod';
import { chargeWork, checkDeadline, untilDeadline } from './context.js';
import { AppError } from './errors.js';
import { Project } from './features/projects/model.js';
import { parseId } from './paging.js';
import { hoursWithRollups, lastUnmarkedHour } from './telemetry/rolled-up-hours.js';
import { inParallel } from './telemetry/storage.js';
import { HOUR_MS, hourOf, minuteOf } from './telemetry/time-buckets.js';

const DAY_MS = 86_400_000;
/** The longest window a view reads: the longest retention (365 days) and a day. */
const MAX_WINDOW_DAYS = 366;
const MAX_WINDOW_MS = MAX_WINDOW_DAYS * DAY_MS;
/** Hours of a window read at once. */
const PARALLEL_HOURS = 4;
/** A view's rate-limit cost: one point per started stretch of this length of its window (docs/api.md, "Rate limits"). */
const WINDOW_COST_MS = 7 * DAY_MS;

/** The rate-limit points a view over [from, to) costs: one per started 7 days, at least one. */
export const windowCost = (from: Date, to: Date) => Math.max(1, Math.ceil((to.getTime() - from.getTime()) / WINDOW_COST_MS));

/** ISO-8601 or epoch milliseconds, as CONTRACT.md allows for `from` and `to`. */
const instant = z
  .string()
  .transform((value, ctx) => {
    const time = new Date(/^\d+$/.test(value) ? Number(value) : Date.parse(value));
    // epoch milliseconds past what a Date holds (±8.64e15) make an invalid Date, as unparseable text does
    if (Number.isNaN(time.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'must be ISO-8601 or epoch milliseconds' });
      return z.NEVER;
    }
    return time;
  })
  .meta({ description: 'ISO-8601 time or epoch milliseconds' });

/** `key:value` pairs of a repeatable query parameter, matched against span, log or point attributes as text. */
export const attributeFilters = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]))
  .pipe(
    z.array(
      z
        .string()
        .regex(/^[^:]+:/, 'must be key:value')
        .transform((pair) => ({ key: pair.slice(0, pair.indexOf(':')), value: pair.slice(pair.indexOf(':') + 1) })),
    ),
  );

/** A query parameter that may be given several times: always a list, or undefined when absent. */
export const repeatedParameter = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) => (value === undefined ? undefined : Array.isArray(value) ? value : [value]));

/** Query parameters of every time-bounded view: the window and the projects (repeatable). */
export const viewQuery = {
  from: instant.optional(),
  to: instant.optional(),
  project: repeatedParameter,
};

/** A figure of a view's answer to `digits` decimals; null stays null. */
export const rounded = <T extends number | null>(value: T, digits = 2): T => (value === null ? value : (Number(value.toFixed(digits)) as T));

/** Seconds per point of a series view; by default the window in about 120 points, at least a minute. */
export const stepQuery = z.coerce.number().int().min(10).max(86_400).optional();

/** A series view's step in milliseconds: the one asked for, or the window in about 120 whole minutes. */
export const stepMsOf = (scope: ViewScope, step: number | undefined) =>
  (step ?? Math.max(60, Math.ceil((scope.to.getTime() - scope.from.getTime()) / 120 / 60_000) * 60)) * 1000;

/** The start of the step a time falls in, steps counted from the window's start. */
export const stepStartOf = (scope: ViewScope, stepMs: number, ms: number) => scope.from.getTime() + Math.floor((ms - scope.from.getTime()) / stepMs) * stepMs;

export interface ViewScope {
  orgId: Types.ObjectId;
  /** Undefined: every project of the organisation. */
  projectIds: Types.ObjectId[] | undefined;
  from: Date;
  to: Date;
}

/** Resolves a view's window (default: the last 24 h, from the whole minute) and checks each named project belongs to the organisation. */
export async function viewScope(
  orgId: Types.ObjectId,
  query: { from?: Date | undefined; to?: Date | undefined; project?: string[] | undefined },
  now = Date.now(),
): Promise<ViewScope> {
  const to = query.to ?? new Date(now);
  // by default from the whole minute: steps of whole minutes then fall on the minutes rollups are kept by
  const from = query.from ?? new Date(minuteOf(to.getTime() - DAY_MS));
  if (from > to) throw new AppError('validation_failed', '`from` is after `to`', { details: [{ path: 'query.from', message: 'after to' }] });
  // a view reads per hour (or minute) of its window: an unbounded one (from=0) would run for hours
  if (to.getTime() - from.getTime() > MAX_WINDOW_MS) {
    throw new AppError('validation_failed', `the window is longer than ${MAX_WINDOW_DAYS} days`, { details: [{ path: 'query.from', message: `at most ${MAX_WINDOW_DAYS} days before to` }] });
  }
  // the request paid one point already; a longer window reads more and pays for it before any read
  await chargeWork(windowCost(from, to) - 1);
  return { orgId, projectIds: await namedProjects(orgId, query.project), from, to };
}

/**
 * The filter of a list (not a view) on one time field: without `from` and `to` the whole history,
 * else from `from` up to `to` (included unless `toExcluded`). A `from` after `to` is refused.
 */
export function optionalWindow(field: string, query: { from?: Date | undefined; to?: Date | undefined }, { toExcluded = false } = {}): Record<string, unknown> {
  if (query.from && query.to && query.from > query.to) throw new AppError('validation_failed', '`from` is after `to`', { details: [{ path: 'query.from', message: 'after to' }] });
  if (!query.from && !query.to) return {};
  return { [field]: { ...(query.from && { $gte: query.from }), ...(query.to && { [toExcluded ? '$lt' : '$lte']: query.to }) } };
}

/** The projects a list or view names, each checked to be the organisation's; undefined when none is named. */
export async function namedProjects(orgId: Types.ObjectId, names: string[] | undefined): Promise<Types.ObjectId[] | undefined> {
  if (!names || names.length === 0) return undefined;
  const projectIds = names.map((id) => parseId(id, 'project'));
  // one lookup by _id per named project: each answered from an index, unlike a count over `$in`
  const found = await Promise.all([...new Set(projectIds.map(String))].map((id) => Project.exists({ _id: id, orgId })));
  if (found.some((project) => !project)) throw new AppError('not_found', 'project not found');
  return projectIds;
}

/**
 * The organisation and project part of a Mongo filter for a scope. One project is named by plain
 * equality, which FerretDB can answer from an index; `$in` it evaluates in memory.
 */
export function scopeFilter(scope: ViewScope): { orgId: Types.ObjectId; projectId?: Types.ObjectId | { $in: Types.ObjectId[] } } {
  return { orgId: scope.orgId, ...projectFilter(scope.projectIds) };
}

/** The project part of a filter: nothing for every project, equality for one, `$in` for several. */
export function projectFilter(projectIds: Types.ObjectId[] | undefined): { projectId?: Types.ObjectId | { $in: Types.ObjectId[] } } {
  const projects = projectIds && [...new Map(projectIds.map((id) => [id.toHexString(), id])).values()];
  if (!projects) return {};
  return { projectId: projects.length === 1 ? projects[0]! : { $in: projects } };
}

/** The hours since the epoch that the window [from, to) touches. */
function hoursOf(from: Date, to: Date): number[] {
  const first = hourOf(from.getTime());
  const last = hourOf(to.getTime() - 1);
  return Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
}

/** The hours since the epoch that the window [from, to) touches, newest first. */
export const hoursDown = (from: Date, to: Date) => hoursOf(from, to).reverse();

/** Minutes read at once, at most, while the minutes read hold nothing. */
const MAX_MINUTES_AT_ONCE = 16;

/** The minutes since the epoch from `last` down to `first`. */
export const minutesDown = (first: number, last: number) => Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => last - i);

/**
 * How a read of minutes goes from round to round; a caller reading a window in parts passes one to
 * every part. `wanted` (how many more documents the page needs) lets a round after one that found
 * some read as many minutes as the minutes read so far say the page still needs.
 */
export interface MinuteRounds<U = number> {
  /** How many minutes the next round reads. */
  width: number;
  wanted?: () => number;
  /**
   * How many documents a minute should hold that the page would take, where rollups say (undefined
   * where they do not): with `wanted`, a round ends at the minute by which those reach what the page
   * still needs, so that a round of busy minutes does not read several that one would fill the page from.
   */
  expected?: (minute: U) => number | undefined;
  /** Minutes read, and documents they held, so far. */
  read?: number;
  held?: number;
}

/** The minutes of the round that starts at `next`: `rounds.width` of them, or fewer once they are expected to fill the page. */
function roundOf<U>(minutes: U[], next: number, rounds: MinuteRounds<U>): U[] {
  const round = minutes.slice(next, next + rounds.width);
  const { expected, wanted } = rounds;
  if (!expected || !wanted) return round;
  const needed = wanted();
  let sum = 0;
  const enough = round.findIndex((minute) => (sum += expected(minute) ?? 0) >= needed);
  return enough === -1 ? round : round.slice(0, enough + 1);
}

/**
 * Reads raw documents bucketed by minute, in the order of `minutes` (newest first): `read` gives
 * one minute's documents (newest first), `take` is handed them in order until `full()`. While
 * the minutes read hold nothing, the next round reads twice as many at once (up to 16), so a sparse
 * window takes few rounds and a busy one reads little beyond what the page needs. After a round
 * that found some, the next reads one minute, or with `wanted` as many as the yield so far says
 * the page still needs (up to 16), so a rare match in a busy window is not read a minute a round.
 * With `expected` too, a round also ends at the minute that should fill the page (`roundOf`).
 */
export async function newestMinutesFirst<T, U = number>(
  minutes: U[],
  read: (minute: U) => Promise<T[]>,
  take: (docs: T[]) => Promise<void> | void,
  full: () => boolean,
  rounds: MinuteRounds<U> = { width: 1 },
): Promise<void> {
  for (let next = 0; next < minutes.length && !full(); ) {
    checkDeadline();
    const round = roundOf(minutes, next, rounds);
    const found = await Promise.all(round.map(read));
    rounds.read = (rounds.read ?? 0) + round.length;
    rounds.held = (rounds.held ?? 0) + found.reduce((sum, docs) => sum + docs.length, 0);
    for (const docs of found) {
      if (full()) return;
      await take(docs);
    }
    if (found.every((docs) => docs.length === 0)) rounds.width = Math.min(rounds.width * 2, MAX_MINUTES_AT_ONCE);
    else if (rounds.wanted) rounds.width = Math.min(Math.max(1, Math.ceil((rounds.wanted() * rounds.read) / rounds.held)), MAX_MINUTES_AT_ONCE);
    else rounds.width = 1;
    next += round.length;
  }
}

/**
 * Documents bucketed by `hour` whose time (`timeOf`, by default a rollup's minute `at`) is in
 * [from, to) and that match `filter`: one equality lookup per hour that may hold any (FerretDB
 * answers `hour` from an index, a range on a date it cannot). With an organisation in `filter`, the
 * hours that hold nothing are skipped (one lookup of the marked hours, see rolled-up-hours.ts). A
 * request's read stops at its deadline: checked before each hour, and each lookup carries the time left.
 */
export async function allInWindowByHour<T extends object>(
  collection: mongo.Collection,
  from: Date,
  to: Date,
  filter: Record<string, unknown> = {},
  timeOf: (doc: T) => Date = (doc) => (doc as { at: Date }).at,
  projection?: mongo.Document,
): Promise<T[]> {
  return readHours<T>(collection, hoursOf(from, to), from, to, filter, timeOf, projection);
}

/** Documents of one hour's lookup asked for in one reply (MongoDB still cuts a reply at 16 MB). */
const HOUR_BATCH = 20_000;

/**
 * A read that is asked again, once, when the server no longer knows its cursor (CursorNotFound: FerretDB
 * drops a cursor whose connection or time ran out before the driver's getMore); a second failure is
 * answered as a read past its deadline (http/errors.ts), never as an internal error.
 */
export async function readOnce<T>(read: () => Promise<T[]>): Promise<T[]> {
  try {
    return await read();
  } catch (error) {
    if (!isCursorNotFound(error)) throw error;
    return read();
  }
}

/** MongoDB's CursorNotFound (code 43): a getMore for a cursor the server has closed. */
export const isCursorNotFound = (error: unknown) => (error as { code?: unknown } | null)?.code === 43;

/** The documents of `window` (hours since the epoch) whose time is in [from, to) (see allInWindowByHour). */
export async function readHours<T extends object>(
  collection: mongo.Collection,
  window: number[],
  from: Date,
  to: Date,
  filter: Record<string, unknown>,
  timeOf: (doc: T) => Date,
  projection?: mongo.Document,
): Promise<T[]> {
  const found: T[] = [];
  if (window.length === 0) return found;
  const orgId = filter.orgId instanceof Types.ObjectId ? filter.orgId : undefined;
  const hours = orgId && window.length > PARALLEL_HOURS ? await hoursWithRollups(collection, orgId, window) : window;
  await inParallel(hours, PARALLEL_HOURS, async (hour) => {
    const docs = await readOnce<T>(() => {
      checkDeadline();
      // an hour's documents in one reply: no getMore, so no cursor FerretDB may have dropped meanwhile
      return collection.find({ ...filter, hour }, { ...untilDeadline(), batchSize: HOUR_BATCH, ...(projection && { projection }) }).toArray() as unknown as Promise<T[]>;
    });
    // a loop, not push(...docs): an hour can hold more documents than a call takes arguments
    for (const doc of docs) if (timeOf(doc) >= from && timeOf(doc) < to) found.push(doc);
  });
  return found;
}

/**
 * Like allInWindowByHour over per-minute rollups (`minutes`), but every whole hour of [from, to) that
 * `wholeHourUsable` accepts (a series view: the hour's minutes all fall in one step) is read from the
 * hour's rollups (`hours`, written with the same counts by RollupBatch.write) instead: a few documents an
 * hour instead of up to one per minute and key. Hours the hourly rollups may not hold all of (written
 * before they were kept) are read by minute. An hourly document's `at` is its hour's start.
 */
export async function inWindowByWholeHour<T extends object>(
  minutes: mongo.Collection,
  hours: mongo.Collection,
  scope: ViewScope,
  from: Date,
  to: Date,
  filter: Record<string, unknown> = {},
  { projection, wholeHourUsable = () => true }: { projection?: mongo.Document; wholeHourUsable?: (hour: number) => boolean } = {},
): Promise<T[]> {
  const fullFilter = { ...scopeFilter(scope), ...filter };
  const timeOf = (doc: T) => (doc as { at: Date }).at;
  const window = hoursOf(from, to);
  const whole = (hour: number) => hour * HOUR_MS >= from.getTime() && (hour + 1) * HOUR_MS <= to.getTime() && wholeHourUsable(hour);
  const candidates = window.filter(whole);
  const lastUnmarked = candidates.length > 0 ? await lastUnmarkedHour(hours, scope.orgId) : Infinity;
  const hourly = new Set(candidates.filter((hour) => hour > lastUnmarked));
  const [byMinute, byHour] = await Promise.all([
    readHours<T>(minutes, window.filter((hour) => !hourly.has(hour)), from, to, fullFilter, timeOf, projection),
    readHours<T>(hours, [...hourly], from, to, fullFilter, timeOf, projection),
  ]);
  for (const doc of byHour) byMinute.push(doc);
  return byMinute;
}

/** A scope's documents bucketed by `hour` in [from, to) (see allInWindowByHour). */
export const inWindowByHour = <T extends object>(collection: mongo.Collection, scope: ViewScope, from: Date, to: Date, filter: Record<string, unknown> = {}, timeOf?: (doc: T) => Date, projection?: mongo.Document) =>
  allInWindowByHour<T>(collection, from, to, { ...scopeFilter(scope), ...filter }, timeOf, projection);
