import { Types, type mongo } from 'mongoose';
import type { z } from 'zod';
import { notFound } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../paging.js';
import { sha256 } from '../../secrets.js';
import type { MetricPoint as MetricPointRecord, Stamped } from '../../telemetry/records.js';
import { attributePairs, contentId, hasAttributes, insertNew, inTurns, updateEach, upsertAll } from '../../telemetry/storage.js';
import { hourOf } from '../../telemetry/time-buckets.js';
import { inWindowByHour, scopeFilter, stepMsOf, stepStartOf, type ViewScope } from '../../views.js';
import { MetricName, MetricPoint, MetricSeries } from './model.js';
import type { metricAggregations, metricNameJson, metricNamesQuery, metricSeriesJson, metricSeriesQuery } from './schemas.js';

function pointDoc({ orgId, projectId, record }: Stamped<MetricPointRecord>) {
  const attributes = attributePairs(record.attributes);
  const seriesKey = sha256(JSON.stringify([projectId, record.name, record.service, attributes])).slice(0, 32);
  return {
    _id: contentId(seriesKey, record.type, record.startTimeMs ?? null, record.timeMs),
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    name: record.name,
    type: record.type,
    unit: record.unit ?? null,
    seriesKey,
    service: record.service,
    environment: record.environment ?? null,
    release: record.release ?? null,
    time: new Date(record.timeMs),
    startAt: record.startTimeMs === undefined ? null : new Date(record.startTimeMs),
    temporality: record.temporality ?? null,
    isMonotonic: record.isMonotonic ?? null,
    value: record.value ?? null,
    count: record.count ?? null,
    sum: record.sum ?? null,
    min: record.min ?? null,
    max: record.max ?? null,
    bucketCounts: record.bucketCounts ?? null,
    explicitBounds: record.explicitBounds ?? null,
    exponential: record.exponential ?? null,
    quantiles: record.quantiles ?? null,
    attributes,
    hour: hourOf(record.timeMs),
    source: record.source,
  };
}

type PointDoc = ReturnType<typeof pointDoc>;
type Totals = Pick<PointDoc, 'value' | 'count' | 'sum' | 'bucketCounts' | 'explicitBounds'>;
/** A series' last cumulative point, as the MetricSeries model stores it. */
type SeriesState = Totals & { _id: string; orgId: Types.ObjectId; projectId: Types.ObjectId; name: string; lastAt: Date };

/**
 * Points whose totals only grow: monotonic sums and explicit histograms sent cumulative (the OTel
 * SDKs' default). Exponential histograms and up-down sums are stored as sent.
 */
const isCumulativeCounter = (doc: PointDoc) =>
  doc.temporality === 'cumulative' && ((doc.type === 'sum' && doc.isMonotonic === true) || doc.type === 'histogram');

/** The previous point of the same series and exporter incarnation (see the MetricSeries model). */
const seriesStateKey = (doc: PointDoc) => `${doc.seriesKey}@${doc.startAt?.getTime() ?? ''}`;

/** What a cumulative point adds to the previous one, or undefined when the series was reset (a total fell, or the buckets changed). */
function increase(doc: PointDoc, previous: Totals): Partial<PointDoc> | undefined {
  if (doc.type === 'sum') {
    const [total, before] = [doc.value ?? 0, previous.value ?? 0];
    return total >= before ? { value: total - before } : undefined;
  }
  const buckets = doc.bucketCounts ?? [];
  const previousBuckets = previous.bucketCounts ?? [];
  const sameLayout = buckets.length === previousBuckets.length && JSON.stringify(doc.explicitBounds ?? []) === JSON.stringify(previous.explicitBounds ?? []);
  if (!sameLayout || (doc.count ?? 0) < (previous.count ?? 0)) return undefined;
  return {
    count: (doc.count ?? 0) - (previous.count ?? 0),
    sum: doc.sum === null || previous.sum === null ? null : doc.sum - previous.sum,
    // min and max cover the whole cumulative window, not the interval since the previous point.
    min: null,
    max: null,
    bucketCounts: buckets.map((count, index) => count - previousBuckets[index]!),
  };
}

interface SeriesAdvance {
  state: SeriesState;
  existed: boolean;
}

/**
 * Turns cumulative points into deltas against the previous point of their series, in time order. A
 * series seen for the first time, or reset, counts its whole total. Points no newer than the series'
 * last one are dropped: a replayed batch, or a late point whose increase a later total already holds.
 */
async function cumulativeToDelta(docs: PointDoc[]): Promise<{ points: PointDoc[]; advances: SeriesAdvance[] }> {
  const bySeries = new Map<string, PointDoc[]>();
  for (const doc of docs.filter(isCumulativeCounter)) {
    const key = seriesStateKey(doc);
    const points = bySeries.get(key);
    if (points) points.push(doc);
    else bySeries.set(key, [doc]);
  }
  if (bySeries.size === 0) return { points: docs, advances: [] };
  // one lookup by _id per series, each answered from an index (FerretDB reads every document for `$in`)
  const stored = await Promise.all([...bySeries.keys()].map((key) => MetricSeries.findById(key).lean<SeriesState>()));
  const previousOf = new Map(stored.flatMap((state) => (state ? [[state._id, state] as const] : [])));
  const dropped = new Set<PointDoc>();
  const advances: SeriesAdvance[] = [];
  for (const [key, points] of bySeries) {
    const previous = previousOf.get(key);
    let last = previous;
    for (const doc of points.sort((a, b) => a.time.getTime() - b.time.getTime())) {
      if (last && doc.time <= last.lastAt) {
        dropped.add(doc);
        continue;
      }
      const totals: Totals = { value: doc.value, count: doc.count, sum: doc.sum, bucketCounts: doc.bucketCounts, explicitBounds: doc.explicitBounds };
      if (last) Object.assign(doc, increase(doc, last));
      doc.temporality = 'delta';
      last = { _id: key, orgId: doc.orgId, projectId: doc.projectId, name: doc.name, lastAt: doc.time, ...totals };
    }
    if (last && last !== previous) advances.push({ state: last, existed: previous !== undefined });
  }
  return { points: docs.filter((doc) => !dropped.has(doc)), advances };
}

/** Series state only moves forward in time, whoever writes it. */
async function saveSeries(advances: SeriesAdvance[]): Promise<void> {
  const created = new Set(await insertNew(MetricSeries.collection, advances.filter((advance) => !advance.existed).map((advance) => advance.state)));
  const updates = advances
    .filter((advance) => !created.has(advance.state))
    .map(({ state: { _id, ...state } }) => ({ updateOne: { filter: { _id, lastAt: { $lt: state.lastAt } }, update: { $set: state } } }));
  // series ids are strings, which the driver's ObjectId-keyed default typing does not expect
  await updateEach(MetricSeries.collection, updates as unknown as mongo.AnyBulkWriteOperation[]);
}

interface NameSighting {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  name: string;
  type: PointDoc['type'];
  unit: string | null;
  firstSeenAt: Date;
  lastSeenAt: Date;
  attributeKeys: Set<string>;
}

function nameSightings(docs: PointDoc[]): NameSighting[] {
  const sightings = new Map<string, NameSighting>();
  for (const doc of docs) {
    const key = `${doc.projectId.toHexString()}:${doc.name}`;
    const seen = sightings.get(key);
    const keys = doc.attributes.map((pair) => pair.key);
    if (!seen) sightings.set(key, { orgId: doc.orgId, projectId: doc.projectId, name: doc.name, type: doc.type, unit: doc.unit, firstSeenAt: doc.time, lastSeenAt: doc.time, attributeKeys: new Set(keys) });
    else {
      if (doc.time < seen.firstSeenAt) seen.firstSeenAt = doc.time;
      if (doc.time > seen.lastSeenAt) seen.lastSeenAt = doc.time;
      for (const attributeKey of keys) seen.attributeKeys.add(attributeKey);
    }
  }
  return [...sightings.values()];
}

/**
 * Stores metric points (cumulative counters as deltas) and registers their names. A point's `_id` is
 * derived from its series and time, so a replayed batch inserts nothing new. Points are stored before
 * the series state moves on, so a crash in between is redone identically on retry.
 */
export async function ingestMetricPoints(items: Stamped<MetricPointRecord>[]): Promise<void> {
  const docs = items.map(pointDoc);
  // a batch converts its series in their turns: two batches of one series at once would both take
  // their delta from the same previous point
  // (turns of their own: the writes inside take the series documents' turns)
  await inTurns('metric-series-conversion', docs.filter(isCumulativeCounter).map(seriesStateKey), async () => {
    const { points, advances } = await cumulativeToDelta(docs);
    await insertNew(MetricPoint.collection, points);
    await saveSeries(advances);
  });
  await upsertAll(
    MetricName.collection,
    nameSightings(docs).map((sighting) => ({
      updateOne: {
        filter: { _id: contentId('metric-name', sighting.projectId.toHexString(), sighting.name) },
        update: {
          $setOnInsert: { orgId: sighting.orgId, projectId: sighting.projectId, name: sighting.name },
          $set: { type: sighting.type, unit: sighting.unit },
          $min: { firstSeenAt: sighting.firstSeenAt },
          $max: { lastSeenAt: sighting.lastSeenAt },
          $addToSet: { attributeKeys: { $each: [...sighting.attributeKeys] } },
        },
        upsert: true,
      },
    })),
  );
}

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

type StoredPoint = PointDoc & { _id: Types.ObjectId };

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

const isDistribution = (point: StoredPoint) => point.type === 'histogram' || point.type === 'exponential_histogram' || point.type === 'summary';

/** One step's value of the given points. */
function aggregate(points: StoredPoint[], aggregation: (typeof metricAggregations)[number], stepSeconds: number): number | null {
  const values = points.map((point) => point.value).filter((value): value is number => value !== null);
  const distributions = points.filter(isDistribution);
  const total = (field: 'count' | 'sum') => distributions.reduce((sum, point) => sum + (point[field] ?? 0), 0);
  switch (aggregation) {
    case 'sum':
      return distributions.length > 0 ? total('sum') : values.reduce((sum, value) => sum + value, 0);
    case 'count':
      return distributions.length > 0 ? total('count') : values.length;
    case 'avg':
      if (distributions.length > 0) return total('count') > 0 ? total('sum') / total('count') : null;
      return values.length > 0 ? values.reduce((sum, value) => sum + value, 0) / values.length : null;
    case 'min':
    case 'max': {
      const candidates = distributions.length > 0 ? distributions.map((point) => point[aggregation]).filter((value): value is number => value !== null) : values;
      if (candidates.length === 0) return null;
      // folded, not spread: a step can hold more points than a call takes arguments
      return aggregation === 'min' ? candidates.reduce((min, value) => Math.min(min, value)) : candidates.reduce((max, value) => Math.max(max, value));
    }
    case 'rate':
      return (distributions.length > 0 ? total('count') : values.reduce((sum, value) => sum + value, 0)) / stepSeconds;
    default: {
      // percentiles, from the explicit-bounds histograms of one layout (the first point's)
      const layout = distributions.find((point) => point.bucketCounts && point.explicitBounds);
      if (!layout) return null;
      const bounds = layout.explicitBounds!;
      const counts = bounds.map(() => 0).concat(0);
      for (const point of distributions) {
        if (JSON.stringify(point.explicitBounds) !== JSON.stringify(bounds)) continue;
        point.bucketCounts!.forEach((count, index) => (counts[index] = (counts[index] ?? 0) + count));
      }
      return histogramQuantile(bounds, counts, Number(aggregation.slice(1)) / 100);
    }
  }
}

/** The default aggregation of a type: what its points mean when added up per step. */
const defaultAggregation = (type: string) => (type === 'gauge' ? 'avg' : type === 'histogram' || type === 'exponential_histogram' || type === 'summary' ? 'p95' : 'sum');

/**
 * Points of a named metric, every series matching the filters combined, one per step. Read an hour
 * at a time by equality on the name and the hour; cumulative counters were stored as deltas, so
 * `sum` is the increase over a step and `rate` that increase per second.
 */
export async function metricSeries(scope: ViewScope, query: z.output<typeof metricSeriesQuery>): Promise<z.infer<typeof metricSeriesJson>> {
  const stepMs = stepMsOf(scope, query.step);
  const registered = await MetricName.findOne({ ...scopeFilter(scope), name: query.name }).lean();
  if (!registered) throw notFound('metric');
  const filter = { name: query.name, ...(query.service !== undefined && { service: query.service }) };
  const points = (await inWindowByHour<StoredPoint>(MetricPoint.collection, scope, scope.from, scope.to, filter, (point) => point.time)).filter((point) =>
    hasAttributes(point.attributes, query.attribute),
  );
  const aggregation = query.aggregation ?? defaultAggregation(registered.type);
  const steps = new Map<number, StoredPoint[]>();
  for (const point of points) {
    const t = stepStartOf(scope, stepMs, point.time.getTime());
    const ofStep = steps.get(t);
    if (ofStep) ofStep.push(point);
    else steps.set(t, [point]);
  }
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
      .map(([t, ofStep]) => ({ t: new Date(t).toISOString(), value: aggregate(ofStep, aggregation, stepMs / 1000) })),
  };
}
