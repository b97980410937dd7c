/**
 * The anomaly detector, run once a minute by a BullMQ job scheduler (one run per tick, however many
 * workers). For every service that served requests or wrote logs in the last hour and five minutes,
 * it compares the last complete WINDOW_MINUTES with the BASELINE_WINDOWS windows of the same
 * length before it, on four metrics: throughput (requests per minute), error rate, p95 latency and
 * log volume (logs per minute), all read from the per-minute rollups.
 *
 * The rule (robust statistics, so one earlier spike does not hide the next):
 * - baseline = median of the earlier windows' values; spread = 1.4826 × their median absolute
 *   deviation, but at least the metric's floor (SPREAD_FLOOR), so a flat baseline is not infinitely
 *   sensitive;
 * - score = (observed − baseline) / spread; the band is baseline ± THRESHOLD × spread;
 * - anomalous when |score| ≥ THRESHOLD: upwards only for error rate, p95 and log volume; both ways
 *   for throughput (a drop in traffic matters as much as a flood);
 * - only with enough data: at least MIN_BASELINE_WINDOWS earlier windows with a value (error rate and
 *   p95 need MIN_WINDOW_REQUESTS requests for a window to count), and MIN_VOLUME requests (logs
 *   for log volume) in the window judged, or in the baseline's typical window for a drop.
 * An anomaly opens at the first anomalous window and closes at the first evaluation whose window is
 * back inside the band (or has too little data to judge).
 */
import { openAlert, resolveAlert } from '../alerts/service.js';
import type { Types } from 'mongoose';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { contentId } from '../../telemetry/storage.js';
import { MINUTE_MS, minuteOf } from '../../telemetry/time-buckets.js';
import { allInWindowByHour } from '../../views.js';
import { LogRollup } from '../logs/model.js';
import { SpanRollup } from '../services/model.js';
import { Anomaly, type anomalyMetrics } from './model.js';

type Metric = (typeof anomalyMetrics)[number];

export const ANOMALY_RULES = {
  WINDOW_MINUTES: 5,
  BASELINE_WINDOWS: 12,
  MIN_BASELINE_WINDOWS: 6,
  THRESHOLD: 3.5,
  MIN_VOLUME: 20,
  MIN_WINDOW_REQUESTS: 5,
  /** Spread floors: an absolute one, and a share of the baseline. */
  SPREAD_FLOOR: {
    throughput: { absolute: 0.2, relative: 0.1 },
    error_rate: { absolute: 0.01, relative: 0.1 },
    p95_ms: { absolute: 1, relative: 0.1 },
    log_volume: { absolute: 0.2, relative: 0.1 },
  },
} as const;

/** What one window of one service holds. */
interface WindowTotals {
  requests: number;
  failed: number;
  latency: Buckets;
  logs: number;
}

interface Series {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  service: string;
  /** BASELINE_WINDOWS earlier windows, oldest first, then the window judged. */
  windows: WindowTotals[];
}

interface Judgement {
  metric: Metric;
  observed: number;
  baseline: number;
  bandLow: number;
  bandHigh: number;
  score: number;
  anomalous: boolean;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** A metric's value in a window, or undefined when the window has too little to say. */
function valueOf(metric: Metric, window: WindowTotals): number | undefined {
  const r = ANOMALY_RULES;
  switch (metric) {
    case 'throughput':
      return window.requests / r.WINDOW_MINUTES;
    case 'log_volume':
      return window.logs / r.WINDOW_MINUTES;
    case 'error_rate':
      return window.requests >= r.MIN_WINDOW_REQUESTS ? window.failed / window.requests : undefined;
    case 'p95_ms':
      return window.requests >= r.MIN_WINDOW_REQUESTS ? (percentile(window.latency, 95) ?? undefined) : undefined;
  }
}

/** Judges the last window of a series on one metric (the rule in this file's header); undefined when there is too little data. */
export function judge(metric: Metric, windows: WindowTotals[]): Judgement | undefined {
  const r = ANOMALY_RULES;
  const current = windows.at(-1)!;
  const earlier = windows.slice(0, -1);
  const volume = (window: WindowTotals) => (metric === 'log_volume' ? window.logs : window.requests);
  // for counts, a quiet window is a zero, but only once the service has been seen
  const seen = earlier.filter((window) => volume(window) > 0).length;
  const values = earlier.map((window) => valueOf(metric, window)).filter((value): value is number => value !== undefined);
  const known = metric === 'throughput' || metric === 'log_volume' ? (seen >= r.MIN_BASELINE_WINDOWS ? values : []) : values;
  const observed = valueOf(metric, current);
  if (known.length < r.MIN_BASELINE_WINDOWS || observed === undefined) return undefined;
  const baseline = median(known);
  const mad = median(known.map((value) => Math.abs(value - baseline)));
  const floor = r.SPREAD_FLOOR[metric];
  const spread = Math.max(1.4826 * mad, floor.absolute, floor.relative * Math.abs(baseline));
  const score = (observed - baseline) / spread;
  const typicalVolume = median(earlier.map(volume));
  const enough = metric === 'throughput' ? Math.max(volume(current), typicalVolume) >= r.MIN_VOLUME : volume(current) >= r.MIN_VOLUME;
  const outside = metric === 'throughput' ? Math.abs(score) >= r.THRESHOLD : score >= r.THRESHOLD;
  return { metric, observed, baseline, bandLow: Math.max(0, baseline - r.THRESHOLD * spread), bandHigh: baseline + r.THRESHOLD * spread, score, anomalous: enough && outside };
}

const round = (value: number) => Number(value.toPrecision(4));
const labels: Record<Metric, string> = { throughput: 'throughput', error_rate: 'error rate', p95_ms: 'p95 latency', log_volume: 'log volume' };
const formats: Record<Metric, (value: number) => string> = {
  throughput: (value) => `${round(value)} requests/min`,
  error_rate: (value) => `${round(value * 100)}%`,
  p95_ms: (value) => `${round(value)} ms`,
  log_volume: (value) => `${round(value)} logs/min`,
};

function reasonOf(service: string, judgement: Judgement, windowEnd: Date): string {
  const r = ANOMALY_RULES;
  const say = formats[judgement.metric];
  const direction = judgement.score >= 0 ? 'above' : 'below';
  return (
    `${service}: ${labels[judgement.metric]} ${say(judgement.observed)} in the ${r.WINDOW_MINUTES} minutes to ${windowEnd.toISOString()}, ` +
    `against a usual ${say(judgement.baseline)} (the median of the ${r.BASELINE_WINDOWS} windows before; normal band ${say(judgement.bandLow)} to ${say(judgement.bandHigh)}): ` +
    `${round(Math.abs(judgement.score))} robust deviations ${direction}, the threshold being ${r.THRESHOLD}.`
  );
}

interface RollupDoc {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  at: Date;
  service: string;
  count: number;
  failed?: number;
  latency?: Buckets;
}

/** Every service's windows over the hour and five minutes before `end`. */
async function seriesBefore(end: number): Promise<Series[]> {
  const r = ANOMALY_RULES;
  const windowMs = r.WINDOW_MINUTES * MINUTE_MS;
  const count = r.BASELINE_WINDOWS + 1;
  const from = new Date(end - count * windowMs);
  const [spans, logs] = await Promise.all([
    allInWindowByHour<RollupDoc>(SpanRollup.collection, from, new Date(end), { kind: 'service' }),
    allInWindowByHour<RollupDoc>(LogRollup.collection, from, new Date(end)),
  ]);
  const series = new Map<string, Series>();
  const windowOf = (doc: RollupDoc) => {
    const key = JSON.stringify([doc.projectId.toHexString(), doc.service]);
    let entry = series.get(key);
    if (!entry) {
      entry = { orgId: doc.orgId, projectId: doc.projectId, service: doc.service, windows: Array.from({ length: count }, () => ({ requests: 0, failed: 0, latency: {}, logs: 0 })) };
      series.set(key, entry);
    }
    return entry.windows[Math.floor((doc.at.getTime() - from.getTime()) / windowMs)]!;
  };
  for (const doc of spans) {
    const window = windowOf(doc);
    window.requests += doc.count;
    window.failed += doc.failed ?? 0;
    addBuckets(window.latency, doc.latency);
  }
  for (const doc of logs) windowOf(doc).logs += doc.count;
  return [...series.values()];
}

interface OpenAnomaly {
  _id: Types.ObjectId;
  projectId: Types.ObjectId;
  service: string;
  metric: Metric;
}

/**
 * Judges the window ending at the last whole minute before `now`, opens, updates and closes
 * anomalies accordingly, and answers how many it opened and closed.
 */
export async function detectAnomalies(now = Date.now()): Promise<{ opened: number; closed: number }> {
  const r = ANOMALY_RULES;
  const end = minuteOf(now);
  const windowEnd = new Date(end);
  const windowStart = new Date(end - r.WINDOW_MINUTES * MINUTE_MS);
  const [series, open] = await Promise.all([seriesBefore(end), Anomaly.find({ endedAt: null }, { projectId: 1, service: 1, metric: 1 }).lean<OpenAnomaly[]>()]);
  const openByKey = new Map(open.map((anomaly) => [JSON.stringify([anomaly.projectId.toHexString(), anomaly.service, anomaly.metric]), anomaly]));
  let opened = 0;
  const writes: Promise<unknown>[] = [];
  for (const entry of series) {
    for (const metric of ['throughput', 'error_rate', 'p95_ms', 'log_volume'] as const) {
      const key = JSON.stringify([entry.projectId.toHexString(), entry.service, metric]);
      const judgement = judge(metric, entry.windows);
      const current = openByKey.get(key);
      if (!judgement?.anomalous) continue;
      openByKey.delete(key);
      const values = {
        observed: judgement.observed,
        baseline: judgement.baseline,
        bandLow: judgement.bandLow,
        bandHigh: judgement.bandHigh,
        score: judgement.score,
        reason: reasonOf(entry.service, judgement, windowEnd),
        evaluatedAt: windowEnd,
      };
      if (current) {
        writes.push(Anomaly.updateOne({ _id: current._id }, { $set: values, $max: { peakScore: Math.abs(judgement.score) } }));
        continue;
      }
      opened += 1;
      const id = contentId('anomaly', entry.projectId.toHexString(), entry.service, metric, windowStart);
      writes.push(
        Anomaly.updateOne(
          { _id: id },
          { $setOnInsert: { orgId: entry.orgId, projectId: entry.projectId, service: entry.service, metric, startedAt: windowStart, endedAt: null }, $set: values, $max: { peakScore: Math.abs(judgement.score) } },
          { upsert: true },
        ),
        openAlert({
          key: `anomaly:${id.toHexString()}`,
          orgId: entry.orgId,
          projectId: entry.projectId,
          kind: 'anomaly',
          subject: { type: 'anomaly', id: id.toHexString() },
          title: values.reason,
          details: { service: entry.service, metric, observed: judgement.observed, baseline: judgement.baseline, score: judgement.score },
          at: windowEnd,
        }),
      );
    }
  }
  // what is still open was not found anomalous this time: back inside its band, or too quiet to judge
  for (const anomaly of openByKey.values()) {
    writes.push(Anomaly.updateOne({ _id: anomaly._id, endedAt: null }, { $set: { endedAt: windowEnd } }), resolveAlert(`anomaly:${anomaly._id.toHexString()}`, windowEnd));
  }
  await Promise.all(writes);
  return { opened, closed: openByKey.size };
}
