/**
 * Series climbing toward a threshold: each service's error rate and p95 latency (from the span
 * rollups), and the gauges named in the organisation's settings (from their points), one point per
 * step of the window. A least-squares line through the points gives the slope per hour and the
 * time it reaches the threshold (`eta`). A series is listed when it has at least MIN_POINTS points,
 * its slope is positive, its latest value is still under the threshold, and the line reaches the
 * threshold within `horizon_hours` of the window's end.
 */
import type { z } from 'zod';
import { notFound } from '../../errors.js';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { HOUR_MS } from '../../telemetry/time-buckets.js';
import { inWindowByHour, stepMsOf, stepStartOf, type ViewScope } from '../../views.js';
import { Organization } from '../accounts/model.js';
import { MetricPoint } from '../metrics/model.js';
import { thresholdsOf } from '../settings/service.js';
import { SpanRollup } from './model.js';
import type { approachingJson, approachingQuery } from './schemas.js';

export const APPROACHING_RULES = {
  MIN_POINTS: 4,
  /** A step's error rate and p95 count as a point from this many requests. */
  MIN_STEP_REQUESTS: 5,
} as const;

type Row = z.infer<typeof approachingJson>['data'][number];

interface Point {
  t: number;
  value: number;
}

/** The least-squares line through the points, x in hours: value = intercept + slope × hours since `origin`. */
export function leastSquares(points: Point[], origin: number): { slope: number; intercept: number } {
  const xs = points.map((point) => (point.t - origin) / HOUR_MS);
  const meanX = xs.reduce((sum, x) => sum + x, 0) / xs.length;
  const meanY = points.reduce((sum, point) => sum + point.value, 0) / points.length;
  let covariance = 0;
  let variance = 0;
  xs.forEach((x, index) => {
    covariance += (x - meanX) * (points[index]!.value - meanY);
    variance += (x - meanX) ** 2;
  });
  const slope = variance === 0 ? 0 : covariance / variance;
  return { slope, intercept: meanY - slope * meanX };
}

const round = (value: number, digits = 4) => Number(value.toFixed(digits));

/** The row of a climbing series, or undefined when it is not approaching its threshold within the horizon. */
function approach(series: Omit<Row, 'current' | 'slope_per_hour' | 'eta' | 'points'>, points: Point[], scope: ViewScope, horizonHours: number): Row | undefined {
  if (points.length < APPROACHING_RULES.MIN_POINTS) return undefined;
  const sorted = [...points].sort((a, b) => a.t - b.t);
  const origin = scope.from.getTime();
  const { slope, intercept } = leastSquares(sorted, origin);
  const current = sorted.at(-1)!;
  if (slope <= 0 || current.value >= series.threshold) return undefined;
  const reachMs = origin + ((series.threshold - intercept) / slope) * HOUR_MS;
  const eta = Math.max(reachMs, current.t);
  if (eta > scope.to.getTime() + horizonHours * HOUR_MS) return undefined;
  return {
    ...series,
    current: round(current.value),
    slope_per_hour: round(slope, 6),
    eta: new Date(eta).toISOString(),
    points: sorted.map((point) => ({ t: new Date(point.t).toISOString(), value: round(point.value) })),
  };
}

interface ServiceRollup {
  at: Date;
  service: string;
  count: number;
  failed: number;
  latency?: Buckets;
}

interface GaugePoint {
  time: Date;
  service: string;
  value: number | null;
}

/** Every watched series of the scope climbing toward its threshold, soonest first. */
export async function approachingThresholds(scope: ViewScope, query: z.output<typeof approachingQuery>): Promise<z.infer<typeof approachingJson>> {
  const org = await Organization.findById(scope.orgId, { thresholds: 1 }).lean();
  if (!org) throw notFound('organization');
  const thresholds = thresholdsOf(org);
  const stepMs = stepMsOf(scope, query.step);
  const stepOf = (ms: number) => stepStartOf(scope, stepMs, ms);
  const rows: Row[] = [];

  const services = new Map<string, Map<number, { count: number; failed: number; latency: Buckets }>>();
  for (const doc of await inWindowByHour<ServiceRollup>(SpanRollup.collection, scope, scope.from, scope.to, { kind: 'service' })) {
    const steps = services.get(doc.service) ?? new Map();
    services.set(doc.service, steps);
    const t = stepOf(doc.at.getTime());
    const step = steps.get(t) ?? { count: 0, failed: 0, latency: {} };
    steps.set(t, step);
    step.count += doc.count;
    step.failed += doc.failed;
    addBuckets(step.latency, doc.latency);
  }
  for (const [service, steps] of services) {
    const enough = [...steps].filter(([, step]) => step.count >= APPROACHING_RULES.MIN_STEP_REQUESTS);
    const errorRates = enough.map(([t, step]) => ({ t, value: step.failed / step.count }));
    const p95s = enough.map(([t, step]) => ({ t, value: percentile(step.latency, 95) ?? 0 }));
    const errorRow = approach({ kind: 'service', metric: 'error_rate', service, threshold: thresholds.error_rate }, errorRates, scope, query.horizon_hours);
    const p95Row = approach({ kind: 'service', metric: 'p95_ms', service, threshold: thresholds.p95_ms }, p95s, scope, query.horizon_hours);
    if (errorRow) rows.push(errorRow);
    if (p95Row) rows.push(p95Row);
  }

  await Promise.all(
    thresholds.gauges.map(async (gauge) => {
      const points = await inWindowByHour<GaugePoint>(MetricPoint.collection, scope, scope.from, scope.to, { name: gauge.name, type: 'gauge' }, (point) => point.time);
      // per service, each step's mean value
      const byService = new Map<string, Map<number, { sum: number; count: number }>>();
      for (const point of points) {
        if (point.value === null) continue;
        const steps = byService.get(point.service) ?? new Map();
        byService.set(point.service, steps);
        const t = stepOf(point.time.getTime());
        const step = steps.get(t) ?? { sum: 0, count: 0 };
        steps.set(t, step);
        step.sum += point.value;
        step.count += 1;
      }
      for (const [service, steps] of byService) {
        const row = approach({ kind: 'gauge', metric: gauge.name, service, threshold: gauge.threshold }, [...steps].map(([t, step]) => ({ t, value: step.sum / step.count })), scope, query.horizon_hours);
        if (row) rows.push(row);
      }
    }),
  );
  rows.sort((a, b) => a.eta.localeCompare(b.eta) || a.service.localeCompare(b.service) || a.metric.localeCompare(b.metric));
  return { from: scope.from.toISOString(), to: scope.to.toISOString(), step: stepMs / 1000, data: rows };
}

