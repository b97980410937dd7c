import { UnrecoverableError, type Job } from 'bullmq';
import { cleanup } from '../../shared/features/maintenance/service.js';
import type { Logger } from '../../shared/logger.js';

export function maintenanceProcessor(logger: Logger) {
  return async (job: Job) => {
    if (job.name !== 'cleanup') throw new UnrecoverableError(`unknown maintenance job ${job.name}`);
    const removed = await cleanup();
    logger.info({ removed }, 'cleanup done');
    return removed;
  };
}
