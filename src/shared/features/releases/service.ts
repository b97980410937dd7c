import { Types } from 'mongoose';
import type { SessionRecord, Stamped } from '../../telemetry/records.js';
import { claimBatch, contentId, upsertAll } from '../../telemetry/storage.js';
import { ReleaseHealth } from './model.js';
import { HOUR_MS, hourOf } from '../../telemetry/time-buckets.js';

const outcomes = ['started', 'exited', 'errored', 'crashed', 'abnormal'] as const;

interface Rollup {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  release: string;
  environment: string | null;
  hour: Date;
  counts: Record<(typeof outcomes)[number], number>;
}

/**
 * Adds session outcomes to the hourly release-health rollups. `$inc` cannot tell a replayed batch,
 * so a batch with an id is applied once (see claimBatch); without one, counting is at least once.
 */
export async function ingestSessions(items: Stamped<SessionRecord>[], batchId?: string): Promise<void> {
  if (batchId !== undefined && !(await claimBatch(batchId, 'sessions'))) return;
  const rollups = new Map<string, Rollup>();
  for (const { orgId, projectId, record } of items) {
    const hour = new Date(hourOf(record.startedMs) * HOUR_MS);
    const environment = record.environment ?? null;
    const key = JSON.stringify([projectId, record.release, environment, hour.getTime()]);
    let rollup = rollups.get(key);
    if (!rollup) {
      rollup = { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), release: record.release, environment, hour, counts: { started: 0, exited: 0, errored: 0, crashed: 0, abnormal: 0 } };
      rollups.set(key, rollup);
    }
    for (const outcome of outcomes) rollup.counts[outcome] += record[outcome];
  }
  await upsertAll(
    ReleaseHealth.collection,
    [...rollups.values()].map(({ orgId, counts, ...key }) => ({
      updateOne: {
        filter: { _id: contentId('release-health', key.projectId.toHexString(), key.release, key.environment, key.hour.getTime()) },
        // The key goes in $set, not $setOnInsert: FerretDB 1.24 drops null values (a missing environment) from $setOnInsert.
        update: { $setOnInsert: { orgId }, $set: key, $inc: counts },
        upsert: true,
      },
    })),
  );
}
