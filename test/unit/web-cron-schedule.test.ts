/**
 * The schedule preview the cron check editor computes in the browser (src/web/features/monitors/schedule.ts)
 * against the server's own reading (croner, src/shared/features/cron/schedule.ts): the same crontabs
 * accepted and refused, the same next runs in every zone, across daylight-saving changes, and the same
 * interval steps and next expected check-in.
 */
import fc from 'fast-check';
import { crontabProblem, nextExpectedAfter as serverNextExpected, nextRun as serverNextRun, type Schedule as ServerSchedule } from '../../src/shared/features/cron/schedule.js';
import { INTERVAL_UNITS, nextExpectedAfter, nextRuns, readCrontab, type Schedule } from '../../src/web/features/monitors/schedule.js';

/** Zones with every kind of clock change: none, an hour each way in either hemisphere, half an hour, 45-minute offsets. */
const ZONES = ['UTC', 'Europe/Berlin', 'America/New_York', 'America/Santiago', 'Australia/Lord_Howe', 'Asia/Kolkata', 'Pacific/Chatham', 'America/St_Johns'];

/** Instants just before the 2026 clock changes of those zones, and ordinary ones. */
const STARTS = [
  '2026-03-07T12:00:00Z', // New York springs forward on 8 March
  '2026-03-28T12:00:00Z', // Berlin on 29 March
  '2026-04-04T00:00:00Z', // Santiago, Lord Howe and Chatham fall back on 5 April
  '2026-06-15T09:41:17Z',
  '2026-09-05T00:00:00Z', // Santiago springs forward on 6 September
  '2026-09-26T12:00:00Z', // Chatham on 27 September
  '2026-10-03T00:00:00Z', // Lord Howe on 4 October
  '2026-10-24T12:00:00Z', // Berlin falls back on 25 October
  '2026-10-31T12:00:00Z', // New York on 1 November
];

/** The server's next `count` runs, as epoch milliseconds. */
function serverRuns(schedule: ServerSchedule, zone: string, from: number, count: number): number[] {
  const runs: number[] = [];
  let after = new Date(from);
  for (let i = 0; i < count; i++) {
    after = serverNextRun(schedule, zone, after);
    runs.push(after.getTime());
  }
  return runs;
}

const iso = (runs: number[]) => runs.map((run) => new Date(run).toISOString());

describe('the crontab preview agrees with the server', () => {
  const expressions = [
    '30 2 * * *', // one time a night: the skipped 02:30 runs when the gap ends, the repeated one once
    '0,30 2 * * *', // several times: skipped in the gap
    '*/20 * * * *',
    '0 * * * *',
    '15 2,3 * * *',
    '0 0 13 * 5', // both day fields: either matches
    '0 0 */2 * 5',
    '0 12 * JAN-MAR mon',
    '0 9 * * mon-sun/2',
    '0 9 * * sat-sun',
    '59 23 31 * *',
    '0 0 29 2 *',
    '? 4 * * ?',
    '0-5/2 1-3 * * *',
    '45 0 1 1,7 *',
    '@daily',
    '@HOURLY',
    '@weekly',
    '@monthly',
    '@yearly',
    '0 0 * * 7',
  ];
  test.each(expressions)('%s: the next ten runs in every zone from every start', (value) => {
    expect(readCrontab(value).ok).toBe(true);
    for (const zone of ZONES) {
      for (const start of STARTS) {
        const from = Date.parse(start);
        expect([zone, start, iso(nextRuns({ type: 'crontab', value }, zone, from, 10))]).toEqual([zone, start, iso(serverRuns({ type: 'crontab', value }, zone, from, 10))]);
      }
    }
  });

  test('a crontab that never runs previews nothing; the server refuses it', () => {
    expect(nextRuns({ type: 'crontab', value: '0 0 30 2 *' }, 'UTC', Date.parse('2026-01-01T00:00:00Z'), 5)).toEqual([]);
    expect(crontabProblem('0 0 30 2 *')).toBe('this crontab never runs');
  });

  test('what the server refuses is refused with a reason; its extensions are read by the server and not previewed', () => {
    for (const value of ['', '* * * *', '* * * * * *', '60 * * * *', '* 24 * * *', '* * 0 * *', '* * * 13 *', '* * * * 8', '5-1 * * * *', '*/0 * * * *', '*/61 * * * *', '5/15 * * * *', '1,,2 * * * *', 'a * * * *', '@reboot', '@often', '1-2-3 * * * *', '*/5/2 * * * *', 'mon * * * *']) {
      const read = readCrontab(value);
      expect([value, read.ok]).toEqual([value, false]);
      expect([value, crontabProblem(value)]).toEqual([value, expect.any(String)]);
    }
    for (const value of ['0 0 L * *', '0 0 * * 5L', '0 0 * * 5#2', '0 0 15W * *', '0 0 1 * +5']) {
      expect([value, readCrontab(value)]).toEqual([value, expect.objectContaining({ ok: false, unsupported: true })]);
      expect([value, crontabProblem(value)]).toEqual([value, undefined]);
    }
  });

  test('generated crontabs: read alike, and run alike wherever they run', () => {
    const number = (min: number, max: number) => fc.integer({ min, max }).map(String);
    const item = (min: number, max: number) =>
      fc.oneof(
        { weight: 4, arbitrary: number(min, max) },
        { weight: 2, arbitrary: fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`) },
        { weight: 2, arbitrary: fc.integer({ min: 1, max: Math.min(max, 30) }).map((step) => `*/${step}`) },
        { weight: 1, arbitrary: fc.tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.integer({ min: 1, max: 12 })).map(([a, b, step]) => `${a}-${b}/${step}`) },
        // out of range, now and then
        { weight: 1, arbitrary: number(max + 1, max + 3) },
      );
    const field = (min: number, max: number) => fc.oneof({ weight: 1, arbitrary: fc.constant('*') }, { weight: 3, arbitrary: fc.array(item(min, max), { minLength: 1, maxLength: 3 }).map((items) => items.join(',')) });
    const crontab = fc.tuple(field(0, 59), field(0, 23), field(1, 31), field(1, 12), field(0, 7)).map((fields) => fields.join(' '));
    fc.assert(
      fc.property(crontab, fc.constantFrom(...ZONES), fc.integer({ min: Date.parse('2026-01-01T00:00:00Z'), max: Date.parse('2027-12-31T00:00:00Z') }), (value, zone, from) => {
        const read = readCrontab(value);
        const runs = read.ok ? nextRuns({ type: 'crontab', value }, zone, from, 5) : [];
        // a crontab that reads but never runs (31 April) is one the server refuses too
        expect([value, read.ok && runs.length > 0]).toEqual([value, crontabProblem(value) === undefined]);
        if (runs.length) expect([value, zone, iso(runs)]).toEqual([value, zone, iso(serverRuns({ type: 'crontab', value }, zone, from, 5))]);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('intervals and the next expected check-in agree with the server', () => {
  test('calendar steps in the zone, elapsed minutes and hours', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...INTERVAL_UNITS),
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom(...ZONES),
        fc.integer({ min: Date.parse('2026-01-01T00:00:00Z'), max: Date.parse('2027-12-31T00:00:00Z') }),
        (unit, value, zone, from) => {
          const schedule: Schedule = { type: 'interval', value, unit };
          expect(iso(nextRuns(schedule, zone, from, 4))).toEqual(iso(serverRuns(schedule, zone, from, 4)));
        },
      ),
      { numRuns: 300 },
    );
  });

  test('a check-in just before a run counts as that run, as on the server', () => {
    const cases: Array<[Schedule, string, string]> = [
      [{ type: 'crontab', value: '30 2 * * *' }, 'Europe/Berlin', '2026-06-10T00:29:30Z'],
      [{ type: 'crontab', value: '30 2 * * *' }, 'Europe/Berlin', '2026-06-10T00:28:00Z'],
      [{ type: 'crontab', value: '30 2 * * *' }, 'Europe/Berlin', '2026-10-25T00:29:30Z'],
      [{ type: 'crontab', value: '* * * * *' }, 'UTC', '2026-06-10T00:00:40Z'],
      [{ type: 'crontab', value: '* * * * *' }, 'UTC', '2026-06-10T00:00:20Z'],
      [{ type: 'interval', value: 2, unit: 'hour' }, 'America/New_York', '2026-03-08T06:30:00Z'],
    ];
    for (const [schedule, zone, at] of cases) {
      expect([schedule, at, new Date(nextExpectedAfter(schedule, zone, Date.parse(at))!).toISOString()]).toEqual([schedule, at, serverNextExpected(schedule, zone, new Date(at)).toISOString()]);
    }
  });
});
