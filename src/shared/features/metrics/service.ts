import { Types, type mongo } from 'mongoose';
import { sha256 } from '../../secrets.js';
import type { MetricPoint as MetricPointRecord, Stamped } from '../../telemetry/records.js';
import { attributePairs, contentId, insertNew, updateEach, upsertAll } from '../../telemetry/storage.js';
import { MetricName, MetricPoint, MetricSeries } from './model.js';

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
    bySeries.set(key, [...(bySeries.get(key) ?? []), doc]);
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
}

function nameSightings(docs: PointDoc[]): NameSighting[] {
  const sightings = new Map<string, NameSighting>();
  for (const doc of docs) {
    const key = `${doc.projectId.toHexString()}:${doc.name}`;
    const seen = sightings.get(key);
    if (!seen) sightings.set(key, { orgId: doc.orgId, projectId: doc.projectId, name: doc.name, type: doc.type, unit: doc.unit, firstSeenAt: doc.time, lastSeenAt: doc.time });
    else if (doc.time < seen.firstSeenAt) seen.firstSeenAt = doc.time;
    else if (doc.time > seen.lastSeenAt) seen.lastSeenAt = doc.time;
  }
  return [...sightings.values()];
}

/**
 * Stores metric points (cumulative counters as deltas) and registers their names. A point's `_id` is
 * derived from its series and time, so a replayed batch inserts nothing new. Points are stored before
 * the series state moves on, so a crash in between is redone identically on retry. Two workers
 * converting the same series at the same moment may both take their delta from the same previous point.
 */
export async function ingestMetricPoints(items: Stamped<MetricPointRecord>[]): Promise<void> {
  const docs = items.map(pointDoc);
  const { points, advances } = await cumulativeToDelta(docs);
  await insertNew(MetricPoint.collection, points);
  await saveSeries(advances);
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
        },
        upsert: true,
      },
    })),
  );
}
