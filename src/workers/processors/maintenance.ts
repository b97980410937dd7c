import { UnrecoverableError, type Job } from 'bullmq';
import type { BlobStore } from '../../shared/clients/blob.js';
import { reopenExpiredIgnores } from '../../shared/features/issues/service.js';
import { cleanup } from '../../shared/features/maintenance/service.js';
import type { Logger } from '../../shared/logger.js';

export function maintenanceProcessor(logger: Logger, blobs: BlobStore) {
  return async (job: Job) => {
    switch (job.name) {
      case 'cleanup': {
        const removed = await cleanup(blobs);
        logger.info({ removed }, 'cleanup done');
        return removed;
      }
      case 'reopen-ignored-issues':
        return { reopened: await reopenExpiredIgnores() };
      default:
        throw new UnrecoverableError(`unknown maintenance job ${job.name}`);
    }
  };
}
