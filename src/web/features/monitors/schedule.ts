/**
 * A cron check's schedule read in the browser: the crontab syntax the API takes (five fields or a
 * nickname), and the runs it names in a time zone, so the editor previews the next runs as the user types.
 * The rules are the ones the server's scheduler (croner) follows, daylight saving included: a single daily
 * time in the skipped hour runs when the gap ends, a time in the repeated hour runs once, and a pattern
 * with several times (every 15 minutes, two hours) skips the gap and runs in both repeated hours.
 * `test/unit/web-cron-schedule.test.ts` holds this to the server's answers.
 */

export const INTERVAL_UNITS = ['minute', 'hour', 'day', 'week', 'month'] as const;
export type IntervalUnit = (typeof INTERVAL_UNITS)[number];
export type Schedule = { type: 'crontab'; value: string } | { type: 'interval'; value: number; unit: IntervalUnit };

/** A parsed crontab: the allowed values of each field. */
interface Crontab {
  minutes: number[];
  hours: number[];
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  /** Both day fields restricted: a day matches either (as Vixie cron reads it). */
  eitherDay: boolean;
  /** One minute and one hour: the time that runs at the end of a daylight-saving gap. */
  fixedTime: boolean;
}

export type CrontabReading = { ok: true; crontab: Crontab } | { ok: false; problem: string; unsupported?: boolean };

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};
const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  // 7 is Sunday too
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES },
] as const;

class CrontabProblem extends Error {
  constructor(
    message: string,
    readonly unsupported = false,
  ) {
    super(message);
  }
}

/** A number, or a month or day name standing alone ("jan", "MON"). */
function valueOf(text: string, field: (typeof FIELDS)[number]): number {
  if (/^\d+$/.test(text)) {
    const value = Number(text);
    if (value < field.min || value > field.max) throw new CrontabProblem(`${field.name} ${value} is outside ${field.min}-${field.max}`);
    return value;
  }
  const index = 'names' in field ? (field.names as readonly string[]).indexOf(text.toLowerCase()) : -1;
  if (index >= 0) return field.name === 'month' ? index + 1 : index;
  // croner's extensions (last day, nearest weekday, nth weekday, "and" days): the server reads them
  if (/[LW#+]/i.test(text)) throw new CrontabProblem('L, W, # and + are read by the server but not previewed here', true);
  throw new CrontabProblem(`"${text}" is not a ${field.name}`);
}

/** One field's values: `*`, `?`, numbers, names, ranges, lists, and steps of `*` or of a range. */
function fieldValues(text: string, field: (typeof FIELDS)[number]): number[] {
  const weekdays = field.name === 'day of week';
  const values = new Set<number>();
  for (const part of text.split(',')) {
    if (part === '') throw new CrontabProblem(`the ${field.name} field has an empty item`);
    const [range = '', stepText, extra] = part.split('/');
    if (extra !== undefined) throw new CrontabProblem(`"${part}" has more than one step`);
    const step = stepText === undefined ? 1 : /^\d+$/.test(stepText) ? Number(stepText) : NaN;
    if (!(step >= 1)) throw new CrontabProblem(`"${part}": a step is a whole number of at least 1`);
    if (step > field.max - field.min + (weekdays ? 0 : 1)) throw new CrontabProblem(`"${part}": the step is larger than the ${field.name} field`);
    let low: number;
    let high: number;
    if (range === '*') {
      low = field.min;
      high = weekdays ? 6 : field.max;
    } else if (range.includes('-')) {
      const bounds = range.split('-');
      if (bounds.length !== 2) throw new CrontabProblem(`"${part}" is not a range`);
      low = valueOf(bounds[0]!, field);
      // "mon-sun": Sunday ending a range is 7
      high = weekdays && bounds[1]!.toLowerCase() === 'sun' ? 7 : valueOf(bounds[1]!, field);
      if (low > high) throw new CrontabProblem(`"${part}": the range goes backwards`);
    } else {
      if (stepText !== undefined) throw new CrontabProblem(`"${part}": a step follows * or a range (e.g. */15 or 0-30/15)`);
      low = high = valueOf(range, field);
    }
    for (let value = low; value <= high; value += step) values.add(weekdays && value === 7 ? 0 : value);
  }
  return [...values].sort((a, b) => a - b);
}

/** Reads a crontab of five fields or a nickname (@hourly, @daily…), or says what is wrong with it. */
export function readCrontab(text: string): CrontabReading {
  const trimmed = text.trim();
  const expanded = trimmed.startsWith('@') ? NICKNAMES[trimmed.toLowerCase()] : trimmed;
  if (expanded === undefined) return { ok: false, problem: `${trimmed} is not one of ${Object.keys(NICKNAMES).join(', ')}` };
  // "?" is "*" in any field
  const parts = expanded.replaceAll('?', '*').split(/\s+/);
  if (parts.length !== 5) return { ok: false, problem: 'a crontab has five fields: minute hour day-of-month month day-of-week' };
  try {
    const [minutes, hours, days, months, weekdays] = parts.map((part, index) => fieldValues(part, FIELDS[index]!)) as [number[], number[], number[], number[], number[]];
    const single = (part: string, values: number[]) => !part.includes('*') && !part.includes('/') && values.length === 1;
    const crontab: Crontab = {
      minutes,
      hours,
      days: new Set(days),
      months: new Set(months),
      weekdays: new Set(weekdays),
      eitherDay: parts[2] !== '*' && parts[4] !== '*',
      fixedTime: single(parts[0]!, minutes) && single(parts[1]!, hours),
    };
    return { ok: true, crontab };
  } catch (error) {
    if (error instanceof CrontabProblem) return { ok: false, problem: error.message, unsupported: error.unsupported };
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------------
// Wall clocks in a zone

interface WallClock {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();

function wallClock(ms: number, timeZone: string): WallClock {
  let format = formats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(timeZone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(new Date(ms))) parts[part.type] = Number(part.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

const utcOf = (wall: WallClock) => Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);
/** How far the zone's clock is ahead of UTC at an instant, in milliseconds. */
const offsetAt = (ms: number, timeZone: string) => utcOf(wallClock(ms, timeZone)) - Math.floor(ms / 1000) * 1000;
const sameWall = (a: WallClock, b: WallClock) => a.year === b.year && a.month === b.month && a.day === b.day && a.hour === b.hour && a.minute === b.minute && a.second === b.second;

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The first instant after a clock change between `before` (old offset) and `after` (new offset), to the second. */
function changeBetween(before: number, after: number, timeZone: string): number {
  const offset = offsetAt(before, timeZone);
  let low = before;
  let high = after;
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (offsetAt(middle, timeZone) === offset) low = middle;
    else high = middle;
  }
  return high;
}

/**
 * The instants a wall-clock time names in a zone: one; two in the hour a clock change repeats (earlier
 * first); none in the hour it skips, then `gapEnd` is when the skipped stretch ends.
 */
function instantsOf(wall: WallClock, timeZone: string): { instants: number[]; gapEnd?: number } {
  const asUtc = utcOf(wall);
  const offsets = new Set([offsetAt(asUtc - DAY_MS, timeZone), offsetAt(asUtc, timeZone), offsetAt(asUtc + DAY_MS, timeZone)]);
  const instants = [...offsets]
    .map((offset) => asUtc - offset)
    .filter((instant) => sameWall(wallClock(instant, timeZone), wall))
    .sort((a, b) => a - b);
  if (instants.length) return { instants: [...new Set(instants)] };
  const before = asUtc - offsetAt(asUtc - DAY_MS, timeZone);
  const after = asUtc - offsetAt(asUtc + DAY_MS, timeZone);
  return { instants: [], gapEnd: changeBetween(Math.min(before, after), Math.max(before, after), timeZone) };
}

/** The days a search goes through before a crontab is taken to never run (a 29 February on a Monday needs years). */
const SEARCH_DAYS = 366 * 12;
/** The zones' clocks run from 12 hours behind UTC to 14 ahead. */
const MOST_AHEAD_MS = 14 * HOUR_MS;

/** The instants a crontab runs at on one wall-clock day of the zone, in order. */
function runsOnDay(crontab: Crontab, date: { year: number; month: number; day: number }, timeZone: string): number[] {
  if (!crontab.months.has(date.month)) return [];
  const midnight = Date.UTC(date.year, date.month - 1, date.day);
  const weekday = new Date(midnight).getUTCDay();
  const dayMatches = crontab.eitherDay ? crontab.days.has(date.day) || crontab.weekdays.has(weekday) : crontab.days.has(date.day) && crontab.weekdays.has(weekday);
  if (!dayMatches) return [];
  // no clock change near this day (the usual case): every time is its wall clock less one offset
  const offset = offsetAt(midnight - DAY_MS, timeZone);
  const steady = offsetAt(midnight + DAY_MS / 2, timeZone) === offset && offsetAt(midnight + 2 * DAY_MS, timeZone) === offset;
  const runs: number[] = [];
  for (const hour of crontab.hours) {
    for (const minute of crontab.minutes) {
      if (steady) {
        runs.push(midnight + hour * HOUR_MS + minute * 60_000 - offset);
        continue;
      }
      const { instants, gapEnd } = instantsOf({ ...date, hour, minute, second: 0 }, timeZone);
      if (instants.length) runs.push(...(crontab.fixedTime ? instants.slice(0, 1) : instants));
      else if (crontab.fixedTime && gapEnd !== undefined) {
        const end = wallClock(gapEnd, timeZone);
        if (end.year === date.year && end.month === date.month && end.day === date.day) runs.push(gapEnd);
      }
    }
  }
  return runs.sort((a, b) => a - b);
}

/** The first time a crontab runs strictly after `after` in the zone; undefined if it never does. */
export function nextCrontabRun(crontab: Crontab, timeZone: string, after: number): number | undefined {
  // from two days back: a day's runs may come before its date does in UTC
  const start = new Date(after - 2 * DAY_MS);
  let best: number | undefined;
  for (let index = 0; index < SEARCH_DAYS; index++) {
    const date = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + index));
    // this day's runs, and every later day's, all come after the best found so far
    if (best !== undefined && date.getTime() - MOST_AHEAD_MS > best) return best;
    const day = { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
    const run = runsOnDay(crontab, day, timeZone).find((candidate) => candidate > after);
    if (run !== undefined && (best === undefined || run < best)) best = run;
  }
  return best;
}

/**
 * An interval after an instant: minutes and hours are elapsed time; days, weeks and months are calendar
 * steps in the zone, so "every day" keeps its wall-clock time across a daylight-saving change.
 */
export function addInterval(ms: number, schedule: Extract<Schedule, { type: 'interval' }>, timeZone: string): number {
  const { value, unit } = schedule;
  if (unit === 'minute') return ms + value * 60_000;
  if (unit === 'hour') return ms + value * HOUR_MS;
  const wall = wallClock(ms, timeZone);
  let [year, month, day] = [wall.year, wall.month, wall.day];
  if (unit === 'month') {
    const index = wall.month - 1 + value;
    year = wall.year + Math.floor(index / 12);
    month = (index % 12) + 1;
    // the 31st plus a month is the last day of a shorter month
    day = Math.min(wall.day, new Date(Date.UTC(year, month, 0)).getUTCDate());
  } else {
    const shifted = new Date(Date.UTC(wall.year, wall.month - 1, wall.day + (unit === 'week' ? 7 * value : value)));
    [year, month, day] = [shifted.getUTCFullYear(), shifted.getUTCMonth() + 1, shifted.getUTCDate()];
  }
  // that wall-clock time's instant (in a skipped hour, an hour on), the milliseconds kept
  const asUtc = Date.UTC(year, month - 1, day, wall.hour, wall.minute, wall.second, ms % 1000);
  return asUtc - offsetAt(asUtc - offsetAt(asUtc, timeZone), timeZone);
}

/** The next `count` scheduled times after `after`, as the server computes them; fewer when a crontab runs fewer times or is not read. */
export function nextRuns(schedule: Schedule, timeZone: string, after: number, count: number): number[] {
  const read = schedule.type === 'crontab' ? readCrontab(schedule.value) : undefined;
  if (read && !read.ok) return [];
  const runs: number[] = [];
  let cursor = after;
  while (runs.length < count) {
    const next = read ? nextCrontabRun(read.crontab, timeZone, cursor) : addInterval(cursor, schedule as Extract<Schedule, { type: 'interval' }>, timeZone);
    if (next === undefined) break;
    runs.push(next);
    cursor = next;
  }
  return runs;
}

/** A check-in this close before a scheduled time counts as that run (the server's rule for a job whose clock runs fast). */
const EARLY_TOLERANCE_MS = 60_000;

/** When the check-in after one at `at` is due, by the server's rule; undefined when the schedule cannot be read here. */
export function nextExpectedAfter(schedule: Schedule, timeZone: string, at: number): number | undefined {
  const [first, second] = nextRuns(schedule, timeZone, at, 2);
  if (first === undefined || schedule.type === 'interval' || second === undefined) return first;
  return first - at < Math.min(EARLY_TOLERANCE_MS, (second - first) / 2) ? second : first;
}
