/**
 * What a check's pings and a monitor's probes say over a window, derived in the browser from the
 * histories the API answers: which check-ins came late, the incidents of consecutive failed probes and
 * the uptime they leave.
 */
import type { CronCheck, CronPing, ProbeResult, UptimeMonitor } from './api';
import { nextExpectedAfter } from './schedule';

/** What a mark on the check's timeline stands for. */
export type PingKind = 'ok' | 'start' | 'late' | 'fail' | 'missed' | 'timeout';

/** The monitor judges checks every 10 seconds: a check-in within that of its expected time was never late. */
const SWEEP_MS = 10_000;

export interface ClassifiedPing {
  ping: CronPing;
  kind: PingKind;
  /** When the schedule expected this check-in, for one that came late. */
  expectedAt?: number;
}

const checkIns = new Set(['start', 'ok', 'fail']);

/**
 * Each ping's kind, oldest first. A start or success that came more than the monitor's 10-second sweep
 * after the time the schedule expected it (counted from the check-in before, under the current schedule)
 * is late; after a miss or a timeout the next check-in is a recovery, not late.
 */
export function classifyPings(pings: readonly CronPing[], check: Pick<CronCheck, 'schedule' | 'timezone'>): ClassifiedPing[] {
  const oldestFirst = [...pings].sort((a, b) => a.received_at.localeCompare(b.received_at));
  return oldestFirst.map((ping, index) => {
    const before = oldestFirst[index - 1];
    if (ping.status === 'fail' || ping.status === 'missed' || ping.status === 'timeout') return { ping, kind: ping.status };
    if (before && checkIns.has(before.status)) {
      const expectedAt = nextExpectedAfter(check.schedule, check.timezone, Date.parse(before.received_at));
      if (expectedAt !== undefined && Date.parse(ping.received_at) > expectedAt + SWEEP_MS) return { ping, kind: 'late', expectedAt };
    }
    return { ping, kind: ping.status };
  });
}

export interface Incident {
  /** The first failed probe of the run that took the monitor down. */
  start: string;
  /** The probe that brought it back up, or null while it is down. */
  end: string | null;
  failedProbes: number;
  firstError: string | null;
}

/**
 * Down periods, oldest first, replayed from probe results the way the monitor judges them:
 * `failure_threshold` failures in a row take it down from the first of them, `recovery_threshold`
 * successes in a row bring it back.
 */
export function incidentsOf(probes: readonly ProbeResult[], monitor: Pick<UptimeMonitor, 'failure_threshold' | 'recovery_threshold'>): Incident[] {
  const oldestFirst = [...probes].sort((a, b) => a.checked_at.localeCompare(b.checked_at));
  const incidents: Incident[] = [];
  let run: ProbeResult[] = [];
  let open: Incident | undefined;
  let successes = 0;
  for (const probe of oldestFirst) {
    if (!probe.ok) {
      successes = 0;
      if (open) open.failedProbes += 1;
      else {
        run.push(probe);
        if (run.length >= monitor.failure_threshold) {
          open = { start: run[0]!.checked_at, end: null, failedProbes: run.length, firstError: run[0]!.error };
          incidents.push(open);
        }
      }
      continue;
    }
    run = [];
    successes += 1;
    if (open && successes >= monitor.recovery_threshold) {
      open.end = probe.checked_at;
      open = undefined;
    }
  }
  return incidents;
}

/** The share of probes that succeeded, or null without any. */
export const uptimeRatio = (probes: readonly ProbeResult[]) => (probes.length ? probes.filter((probe) => probe.ok).length / probes.length : null);

/** The days the certificate had left at the newest probe that reported it (probes newest first, as the API answers). */
export const latestTlsDaysLeft = (probes: readonly ProbeResult[]) => probes.find((probe) => probe.tls_days_left !== null)?.tls_days_left ?? null;
