import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import { ensureStoreIndexes, vacuumStore } from '../../shared/clients/mongo.js';
import { detectSurgeAlerts } from '../../shared/features/alerts/surges.js';
import { detectAnomalies } from '../../shared/features/anomalies/detector.js';
import { reopenExpiredIgnores } from '../../shared/features/issues/service.js';
import { recountOrphaned } from '../../shared/features/issues/store.js';
import { cleanup } from '../../shared/features/maintenance/service.js';
import type { Logger } from '../../shared/logger.js';

export function maintenanceProcessor({ logger, blobs, ferretdbPostgresUrl, recountAfterMs }: { logger: Logger; blobs: BlobStore; ferretdbPostgresUrl?: string | undefined; recountAfterMs: number }) {
  return async (job: Job) => {
    switch (job.name) {
      case 'cleanup': {
        const removed = await cleanup(blobs, new Date(), ferretdbPostgresUrl);
        logger.info({ removed }, 'cleanup done');
        return removed;
      }
      case 'store-indexes': {
        if (!ferretdbPostgresUrl) return { created: 0 };
        const created = await ensureStoreIndexes(ferretdbPostgresUrl);
        if (created.length > 0) logger.info({ created: created.map((index) => `${index.collection}.${index.field}`) }, 'store indexes created');
        const vacuumed = await vacuumStore(ferretdbPostgresUrl);
        if (vacuumed.length > 0) logger.info({ vacuumed }, 'store tables vacuumed');
        return { created: created.length };
      }
      case 'detect-anomalies': {
        // `at` (epoch ms) judges the windows before another time than now: a backfill after an outage
        const at = typeof job.data?.at === 'number' ? job.data.at : Date.now();
        const found = await detectAnomalies(at);
        if (found.opened > 0 || found.closed > 0) logger.info(found, 'anomalies opened or closed');
        const surges = await detectSurgeAlerts(at);
        if (surges.opened > 0 || surges.resolved > 0) logger.info(surges, 'surge alerts opened or resolved');
        return { ...found, surges };
      }
      case 'reopen-ignored-issues':
        return { reopened: await reopenExpiredIgnores() };
      case 'recount-error-events': {
        const batches = await recountOrphaned(recountAfterMs);
        if (batches > 0) logger.warn({ batches }, 'batches whose count was lost taken up again (their events counted where they were not)');
        return { batches };
      }
      default:
        throw new UnrecoverableError(`unknown maintenance job ${job.name}`);
    }
  };
}
