import { Types } from 'mongoose';
import type { RecordKind, Stamped } from '../../telemetry/records.js';
import { claimBatch, contentId, upsertAll } from '../../telemetry/storage.js';
import { Usage } from './model.js';

/**
 * Counts a batch's records per organisation, project, kind and UTC day of processing. Applied once
 * per batch id (see claimBatch), since `$inc` alone would count a replayed batch twice.
 */
export async function countUsage(kind: RecordKind, items: Stamped<unknown>[], batchId: string, now = new Date()): Promise<void> {
  if (!(await claimBatch(batchId, 'usage', now))) return;
  const day = now.toISOString().slice(0, 10);
  const quantities = new Map<string, { orgId: string; projectId: string; quantity: number }>();
  for (const { orgId, projectId } of items) {
    const key = `${orgId}:${projectId}`;
    const counter = quantities.get(key) ?? { orgId, projectId, quantity: 0 };
    counter.quantity += 1;
    quantities.set(key, counter);
  }
  await upsertAll(
    Usage.collection,
    [...quantities.values()].map(({ orgId, projectId, quantity }) => ({
      updateOne: {
        filter: { _id: contentId('usage', projectId, kind, day) },
        update: { $setOnInsert: { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), category: kind, day }, $inc: { quantity } },
        upsert: true,
      },
    })),
  );
}
