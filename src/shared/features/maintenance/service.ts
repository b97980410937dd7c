import { Types, type mongo } from 'mongoose';
import type { BlobStore } from '../../clients/blob.js';
import type { TableExpiry } from '../../clients/ferretdb-indexes.js';
import { openStoreExpiry } from '../../clients/mongo.js';
import { AppliedBatch, oneAtATime } from '../../telemetry/storage.js';
import { sweepExpiredChunks } from '../artifacts/bundles.js';
import { Organization, Session } from '../accounts/model.js';
import { Feedback } from '../feedback/model.js';
import { ErrorEvent, HOUR_MS, hourOfKey, Issue, IssueUser, type IssueDoc } from '../issues/model.js';
import { Log, LogPattern, LogRollup, LogRollupHourly } from '../logs/model.js';
import { MetricHour, MetricName, MetricPoint, MetricRollup, MetricSeries } from '../metrics/model.js';
import { ReleaseHealth, ReleaseRollup, ReleaseSummary } from '../releases/model.js';
import { Replay, ReplaySegment } from '../replays/model.js';
import { SpanRollup, SpanRollupHourly } from '../services/model.js';
import { Span, Trace } from '../traces/model.js';
import { EndUser } from '../users/model.js';
import { Anomaly } from '../anomalies/model.js';
import { QueryRollup } from '../database/model.js';
import { RolledUpHours } from '../../telemetry/rolled-up-hours.js';
import { EndpointRollup } from '../endpoints/model.js';
import { MessageTiming, QueueRollup } from '../queues/model.js';
import { CronPing } from '../cron/model.js';
import { UptimeCheck } from '../uptime/model.js';
import { Alert, AlertDelivery } from '../alerts/model.js';

const DAY_MS = 86_400_000;
/** Far longer than any retry of a batch job, after which a replayed batch cannot arrive. */
const APPLIED_BATCH_KEEP_MS = 7 * DAY_MS;
/** Replay segments are removed in pages, each page's blobs before its documents. */
const SEGMENT_PAGE = 500;

/**
 * Telemetry that expires with its organisation's retention, each by the time that makes it old (for
 * summaries: their newest data). Usage counters are kept: they are the account's history, not telemetry.
 */
const expiring: [name: string, collection: mongo.Collection, timeField: string][] = [
  ['errorEvents', ErrorEvent.collection, 'timestamp'],
  ['feedback', Feedback.collection, 'receivedAt'],
  ['spans', Span.collection, 'startAt'],
  ['traces', Trace.collection, 'endAt'],
  ['spanRollups', SpanRollup.collection, 'at'],
  // an hour's rollup goes with its first minute, so a window never reads an hour whose first minutes expired from it
  ['spanRollupsHourly', SpanRollupHourly.collection, 'at'],
  ['endpointRollups', EndpointRollup.collection, 'at'],
  ['queryRollups', QueryRollup.collection, 'at'],
  ['queueRollups', QueueRollup.collection, 'at'],
  ['messageTimings', MessageTiming.collection, 'at'],
  ['anomalies', Anomaly.collection, 'startedAt'],
  ['logs', Log.collection, 'time'],
  ['logPatterns', LogPattern.collection, 'lastSeenAt'],
  ['logRollups', LogRollup.collection, 'at'],
  ['logRollupsHourly', LogRollupHourly.collection, 'at'],
  ['metricPoints', MetricPoint.collection, 'time'],
  ['metricRollups', MetricRollup.collection, 'at'],
  // as the spans' hourly rollups: an hour of a series goes with its first minute
  ['metricHours', MetricHour.collection, 'at'],
  // A series quiet for longer than retention starts over: its next cumulative point counts in full.
  ['metricSeries', MetricSeries.collection, 'lastAt'],
  ['metricNames', MetricName.collection, 'lastSeenAt'],
  ['cronPings', CronPing.collection, 'receivedAt'],
  ['uptimeChecks', UptimeCheck.collection, 'checkedAt'],
  // an alert still open is kept: resolvedAt is null, never before the cutoff
  ['alerts', Alert.collection, 'resolvedAt'],
  ['alertDeliveries', AlertDelivery.collection, 'createdAt'],
  ['releaseHealth', ReleaseHealth.collection, 'hour'],
  ['releaseRollups', ReleaseRollup.collection, 'at'],
  // after the rollups they mark
  ['rolledUpHours', RolledUpHours.collection, 'day'],
  ['releaseSummaries', ReleaseSummary.collection, 'lastSeen'],
  ['replays', Replay.collection, 'lastSeenAt'],
  ['endUsers', EndUser.collection, 'lastSeen'],
];

/** Deletes an organisation's issues last seen before the cutoff, with their distinct-user records. */
async function expireIssues(orgId: Types.ObjectId, cutoff: Date): Promise<number> {
  const old = await Issue.find({ orgId, lastSeen: { $lt: cutoff } }, { _id: 1 }).lean();
  if (old.length === 0) return 0;
  const ids = old.map((issue) => issue._id);
  await IssueUser.deleteMany({ issueId: { $in: ids } });
  return (await Issue.deleteMany({ _id: { $in: ids } })).deletedCount;
}

/**
 * Drops the hourly counts older than the cutoff from an organisation's issues that outlived it: the
 * events they counted are gone, and every hour an issue keeps makes each later count of it dearer
 * (FerretDB rewrites the whole document: about 10 ms an update at a month of hours, 32 ms at three;
 * `npm run bench:writes`). Only issues first seen before the cutoff can hold such hours.
 */
async function pruneIssueHours(orgId: Types.ObjectId, cutoff: Date): Promise<number> {
  const cutoffHour = Math.floor(cutoff.getTime() / HOUR_MS);
  let pruned = 0;
  for await (const issue of Issue.find({ orgId, firstSeen: { $lt: cutoff } }, { hourly: 1 }).lean<Pick<IssueDoc, '_id' | 'hourly'>>().cursor()) {
    const old = Object.keys((issue.hourly ?? {}) as Record<string, number>).filter((key) => hourOfKey(key) < cutoffHour);
    if (old.length === 0) continue;
    // the workers count into issues too: in the issue's turn on FerretDB, whose updates are not atomic
    await oneAtATime(Issue.collection.collectionName, issue._id, () => Issue.updateOne({ _id: issue._id }, { $unset: Object.fromEntries(old.map((key) => [`hourly.${key}`, ''])) }));
    pruned += old.length;
  }
  return pruned;
}

/** How the cleanup finds and deletes what is older than a cutoff. */
interface Expiry {
  /** Deletes a collection's documents whose time field is before the cutoff (of one organisation when given) and answers how many went. */
  deleteOlder(collection: mongo.Collection, timeField: string, cutoff: Date, orgId?: Types.ObjectId): Promise<number>;
  /** Up to `limit` of the organisation's documents `deleteOlder` would delete: each one's `_id` and its `valueField`. */
  findOlder(collection: mongo.Collection, timeField: string, cutoff: Date, orgId: Types.ObjectId, limit: number, valueField: string): Promise<{ id: Types.ObjectId; value: string | null }[]>;
  /** Deletes the documents with these `_id`s and answers how many went. */
  deleteIds(collection: mongo.Collection, ids: Types.ObjectId[]): Promise<number>;
}

/** Through the driver: on MongoDB the `{orgId, <time>}` indexes serve it. */
const driverExpiry: Expiry = {
  deleteOlder: async (collection, timeField, cutoff, orgId) => (await collection.deleteMany({ ...(orgId && { orgId }), [timeField]: { $lt: cutoff } })).deletedCount,
  findOlder: async (collection, timeField, cutoff, orgId, limit, valueField) =>
    (await collection.find({ orgId, [timeField]: { $lt: cutoff } }, { projection: { [valueField]: 1 } }).limit(limit).toArray()).map((doc) => ({ id: doc._id as Types.ObjectId, value: (doc[valueField] as string | undefined) ?? null })),
  deleteIds: async (collection, ids) => (await collection.deleteMany({ _id: { $in: ids } })).deletedCount,
};

/** In FerretDB's PostgreSQL tables (see openTableExpiry). */
const tableExpiry = (tables: TableExpiry): Expiry => ({
  deleteOlder: (collection, timeField, cutoff, orgId) => tables.deleteOlder(collection.collectionName, timeField, cutoff, orgId?.toHexString()),
  findOlder: async (collection, timeField, cutoff, orgId, limit, valueField) =>
    (await tables.findOlder(collection.collectionName, timeField, cutoff, orgId.toHexString(), limit, valueField)).map((row) => ({ id: new Types.ObjectId(row.id), value: row.value })),
  deleteIds: (collection, ids) => tables.deleteIds(collection.collectionName, ids.map((id) => id.toHexString())),
});

/** Deletes an organisation's old replay segments, their blobs first so no document outlives its bytes' removal. */
async function expireReplaySegments(orgId: Types.ObjectId, cutoff: Date, blobs: BlobStore, expiry: Expiry): Promise<number> {
  let removed = 0;
  for (;;) {
    const page = await expiry.findOlder(ReplaySegment.collection, 'time', cutoff, orgId, SEGMENT_PAGE, 'blobKey');
    if (page.length === 0) return removed;
    await Promise.all(page.map((segment) => segment.value && blobs.delete(segment.value)));
    const deleted = await expiry.deleteIds(ReplaySegment.collection, page.map((segment) => segment.id));
    // a page that cannot be deleted would be found again forever
    if (deleted === 0) throw new Error(`replay segments older than ${cutoff.toISOString()} were found but not deleted`);
    removed += deleted;
  }
}

/**
 * Removes what has outlived its time (MongoDB TTL indexes are outside the FerretDB intersection):
 * expired sessions, claims of long-applied batches, and each organisation's telemetry older than its
 * retention. Returns how many documents of each kind went. With `ferretdbPostgresUrl` (the store is
 * FerretDB on PostgreSQL) the deletes by age are made in PostgreSQL (see openTableExpiry): through
 * FerretDB each decodes every document of the organisation, which at 1,000,000 stored records took
 * minutes of every hour.
 */
export async function cleanup(blobs: BlobStore, now = new Date(), ferretdbPostgresUrl?: string): Promise<Record<string, number>> {
  const tables = ferretdbPostgresUrl ? await openStoreExpiry(ferretdbPostgresUrl) : undefined;
  try {
    return await removeExpired(blobs, now, tables ? tableExpiry(tables) : driverExpiry);
  } finally {
    await tables?.close();
  }
}

async function removeExpired(blobs: BlobStore, now: Date, expiry: Expiry): Promise<Record<string, number>> {
  const removed: Record<string, number> = {
    sessions: (await Session.deleteMany({ expiresAt: { $lte: now } })).deletedCount,
    appliedBatches: await expiry.deleteOlder(AppliedBatch.collection, 'appliedAt', new Date(now.getTime() - APPLIED_BATCH_KEEP_MS)),
    replaySegments: 0,
    bundleChunks: 0,
  };
  // chunks sentry-cli uploaded and never assembled (an upload cut short), a batch at a time
  for (;;) {
    const swept = await sweepExpiredChunks(blobs, now);
    removed.bundleChunks! += swept;
    if (swept === 0) break;
  }
  for await (const org of Organization.find({}, { retentionDays: 1 }).lean().cursor()) {
    const cutoff = new Date(now.getTime() - org.retentionDays * DAY_MS);
    removed.replaySegments! += await expireReplaySegments(org._id, cutoff, blobs, expiry);
    removed.issues = (removed.issues ?? 0) + (await expireIssues(org._id, cutoff));
    removed.issueHours = (removed.issueHours ?? 0) + (await pruneIssueHours(org._id, cutoff));
    for (const [name, collection, timeField] of expiring) removed[name] = (removed[name] ?? 0) + (await expiry.deleteOlder(collection, timeField, cutoff, org._id));
  }
  return removed;
}
