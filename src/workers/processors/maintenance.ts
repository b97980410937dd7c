import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import { ensureStoreIndexes, vacuumStore } from '../../shared/clients/mongo.js';
import { reopenExpiredIgnores } from '../../shared/features/issues/service.js';
import { cleanup } from '../../shared/features/maintenance/service.js';
import type { Logger } from '../../shared/logger.js';

export function maintenanceProcessor({ logger, blobs, ferretdbPostgresUrl }: { logger: Logger; blobs: BlobStore; ferretdbPostgresUrl?: string | undefined }) {
  return async (job: Job) => {
    switch (job.name) {
      case 'cleanup': {
        const removed = await cleanup(blobs);
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
      case 'reopen-ignored-issues':
        return { reopened: await reopenExpiredIgnores() };
      default:
        throw new UnrecoverableError(`unknown maintenance job ${job.name}`);
    }
  };
}
