/**
 * The write side of metrics: the workers' storing of metric points (cumulative counters as deltas against
 * their series' last point), their counting into the series' hours, and the name registry. The reads
 * (service.ts) add up what is stored here, and a point the way it is counted here.
 */
import { Types, type mongo } from 'mongoose';
import { sha256 } from '../../secrets.js';
import type { MetricPoint as MetricPointRecord, Stamped } from '../../telemetry/records.js';
import { markHours } from '../../telemetry/rolled-up-hours.js';
import { RollupBatch } from '../../telemetry/rollups.js';
import { attributePairs, contentId, insertNew, inTurns, updateEach, upsertAll } from '../../telemetry/storage.js';
import { epochMinuteOf, HOUR_MS, hourOf } from '../../telemetry/time-buckets.js';
import { MetricHour, MetricName, MetricPoint, MetricSeries } from './model.js';

function pointDoc({ orgId, projectId, record }: Stamped<MetricPointRecord>) {
  const attributes = attributePairs(record.attributes);
  const seriesKey = sha256(JSON.stringify([projectId, record.name, record.service, attributes])).slice(0, 32);
  return {
    // the time to the nanosecond where OTLP gave it: a batch's points can be under a microsecond apart,
    // closer than a double in milliseconds tells apart, and must not clash as if resent
    _id: contentId(seriesKey, record.type, record.startTimeMs ?? null, record.timeUnixNano ?? record.timeMs),
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
    minute: epochMinuteOf(record.timeMs),
    source: record.source,
  };
}

export type PointDoc = ReturnType<typeof pointDoc>;
type Totals = Pick<PointDoc, 'value' | 'count' | 'sum' | 'bucketCounts' | 'explicitBounds'>;
/** A series' last cumulative point, as the MetricSeries model stores it (`lastAtNanos` absent in states saved before it was kept). */
type SeriesState = Totals & { _id: string; orgId: Types.ObjectId; projectId: Types.ObjectId; name: string; lastAt: Date; lastAtNanos?: string };

/**
 * A point's time in epoch nanoseconds: as OTLP sent it, else from its milliseconds. Points of one
 * series are ordered by it, since several can fall in one millisecond (a batch of an exporter's points).
 */
function nanosOf(record: MetricPointRecord): bigint {
  if (record.timeUnixNano !== undefined) return BigInt(record.timeUnixNano);
  const ms = Math.floor(record.timeMs);
  return BigInt(ms) * 1_000_000n + BigInt(Math.round((record.timeMs - ms) * 1e6));
}

/** Zero-padded to uint64's 20 digits, so the store compares the strings in time order. */
const nanosText = (nanos: bigint) => nanos.toString().padStart(20, '0');

/** A state saved before nanoseconds were kept stands for the end of its millisecond: a replay of its point stays stale. */
const lastNanosOf = (state: SeriesState) => (state.lastAtNanos !== undefined ? BigInt(state.lastAtNanos) : BigInt(state.lastAt.getTime()) * 1_000_000n + 999_999n);

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
 * Turns cumulative points into deltas against the previous point of their series, in time order (to
 * the nanosecond, `nanos` of each doc). A series seen for the first time, or reset, counts its whole
 * total. Points no newer than the series' last one are dropped: a replayed batch, or a late point
 * whose increase a later total already holds.
 */
async function cumulativeToDelta(docs: PointDoc[], nanos: Map<PointDoc, bigint>): Promise<{ points: PointDoc[]; advances: SeriesAdvance[] }> {
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
    const at = (doc: PointDoc) => nanos.get(doc)!;
    for (const doc of points.sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0))) {
      if (last && at(doc) <= lastNanosOf(last)) {
        dropped.add(doc);
        continue;
      }
      const totals: Totals = { value: doc.value, count: doc.count, sum: doc.sum, bucketCounts: doc.bucketCounts, explicitBounds: doc.explicitBounds };
      if (last) Object.assign(doc, increase(doc, last));
      doc.temporality = 'delta';
      last = { _id: key, orgId: doc.orgId, projectId: doc.projectId, name: doc.name, lastAt: doc.time, lastAtNanos: nanosText(at(doc)), ...totals };
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
    .map(({ state: { _id, ...state } }) => ({
      updateOne: {
        filter: { _id, $or: [{ lastAtNanos: { $lt: state.lastAtNanos } }, { lastAtNanos: { $exists: false }, lastAt: { $lt: state.lastAt } }] },
        update: { $set: state },
      },
    }));
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

export const isDistribution = (type: string) => type === 'histogram' || type === 'exponential_histogram' || type === 'summary';

/** The bucket layout a point's percentiles are read in: an explicit-bounds histogram's upper bounds, else null. */
export const layoutOf = (point: Pick<PointDoc, 'bucketCounts' | 'explicitBounds'>) => (point.bucketCounts && point.explicitBounds ? point.explicitBounds : null);

/** What a point adds to its minute's rollup (see the MetricRollup model): `$inc` counts, and values kept as the smallest and largest. */
export function rollupTotals(point: PointDoc): { counts: Record<string, number>; min: Record<string, number>; max: Record<string, number> } {
  if (isDistribution(point.type)) {
    const counts: Record<string, number> = { points: 1, count: point.count ?? 0, sum: point.sum ?? 0 };
    if (layoutOf(point)) point.bucketCounts!.forEach((count, index) => (counts[`buckets.${index}`] = count));
    return { counts, min: point.min === null ? {} : { min: point.min }, max: point.max === null ? {} : { max: point.max } };
  }
  if (point.value === null) return { counts: { points: 1 }, min: {}, max: {} };
  return { counts: { points: 1, values: 1, valueSum: point.value }, min: { valueMin: point.value }, max: { valueMax: point.value } };
}

/** `totals` with each path under the minute of the hour `minute` in a metric-hour document. */
function inMinute(minute: number, totals: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(totals).map(([path, value]) => [`minutes.${minute}.${path}`, value]));
}

/** What newly stored points add to their series' hours (MetricHour): one document per series, type, bucket layout and hour. */
function hourCounts(points: PointDoc[]): RollupBatch {
  const batch = new RollupBatch('metric-hour');
  for (const point of points) {
    const { counts, min, max } = rollupTotals(point);
    const key = { name: point.name, type: point.type, service: point.service, attributes: point.attributes, explicitBounds: layoutOf(point) };
    const atMs = point.time.getTime();
    const minute = epochMinuteOf(atMs) % 60;
    batch.add({ orgId: point.orgId, projectId: point.projectId, atMs: hourOf(atMs) * HOUR_MS }, key, inMinute(minute, counts), {
      min: inMinute(minute, { ...min, earliestMs: atMs }),
      max: inMinute(minute, { ...max, latestMs: atMs }),
    });
  }
  return batch;
}

/**
 * Stores metric points (cumulative counters as deltas), counts them into their series' hours (MetricHour) and
 * registers their names. A point's `_id` is derived from its series and time, so a replayed batch
 * inserts nothing new, and only newly inserted points are counted. Points are stored before the series
 * state moves on, so a crash in between is redone identically on retry.
 */
export async function ingestMetricPoints(items: Stamped<MetricPointRecord>[]): Promise<void> {
  const docs = items.map(pointDoc);
  const nanos = new Map(docs.map((doc, index) => [doc, nanosOf(items[index]!.record)]));
  // the hours are marked before any point is stored: an organisation whose points were stored before
  // metric hours were kept gets its `since` from now on (rolled-up-hours.ts), a new one from the epoch
  await markHours(MetricHour.collection, docs, MetricPoint.collection);
  let inserted: PointDoc[] = [];
  // a batch converts its series in their turns: two batches of one series at once would both take
  // their delta from the same previous point
  // (turns of their own: the writes inside take the series documents' turns)
  await inTurns('metric-series-conversion', docs.filter(isCumulativeCounter).map(seriesStateKey), async () => {
    const { points, advances } = await cumulativeToDelta(docs, nanos);
    inserted = await insertNew(MetricPoint.collection, points);
    await saveSeries(advances);
  });
  await hourCounts(inserted).write(MetricHour.collection);
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
