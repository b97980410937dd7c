/**
 * When a cron check expects its next check-in: crontabs read by croner in the check's zone, intervals
 * as elapsed time (minutes, hours) or calendar steps (days, weeks, months), and the rules that refuse
 * a schedule or zone. Europe/Berlin in 2026 changes at 01:00Z on 29 March (02:00 CET → 03:00 CEST)
 * and at 01:00Z on 25 October (03:00 CEST → 02:00 CET, so 02:00–02:59 happens twice).
 */
import { crontabProblem, nextExpectedAfter, nextRun, timezoneProblem, type Schedule } from '../../src/shared/features/cron/schedule.js';

const BERLIN = 'Europe/Berlin';
const HOUR = 3_600_000;
const nightly: Schedule = { type: 'crontab', value: '30 2 * * *' };
const daily: Schedule = { type: 'interval', value: 1, unit: 'day' };
const at = (iso: string) => new Date(iso);

/** The scheduled times after `from`, one after another. */
function runsAfter(schedule: Schedule, timezone: string, from: string, count: number): string[] {
  const runs: string[] = [];
  let after = at(from);
  for (let i = 0; i < count; i += 1) {
    after = nextRun(schedule, timezone, after);
    runs.push(after.toISOString());
  }
  return runs;
}

describe('a 02:30 crontab in Europe/Berlin across daylight-saving changes', () => {
  test('spring forward: the skipped 02:30 is expected at 03:00 CEST that day, then 02:30 again', () => {
    expect(runsAfter(nightly, BERLIN, '2026-03-27T12:00:00Z', 4)).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: 02:30 does not exist that night
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  test('fall back: one run that night, at the first 02:30, never a second one an hour later', () => {
    expect(runsAfter(nightly, BERLIN, '2026-10-23T12:00:00Z', 4)).toEqual([
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST)
      '2026-10-26T01:30:00.000Z', // 02:30 CET, the next night: 01:30Z on the 25th is skipped
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  test('a job that checked in at each night\'s actual run is next expected at the following night\'s run', () => {
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-03-28T01:30:05Z')).toISOString()).toBe('2026-03-29T01:00:00.000Z');
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-03-29T01:00:05Z')).toISOString()).toBe('2026-03-30T00:30:00.000Z');
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-10-25T00:30:05Z')).toISOString()).toBe('2026-10-26T01:30:00.000Z');
  });
});

describe('early check-ins', () => {
  test('a check-in 30 s before a run counts as that run: the one after is expected', () => {
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-06-10T00:29:30Z')).toISOString()).toBe('2026-06-11T00:30:00.000Z');
    // across the October change, too: the run after the first 02:30 is the next night's
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-10-25T00:29:30Z')).toISOString()).toBe('2026-10-26T01:30:00.000Z');
  });

  test('a check-in two minutes before a run is the previous run, late: that run is still expected', () => {
    expect(nextExpectedAfter(nightly, BERLIN, at('2026-06-10T00:28:00Z')).toISOString()).toBe('2026-06-10T00:30:00.000Z');
  });

  test('for a job every minute the tolerance is under half the gap, so no run is skipped', () => {
    const everyMinute: Schedule = { type: 'crontab', value: '* * * * *' };
    expect(nextExpectedAfter(everyMinute, 'UTC', at('2026-06-10T10:00:31Z')).toISOString()).toBe('2026-06-10T10:02:00.000Z');
    expect(nextExpectedAfter(everyMinute, 'UTC', at('2026-06-10T10:00:29Z')).toISOString()).toBe('2026-06-10T10:01:00.000Z');
  });
});

describe('intervals', () => {
  test('one day in Europe/Berlin keeps the wall-clock time across both changes (23 h, then 25 h)', () => {
    const spring = at('2026-03-28T09:00:00Z'); // 10:00 CET
    const afterSpring = nextRun(daily, BERLIN, spring);
    expect(afterSpring.toISOString()).toBe('2026-03-29T08:00:00.000Z'); // 10:00 CEST
    expect(afterSpring.getTime() - spring.getTime()).toBe(23 * HOUR);

    const autumn = at('2026-10-24T08:00:00Z'); // 10:00 CEST
    const afterAutumn = nextRun(daily, BERLIN, autumn);
    expect(afterAutumn.toISOString()).toBe('2026-10-25T09:00:00.000Z'); // 10:00 CET
    expect(afterAutumn.getTime() - autumn.getTime()).toBe(25 * HOUR);
  });

  test('hours are elapsed time, even across a change', () => {
    expect(nextRun({ type: 'interval', value: 2, unit: 'hour' }, BERLIN, at('2026-10-25T00:30:00Z')).toISOString()).toBe('2026-10-25T02:30:00.000Z');
    expect(nextRun({ type: 'interval', value: 90, unit: 'minute' }, BERLIN, at('2026-03-29T00:30:00Z')).toISOString()).toBe('2026-03-29T02:00:00.000Z');
  });

  test('a week is seven calendar days in the zone', () => {
    expect(nextRun({ type: 'interval', value: 1, unit: 'week' }, BERLIN, at('2026-03-25T09:00:00Z')).toISOString()).toBe('2026-04-01T08:00:00.000Z');
  });

  test('a month from 31 January is 28 February; from 31 December, 31 January next year', () => {
    const month: Schedule = { type: 'interval', value: 1, unit: 'month' };
    expect(nextRun(month, BERLIN, at('2026-01-31T09:00:00Z')).toISOString()).toBe('2026-02-28T09:00:00.000Z');
    expect(nextRun(month, 'UTC', at('2028-01-31T09:00:00Z')).toISOString()).toBe('2028-02-29T09:00:00.000Z');
    expect(nextRun(month, 'UTC', at('2026-12-31T09:00:00Z')).toISOString()).toBe('2027-01-31T09:00:00.000Z');
  });

  test('an interval ignores the early-check-in tolerance: it counts from the check-in', () => {
    expect(nextExpectedAfter({ type: 'interval', value: 5, unit: 'minute' }, 'UTC', at('2026-06-10T10:00:30Z')).toISOString()).toBe('2026-06-10T10:05:30.000Z');
  });
});

describe('what a schedule or zone may be', () => {
  test('five fields and nicknames are accepted', () => {
    expect(crontabProblem('30 2 * * *')).toBeUndefined();
    expect(crontabProblem('*/15 9-17 * * 1-5')).toBeUndefined();
    expect(crontabProblem('@daily')).toBeUndefined();
    expect(crontabProblem('@hourly')).toBeUndefined();
  });

  test('six fields (seconds), garbage, out-of-range values and an unknown nickname are refused', () => {
    expect(crontabProblem('0 30 2 * * *')).toMatch(/five fields/);
    expect(crontabProblem('every night')).toMatch(/five fields/);
    expect(crontabProblem('61 * * * *')).toMatch(/minute/);
    expect(crontabProblem('a b c d e')).toEqual(expect.any(String));
    expect(crontabProblem('@fortnightly')).toEqual(expect.any(String));
  });

  test('a crontab that never runs (31 February) is refused', () => {
    expect(crontabProblem('0 0 31 2 *')).toBe('this crontab never runs');
  });

  test('IANA zones are accepted; an unknown name is refused with a hint', () => {
    expect(timezoneProblem('Europe/Berlin')).toBeUndefined();
    expect(timezoneProblem('UTC')).toBeUndefined();
    expect(timezoneProblem('Mars/Olympus_Mons')).toMatch(/unknown time zone "Mars\/Olympus_Mons".*IANA/);
  });
});
