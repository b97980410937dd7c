import { Cron } from 'croner';

export const intervalUnits = ['minute', 'hour', 'day', 'week', 'month'] as const;
export type IntervalUnit = (typeof intervalUnits)[number];

export type Schedule = { type: 'crontab'; value: string } | { type: 'interval'; value: number; unit: IntervalUnit };

/** Why a time zone name is not one the runtime knows, or undefined. */
export function timezoneProblem(timezone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return undefined;
  } catch {
    return `unknown time zone ${JSON.stringify(timezone)} (use an IANA name such as Europe/Berlin)`;
  }
}

/** A crontab of five fields or a nickname (@hourly, @daily…), as Sentry and Healthchecks take them. */
export function crontabProblem(value: string): string | undefined {
  const fields = value.trim().split(/\s+/);
  if (!(fields.length === 5 || (fields.length === 1 && fields[0]!.startsWith('@')))) return 'a crontab has five fields: minute hour day-of-month month day-of-week';
  try {
    if (!new Cron(value, { paused: true }).nextRun()) return 'this crontab never runs';
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^CronPattern: /, '');
  }
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock fields of an instant in a time zone. */
function wallClock(ms: number, timezone: string) {
  let format = zoneFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    zoneFormats.set(timezone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((part) => [part.type, Number(part.value)]));
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour!, minute: parts.minute!, second: parts.second!, ms: ms % 1000 };
}

const offsetAt = (ms: number, timezone: string) => {
  const w = wallClock(ms, timezone);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.ms) - ms;
};

/** The instant a wall-clock time names in a zone (in a spring-forward gap, the instant an hour on). */
function fromWallClock(fields: { year: number; month: number; day: number; hour: number; minute: number; second: number; ms: number }, timezone: string): number {
  const asUtc = Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour, fields.minute, fields.second, fields.ms);
  const guess = asUtc - offsetAt(asUtc, timezone);
  const offset = offsetAt(guess, timezone);
  return asUtc - offset;
}

/**
 * An interval after an instant. Minutes and hours are elapsed time; days, weeks and months are
 * calendar steps in the check's zone, so "every day" stays at the same wall-clock time across a
 * daylight-saving change (23 or 25 hours that day) rather than drifting an hour.
 */
function addInterval(ms: number, schedule: Extract<Schedule, { type: 'interval' }>, timezone: string): number {
  const { value, unit } = schedule;
  if (unit === 'minute') return ms + value * 60_000;
  if (unit === 'hour') return ms + value * 3_600_000;
  const w = wallClock(ms, timezone);
  if (unit === 'month') {
    const monthIndex = w.month - 1 + value;
    const year = w.year + Math.floor(monthIndex / 12);
    const month = (monthIndex % 12) + 1;
    // the 31st plus a month is the last day of a shorter month
    const day = Math.min(w.day, new Date(Date.UTC(year, month, 0)).getUTCDate());
    return fromWallClock({ ...w, year, month, day }, timezone);
  }
  const days = unit === 'week' ? 7 * value : value;
  const shifted = new Date(Date.UTC(w.year, w.month - 1, w.day + days));
  return fromWallClock({ ...w, year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() }, timezone);
}

/**
 * The first scheduled time strictly after `after`. Crontabs are read in the check's zone by croner,
 * which does what cron daemons do at daylight-saving changes: a time in the skipped hour runs at the
 * end of the gap (02:30 → 03:00) and a time in the repeated hour runs once.
 */
export function nextRun(schedule: Schedule, timezone: string, after: Date): Date {
  if (schedule.type === 'interval') return new Date(addInterval(after.getTime(), schedule, timezone));
  const next = new Cron(schedule.value, { timezone, paused: true }).nextRun(after);
  if (!next) throw new Error(`crontab ${schedule.value} has no run after ${after.toISOString()}`);
  return next;
}

/** A check-in this close before a scheduled time belongs to it: the job's clock runs a little fast. */
const EARLY_TOLERANCE_MS = 60_000;

/**
 * When the check-in after one at `at` is due. For a crontab, the first scheduled time after it,
 * unless the check-in came just before a scheduled time (within a minute, or half the gap between
 * runs), when it counts as that run and the one after is due.
 */
export function nextExpectedAfter(schedule: Schedule, timezone: string, at: Date): Date {
  const first = nextRun(schedule, timezone, at);
  if (schedule.type === 'interval') return first;
  const second = nextRun(schedule, timezone, first);
  const tolerance = Math.min(EARLY_TOLERANCE_MS, (second.getTime() - first.getTime()) / 2);
  return first.getTime() - at.getTime() < tolerance ? second : first;
}
