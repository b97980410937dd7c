import { Types } from 'mongoose';
import type { CheckInRecord, Stamped } from '../../telemetry/records.js';
import { insertNew } from '../../telemetry/storage.js';
import { CheckIn } from './model.js';

/** Stores each check-in status change once per {project, check-in id, status}. */
export async function ingestCheckIns(items: Stamped<CheckInRecord>[]): Promise<void> {
  await insertNew(
    CheckIn.collection,
    items.map(({ orgId, projectId, record }) => ({
      orgId: new Types.ObjectId(orgId),
      projectId: new Types.ObjectId(projectId),
      checkInId: record.checkInId,
      monitorSlug: record.monitorSlug,
      status: record.status,
      durationMs: record.durationMs ?? null,
      environment: record.environment ?? null,
      monitorConfig: record.monitorConfig ? JSON.stringify(record.monitorConfig) : null,
      time: new Date(record.timeMs),
    })),
  );
}
