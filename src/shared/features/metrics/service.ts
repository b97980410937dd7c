/**
 * The reads of metrics: the names a window reported, and a metric's series, added up from what the
 * workers stored (store.ts).
 */
import type { Types } from 'mongoose';
import type { z } from 'zod';
import { checkDeadline, untilDeadline } from '../../context.js';
import { notFound } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../paging.js';
import { lastUnmarkedHour } from '../../telemetry/rolled-up-hours.js';
import { hasAttributes, inParallel, type AttributePair } from '../../telemetry/storage.js';
import { epochMinuteOf, HOUR_MS, hourOf, MINUTE_MS, minuteOf } from '../../telemetry/time-buckets.js';
import { hoursDown, readHours, readOnce, scopeFilter, stepMsOf, stepStartOf, type ViewScope } from '../../views.js';
import { MetricHour, MetricName, MetricPoint, MetricRollup } from './model.js';
import type { metricAggregations, metricNameJson, metricNamesQuery, metricSeriesJson, metricSeriesQuery } from './schemas.js';
import { isDistribution, layoutOf, rollupTotals, type PointDoc } from './store.js';

/** The window's metric names (reported in it), by name; one entry per name across the scope's projects. */
export async function listMetricNames(scope: ViewScope, query: z.output<typeof metricNamesQuery>): Promise<{ data: z.infer<typeof metricNameJson>[]; next_cursor: string | null }> {
  const docs = await MetricName.find(scopeFilter(scope)).lean();
  const byName = new Map<string, z.infer<typeof metricNameJson>>();
  for (const doc of docs.filter((name) => name.lastSeenAt >= scope.from && name.firstSeenAt < scope.to)) {
    const seen = byName.get(doc.name);
    const keys = new Set([...(seen?.attribute_keys ?? []), ...(doc.attributeKeys ?? [])]);
    byName.set(doc.name, {
      name: doc.name,
      type: doc.type,
      unit: doc.unit ?? null,
      attribute_keys: [...keys].sort(),
      project_ids: [...(seen?.project_ids ?? []), doc.projectId.toHexString()].sort(),
      first_seen: seen && seen.first_seen < doc.firstSeenAt.toISOString() ? seen.first_seen : doc.firstSeenAt.toISOString(),
      last_seen: seen && seen.last_seen > doc.lastSeenAt.toISOString() ? seen.last_seen : doc.lastSeenAt.toISOString(),
    });
  }
  const sorted = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  const start = query.cursor ? sorted.findIndex((name) => name.name > String(decodeCursor(query.cursor!, 1)[0])) : 0;
  const page = start < 0 ? [] : sorted.slice(start, start + query.limit);
  const more = start >= 0 && start + query.limit < sorted.length;
  return { data: page, next_cursor: more ? encodeCursor([page.at(-1)!.name]) : null };
}

/**
 * The quantile q of explicit-bounds histogram buckets: the bucket holding the rank, interpolated
 * linearly within it (the first bucket from 0 or its upper bound, the last reported as its lower bound).
 */
export function histogramQuantile(bounds: number[], counts: number[], q: number): number | null {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const count = counts[i]!;
    if (seen + count >= rank && count > 0) {
      if (i === counts.length - 1) return bounds.at(-1) ?? null;
      const upper = bounds[i]!;
      const lower = i === 0 ? Math.min(0, upper) : bounds[i - 1]!;
      return lower + ((upper - lower) * (rank - seen)) / count;
    }
    seen += count;
  }
  return bounds.at(-1) ?? null;
}

/** A minute of a series as a step adds it up: a rollup's fields, or one point's (rollupTotals), by their `$inc` paths. */
type MinuteTotals = Record<string, number>;

/** What a step adds up of its minutes: value points apart from distributions, and bucket counts per layout. */
interface StepTotals {
  values: number;
  valueSum: number;
  valueMin: number | null;
  valueMax: number | null;
  distributions: number;
  count: number;
  sum: number;
  min: number | null;
  max: number | null;
  /** Per layout (its bounds as JSON): the earliest minute it was seen in, and its summed bucket counts. */
  layouts: Map<string, { atMs: number; bounds: number[]; counts: number[] }>;
}

const emptyStep = (): StepTotals => ({ values: 0, valueSum: 0, valueMin: null, valueMax: null, distributions: 0, count: 0, sum: 0, min: null, max: null, layouts: new Map() });
const smaller = (a: number | null, b: number | undefined) => (b === undefined ? a : a === null ? b : Math.min(a, b));
const larger = (a: number | null, b: number | undefined) => (b === undefined ? a : a === null ? b : Math.max(a, b));

function addMinute(step: StepTotals, minute: { atMs: number; type: string; explicitBounds: number[] | null }, totals: MinuteTotals): void {
  if (!isDistribution(minute.type)) {
    step.values += totals.values ?? 0;
    step.valueSum += totals.valueSum ?? 0;
    step.valueMin = smaller(step.valueMin, totals.valueMin);
    step.valueMax = larger(step.valueMax, totals.valueMax);
    return;
  }
  step.distributions += totals.points ?? 0;
  step.count += totals.count ?? 0;
  step.sum += totals.sum ?? 0;
  step.min = smaller(step.min, totals.min);
  step.max = larger(step.max, totals.max);
  if (!minute.explicitBounds) return;
  const key = JSON.stringify(minute.explicitBounds);
  let layout = step.layouts.get(key);
  if (!layout) {
    layout = { atMs: minute.atMs, bounds: minute.explicitBounds, counts: minute.explicitBounds.map(() => 0).concat(0) };
    step.layouts.set(key, layout);
  }
  layout.atMs = Math.min(layout.atMs, minute.atMs);
  for (const [path, count] of Object.entries(totals)) {
    if (!path.startsWith('buckets.')) continue;
    const index = Number(path.slice('buckets.'.length));
    layout.counts[index] = (layout.counts[index] ?? 0) + count;
  }
}

/** One step's value. */
function aggregate(step: StepTotals, aggregation: (typeof metricAggregations)[number], stepSeconds: number): number | null {
  const distributions = step.distributions > 0;
  switch (aggregation) {
    case 'sum':
      return distributions ? step.sum : step.valueSum;
    case 'count':
      return distributions ? step.count : step.values;
    case 'avg':
      if (distributions) return step.count > 0 ? step.sum / step.count : null;
      return step.values > 0 ? step.valueSum / step.values : null;
    case 'min':
      return distributions ? step.min : step.valueMin;
    case 'max':
      return distributions ? step.max : step.valueMax;
    case 'rate':
      return (distributions ? step.count : step.valueSum) / stepSeconds;
    default: {
      // percentiles, from the explicit-bounds histograms of one layout (the earliest seen in the step)
      let first: { atMs: number; bounds: number[]; counts: number[] } | undefined;
      for (const layout of step.layouts.values()) if (!first || layout.atMs < first.atMs) first = layout;
      return first ? histogramQuantile(first.bounds, first.counts, Number(aggregation.slice(1)) / 100) : null;
    }
  }
}

/** The default aggregation of a type: what its points mean when added up per step. */
const defaultAggregation = (type: string) => (type === 'gauge' ? 'avg' : isDistribution(type) ? 'p95' : 'sum');

type StoredPoint = PointDoc & { _id: Types.ObjectId };

/** A minute of a series as a rollup holds it: a MetricRollup, or one minute of a MetricHour. */
interface MinuteCounts {
  earliestMs?: number | null;
  latestMs?: number | null;
  buckets?: Record<string, number>;
  [total: string]: unknown;
}

/** What a minute's entry carries besides its counts: its series' type and layout, and its attributes. */
interface SeriesMinute {
  atMs: number;
  type: string;
  attributes: AttributePair[];
  explicitBounds: number[] | null;
  counts: MinuteCounts;
}

type StoredRollup = MinuteCounts & { at: Date; type: string; attributes: AttributePair[]; explicitBounds: number[] | null };
type StoredHour = { at: Date; type: string; attributes: AttributePair[]; explicitBounds: number[] | null; minutes?: Record<string, MinuteCounts> };

/** What the series reads of a rollup, and of an hour. */
const ROLLUP_FIELDS = { _id: 0, at: 1, earliestMs: 1, latestMs: 1, type: 1, attributes: 1, explicitBounds: 1, points: 1, values: 1, valueSum: 1, valueMin: 1, valueMax: 1, count: 1, sum: 1, min: 1, max: 1, buckets: 1 };
const HOUR_FIELDS = { _id: 0, at: 1, type: 1, attributes: 1, explicitBounds: 1, minutes: 1 };
const ROLLUP_TOTALS = ['points', 'values', 'valueSum', 'valueMin', 'valueMax', 'count', 'sum', 'min', 'max'];

/** A minute's counters by their `$inc` paths, as rollupTotals gives a point's. */
function totalsOf(counts: MinuteCounts): MinuteTotals {
  const totals: MinuteTotals = {};
  for (const field of ROLLUP_TOTALS) if (typeof counts[field] === 'number') totals[field] = counts[field];
  for (const [index, count] of Object.entries(counts.buckets ?? {})) totals[`buckets.${index}`] = count;
  return totals;
}

/** The minutes in [fromMs, toMs) of stored rollups and hours, one entry per series and minute of each. */
function minutesOf(rollups: StoredRollup[], hours: StoredHour[], fromMs: number, toMs: number): SeriesMinute[] {
  const minutes: SeriesMinute[] = rollups.map((rollup) => ({ atMs: rollup.at.getTime(), type: rollup.type, attributes: rollup.attributes, explicitBounds: rollup.explicitBounds ?? null, counts: rollup }));
  for (const hour of hours) {
    for (const [minute, counts] of Object.entries(hour.minutes ?? {})) {
      const atMs = hour.at.getTime() + Number(minute) * MINUTE_MS;
      if (atMs >= fromMs && atMs < toMs) minutes.push({ atMs, type: hour.type, attributes: hour.attributes, explicitBounds: hour.explicitBounds ?? null, counts });
    }
  }
  return minutes;
}

/** Minutes of points read at once. */
const PARALLEL_MINUTES = 4;

/**
 * An hour whose minutes the steps' starts and the window's edges cut more often than this is read from
 * its points in one lookup, as one lookup per cut minute would cost more (a window that starts inside a
 * minute with steps of a few minutes cuts most of them).
 */
const MAX_CUT_MINUTES = 6;

/** How many of the hour's minutes a step's start or the window's edge falls inside of, counted up to MAX_CUT_MINUTES + 1. */
function cutMinutesOf(hour: number, from: number, to: number, stepMs: number): number {
  const [start, end] = [hour * HOUR_MS, (hour + 1) * HOUR_MS];
  const inside = (ms: number) => ms >= start && ms < end && ms % MINUTE_MS !== 0;
  let cuts = Number(inside(from)) + Number(inside(to));
  if ((from % MINUTE_MS === 0 && stepMs % MINUTE_MS === 0) || cuts > MAX_CUT_MINUTES) return cuts;
  for (let boundary = from + Math.max(1, Math.ceil((start - from) / stepMs)) * stepMs; boundary < Math.min(end, to); boundary += stepMs) {
    if (inside(boundary) && ++cuts > MAX_CUT_MINUTES) break;
  }
  return cuts;
}

/** The points of the given minutes (epoch ms of their starts) that match `filter`. */
async function pointsOfMinutes(filter: Record<string, unknown>, minutes: number[]): Promise<StoredPoint[]> {
  const found: StoredPoint[] = [];
  await inParallel(minutes, PARALLEL_MINUTES, async (atMs) => {
    const points = await readOnce(() => {
      checkDeadline();
      return MetricPoint.collection.find({ ...filter, minute: epochMinuteOf(atMs) }, untilDeadline()).toArray() as unknown as Promise<StoredPoint[]>;
    });
    for (const point of points) found.push(point);
  });
  return found;
}

/**
 * Points of a named metric, every series matching the filters combined, one per step. Read from the
 * series' hours (MetricHour, one document per series and hour holding its minutes) an hour at a time, by
 * equality on the name and the hour, so its cost follows the window's hours and series, not its points.
 * A minute that a step's start or the window's edge cuts is read from its points unless they all fall on
 * one side of the cut; so is an hour that many such minutes fall in. Hours before the organisation's
 * metric hours began are read from the per-minute rollups written then, and hours before those began
 * from their points. Cumulative counters were stored as deltas, so `sum` is the increase over a step and
 * `rate` that increase per second.
 */
export async function metricSeries(scope: ViewScope, query: z.output<typeof metricSeriesQuery>): Promise<z.infer<typeof metricSeriesJson>> {
  const stepMs = stepMsOf(scope, query.step);
  const registered = await MetricName.findOne({ ...scopeFilter(scope), name: query.name }).lean();
  if (!registered) throw notFound('metric');
  const filter = { ...scopeFilter(scope), name: query.name, ...(query.service !== undefined && { service: query.service }) };
  const [from, to] = [scope.from.getTime(), scope.to.getTime()];
  const stepOf = (ms: number) => stepStartOf(scope, stepMs, ms);
  const steps = new Map<number, StepTotals>();
  const add = (atMs: number, minute: { atMs: number; type: string; explicitBounds: number[] | null }, totals: MinuteTotals) => {
    const t = stepOf(atMs);
    let step = steps.get(t);
    if (!step) steps.set(t, (step = emptyStep()));
    addMinute(step, minute, totals);
  };
  const addPoint = (point: StoredPoint) => {
    const { counts, min, max } = rollupTotals(point);
    add(point.time.getTime(), { atMs: point.time.getTime(), type: point.type, explicitBounds: layoutOf(point) }, { ...counts, ...min, ...max });
  };

  // hours up to the organisation's first metric hour may hold rollups per minute (written before), and
  // hours up to its first rollups only points; a point is counted in one of them, so both are read
  const [lastUnrolled, lastBeforeHours] = await Promise.all([lastUnmarkedHour(MetricRollup.collection, scope.orgId), lastUnmarkedHour(MetricHour.collection, scope.orgId)]);
  const fromPoints = (hour: number) => hour <= Math.min(lastUnrolled, lastBeforeHours) || cutMinutesOf(hour, from, to, stepMs) > MAX_CUT_MINUTES;
  const hours = hoursDown(scope.from, scope.to);
  const counted = hours.filter((hour) => !fromPoints(hour));
  const [points, rollups, hourly] = await Promise.all([
    readHours<StoredPoint>(MetricPoint.collection, hours.filter(fromPoints), scope.from, scope.to, filter, (point) => point.time),
    readHours<StoredRollup>(MetricRollup.collection, counted.filter((hour) => hour <= lastBeforeHours), new Date(minuteOf(from)), scope.to, filter, (rollup) => rollup.at, ROLLUP_FIELDS),
    readHours<StoredHour>(MetricHour.collection, counted, new Date(hourOf(from) * HOUR_MS), scope.to, filter, (hour) => hour.at, HOUR_FIELDS),
  ]);
  const minutes = minutesOf(rollups, hourly, minuteOf(from), to).filter((minute) => hasAttributes(minute.attributes, query.attribute));
  // a minute is read from its points when a step's start or the window's edge falls among them (in
  // any of its entries: a minute written on both sides of the upgrade has one in each collection)
  const cutMinutes = new Set<number>();
  for (const minute of minutes) {
    // the span of its points, where the rollup keeps it (a window ending now cuts the minute it ends in, before any point)
    const [earliest, latest] = [minute.counts.earliestMs ?? minute.atMs, minute.counts.latestMs ?? minute.atMs + MINUTE_MS - 1];
    if (earliest < from || latest >= to || stepOf(earliest) !== stepOf(latest)) cutMinutes.add(minute.atMs);
  }
  for (const minute of minutes) {
    if (!cutMinutes.has(minute.atMs)) add(minute.counts.earliestMs ?? minute.atMs, minute, totalsOf(minute.counts));
  }
  for (const point of points) if (hasAttributes(point.attributes, query.attribute)) addPoint(point);
  for (const point of await pointsOfMinutes(filter, [...cutMinutes])) {
    const time = point.time.getTime();
    if (time >= from && time < to && hasAttributes(point.attributes, query.attribute)) addPoint(point);
  }
  const aggregation = query.aggregation ?? defaultAggregation(registered.type);
  return {
    name: query.name,
    type: registered.type,
    unit: registered.unit ?? null,
    aggregation,
    step: stepMs / 1000,
    from: scope.from.toISOString(),
    to: scope.to.toISOString(),
    points: [...steps]
      .sort(([a], [b]) => a - b)
      .map(([t, step]) => ({ t: new Date(t).toISOString(), value: aggregate(step, aggregation, stepMs / 1000) })),
  };
}
