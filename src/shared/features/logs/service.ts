/**
 * The reads of logs: search, patterns and surges, from the lines and the per-minute counts the workers
 * stored (store.ts).
 */
import { Types } from 'mongoose';
import type { z } from 'zod';
import { untilDeadline } from '../../context.js';
import { AppError } from '../../errors.js';
import { cursorId, decodeCursor, encodeCursor, offsetPage } from '../../paging.js';
import { attributesObject, contentId, hasAttributes } from '../../telemetry/storage.js';
import { epochMinuteOf, HOUR_MS } from '../../telemetry/time-buckets.js';
import { allInWindowByHour, hoursDown, inWindowByWholeHour, type MinuteRounds, newestMinutesFirst, scopeFilter, type ViewScope } from '../../views.js';
import { hoursWithRollups } from '../../telemetry/rolled-up-hours.js';
import { Log, LogPattern, LogRollup, LogRollupHourly } from './model.js';
import type { logLineJson, logPatternJson, logPatternsQuery, logSurgeJson, logSurgesQuery, searchLogsQuery } from './schemas.js';
import { logTokens, type StoredLog } from './store.js';

interface LogRollupDoc {
  projectId: Types.ObjectId;
  at: Date;
  service: string;
  patternId: string;
  count: number;
  levels: Record<string, number>;
}

/** What the views read of a log rollup. */
const LOG_ROLLUP_FIELDS = { projectId: 1, at: 1, service: 1, patternId: 1, count: 1, levels: 1 };

/** The window's log rollups: whole hours from the hourly rollups, the rest by minute (inWindowByWholeHour). */
const logRollupsIn = (scope: ViewScope, from: Date, to: Date, filter: Record<string, unknown>) =>
  inWindowByWholeHour<LogRollupDoc>(LogRollup.collection, LogRollupHourly.collection, scope, from, to, filter, { projection: LOG_ROLLUP_FIELDS });

type SearchQuery = z.output<typeof searchLogsQuery>;

interface LogDoc extends StoredLog {
  _id: Types.ObjectId;
}

const newestFirst = (a: LogDoc, b: LogDoc) => b.time.getTime() - a.time.getTime() || b._id.toHexString().localeCompare(a._id.toHexString());

/**
 * Log lines matching every filter, newest first. The window's minutes that hold logs (the log
 * rollups say which) are read one at a time, newest first, until the page is full; each minute is
 * one lookup by equality on the minute and on the filters
 * FerretDB can hand to an index (service, level, trace, and one word of `q`), and the rest
 * (the other words, attributes, the window's edges) is checked on what that lookup returns.
 */
export async function searchLogs(scope: ViewScope, query: SearchQuery): Promise<{ data: z.infer<typeof logLineJson>[]; next_cursor: string | null }> {
  const words = logTokens(query.q ?? '');
  // the word looked up by index: numbers and ids are rarer than words, longer words than shorter
  const selective = [...words].sort((a, b) => Number(/\d/.test(b)) - Number(/\d/.test(a)) || b.length - a.length)[0];
  let after: { time: Date; id: Types.ObjectId } | undefined;
  if (query.cursor) {
    const [time, id] = decodeCursor(query.cursor, 2);
    if (!(time instanceof Date)) throw new AppError('invalid_request', 'cursor is not one this API issued');
    after = { time, id: cursorId(id) };
  }
  const isAfter = (doc: LogDoc) => !after || newestFirst({ ...doc, time: after.time, _id: after.id }, doc) < 0;
  const filter = {
    ...scopeFilter(scope),
    ...(query.service !== undefined && { service: query.service }),
    ...(query.level && { level: query.level }),
    ...(query.trace_id && { traceId: query.trace_id }),
    ...(selective && { tokens: selective }),
  };
  const to = after && after.time < scope.to ? new Date(after.time.getTime() + 1) : scope.to;
  const found: LogDoc[] = [];
  const full = () => found.length > query.limit;
  // the minutes that hold any of the scope's logs (of the service), from the rollups: empty ones are never
  // read. The window's hours that hold rollups, newest first, each hour's minute rollups read only when the
  // page is not full yet: a page of a busy window reads the rollups of its last hours, not of the window.
  const rollupFilter = { ...scopeFilter(scope), ...(query.service !== undefined && { service: query.service }) };
  const hours = await hoursWithRollups(LogRollup.collection, scope.orgId, hoursDown(scope.from, to));
  const rounds: MinuteRounds = { width: 1, wanted: () => query.limit + 1 - found.length };
  for (const hour of hours) {
    if (full()) break;
    const from = new Date(Math.max(scope.from.getTime(), hour * HOUR_MS));
    const until = new Date(Math.min(to.getTime(), (hour + 1) * HOUR_MS));
    const rollups = await allInWindowByHour<LogRollupDoc>(LogRollup.collection, from, until, rollupFilter, undefined, { at: 1 });
    const minutes = [...new Set(rollups.map((rollup) => epochMinuteOf(rollup.at.getTime())))].sort((a, b) => b - a);
    await newestMinutesFirst(
      minutes,
      async (minute) =>
        (await Log.find({ ...filter, minute }).setOptions(untilDeadline()).lean<LogDoc[]>())
          .filter((doc) => doc.time >= scope.from && doc.time < scope.to && isAfter(doc))
          .filter((doc) => words.every((word) => doc.tokens.includes(word)) && hasAttributes(doc.attributes, query.attribute))
          .sort(newestFirst),
      (docs) => {
        for (const doc of docs) found.push(doc);
      },
      full,
      rounds,
    );
  }
  const page = found.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: page.map((doc) => ({
      id: doc._id.toHexString(),
      project_id: doc.projectId.toHexString(),
      timestamp: doc.time.toISOString(),
      service: doc.service,
      level: doc.level,
      severity_number: doc.severityNumber,
      body: doc.body,
      trace_id: doc.traceId,
      span_id: doc.spanId,
      attributes: attributesObject(doc.attributes),
      pattern_id: doc.patternId,
    })),
    next_cursor: found.length > query.limit && last ? encodeCursor([last.time, last._id.toHexString()]) : null,
  };
}


/** A pattern's registry entries in the given projects: its template, an example, and its first and last sighting. */
async function registryOf(patternId: string, projects: Iterable<string>) {
  // one document per project and pattern, each addressed by its derived _id
  const registered = await Promise.all([...projects].map((projectId) => LogPattern.findById(contentId('log-pattern', projectId, patternId)).lean()));
  const known = registered.filter((doc) => doc !== null);
  return {
    template: known[0]?.pattern ?? '',
    example: known[0]?.example ?? null,
    firstSeen: known.reduce<Date | undefined>((min, doc) => (!min || doc.firstSeenAt < min ? doc.firstSeenAt : min), undefined),
    lastSeen: known.reduce<Date | undefined>((max, doc) => (!max || doc.lastSeenAt > max ? doc.lastSeenAt : max), undefined),
  };
}

/**
 * The recurring shapes of the window's logs, most frequent first: counted from the per-minute
 * rollups, with each pattern's template, example and first and last sighting from its registry.
 */
export async function listLogPatterns(scope: ViewScope, query: z.output<typeof logPatternsQuery>): Promise<{ data: z.infer<typeof logPatternJson>[]; next_cursor: string | null }> {
  const rollups = await logRollupsIn(scope, scope.from, scope.to, query.service !== undefined ? { service: query.service } : {});
  const patterns = new Map<string, { count: number; levels: Record<string, number>; services: Set<string>; projects: Set<string> }>();
  for (const rollup of rollups) {
    let pattern = patterns.get(rollup.patternId);
    if (!pattern) {
      pattern = { count: 0, levels: {}, services: new Set(), projects: new Set() };
      patterns.set(rollup.patternId, pattern);
    }
    pattern.count += rollup.count;
    for (const [level, count] of Object.entries(rollup.levels ?? {})) pattern.levels[level] = (pattern.levels[level] ?? 0) + count;
    pattern.services.add(rollup.service);
    pattern.projects.add(rollup.projectId.toHexString());
  }
  const ranked = [...patterns].sort(([a, x], [b, y]) => y.count - x.count || a.localeCompare(b));
  const { page, next_cursor } = offsetPage(ranked, query);
  const data = await Promise.all(
    page.map(async ([patternId, pattern]) => {
      const registered = await registryOf(patternId, pattern.projects);
      return {
        id: patternId,
        template: registered.template,
        count: pattern.count,
        levels: pattern.levels,
        services: [...pattern.services].sort(),
        example: registered.example,
        first_seen: (registered.firstSeen ?? scope.from).toISOString(),
        last_seen: (registered.lastSeen ?? scope.to).toISOString(),
      };
    }),
  );
  return { data, next_cursor };
}

/**
 * When log volume is a surge: against the previous window of the same length, for a service and for
 * a pattern; a pattern first seen inside the window is new.
 */
export const LOG_SURGE_RULES = {
  /** Nothing with fewer logs in the window is a surge. */
  MIN_LOGS: 20,
  /** Logs at least this many times the previous window's (a baseline of 0 counts as 1). */
  RATIO: 3,
  /** A new pattern is reported from this many logs in the window. */
  MIN_NEW_PATTERN_LOGS: 5,
} as const;

type Surge = z.infer<typeof logSurgeJson>;

/** Log volume surges per service and per pattern, and patterns never seen before the window. */
export async function logSurges(scope: ViewScope, query: z.output<typeof logSurgesQuery>): Promise<{ from: string; to: string; data: Surge[] }> {
  const r = LOG_SURGE_RULES;
  const length = scope.to.getTime() - scope.from.getTime();
  const filter = query.service !== undefined ? { service: query.service } : {};
  const [current, previous] = await Promise.all([
    logRollupsIn(scope, scope.from, scope.to, filter),
    logRollupsIn(scope, new Date(scope.from.getTime() - length), scope.from, filter),
  ]);
  const countBy = (docs: LogRollupDoc[], keyOf: (doc: LogRollupDoc) => string) => {
    const counts = new Map<string, { count: number; services: Set<string>; projects: Set<string> }>();
    for (const doc of docs) {
      const key = keyOf(doc);
      const sum = counts.get(key) ?? { count: 0, services: new Set<string>(), projects: new Set<string>() };
      sum.count += doc.count;
      sum.services.add(doc.service);
      sum.projects.add(doc.projectId.toHexString());
      counts.set(key, sum);
    }
    return counts;
  };
  const ratioOf = (observed: number, baseline: number) => Number((observed / Math.max(baseline, 1)).toFixed(4));
  const data: Surge[] = [];
  const servicesBefore = countBy(previous, (doc) => doc.service);
  for (const [service, now] of countBy(current, (doc) => doc.service)) {
    const baseline = servicesBefore.get(service)?.count ?? 0;
    const ratio = ratioOf(now.count, baseline);
    if (now.count < r.MIN_LOGS || ratio < r.RATIO) continue;
    data.push({ kind: 'service', service, services: [service], pattern_id: null, pattern: null, new_pattern: false, observed: now.count, baseline, ratio, reason: `${now.count} logs against ${baseline} in the previous window (×${ratio}, rule: ×${r.RATIO} or more from ${r.MIN_LOGS} logs)` });
  }
  const patternsBefore = countBy(previous, (doc) => doc.patternId);
  await Promise.all(
    [...countBy(current, (doc) => doc.patternId)].map(async ([patternId, now]) => {
      const baseline = patternsBefore.get(patternId)?.count ?? 0;
      const ratio = ratioOf(now.count, baseline);
      const surging = now.count >= r.MIN_LOGS && ratio >= r.RATIO;
      // only a pattern without logs in the previous window can be new: its registry says since when it is known
      const candidate = baseline === 0 && now.count >= r.MIN_NEW_PATTERN_LOGS;
      if (!surging && !candidate) return;
      const registered = await registryOf(patternId, now.projects);
      const isNew = candidate && registered.firstSeen !== undefined && registered.firstSeen >= scope.from;
      if (!surging && !isNew) return;
      const reason = isNew
        ? `new pattern: first seen ${registered.firstSeen!.toISOString()}, inside the window, with ${now.count} logs`
        : `${now.count} logs against ${baseline} in the previous window (×${ratio}, rule: ×${r.RATIO} or more from ${r.MIN_LOGS} logs)`;
      const services = [...now.services].sort();
      data.push({ kind: 'pattern', service: services.length === 1 ? services[0]! : null, services, pattern_id: patternId, pattern: registered.template, new_pattern: isNew, observed: now.count, baseline, ratio, reason });
    }),
  );
  data.sort((a, b) => Number(b.new_pattern) - Number(a.new_pattern) || b.ratio - a.ratio || b.observed - a.observed || (a.pattern_id ?? a.service ?? '').localeCompare(b.pattern_id ?? b.service ?? ''));
  return { from: scope.from.toISOString(), to: scope.to.toISOString(), data };
}
