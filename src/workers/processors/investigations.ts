import { UnrecoverableError, type Job } from 'bullmq';
import type { AiClient } from '../../shared/clients/ai.js';
import { failInvestigation, failStuckInvestigations, runInvestigation } from '../../shared/features/investigations/service.js';
import type { Logger } from '../../shared/logger.js';
import { jobs } from '../../shared/queues.js';

export interface InvestigationDeps {
  logger: Logger;
  /** Undefined while AI is off: a job left from when it was on fails with that reason. */
  ai: AiClient | undefined;
  /** AI_TIMEOUT_MS: a run lasting well past it belongs to a worker that died. */
  timeoutMs: number;
}

/**
 * AI investigations. The model's failures end the investigation `failed` without a retry; our own
 * (the store) are retried, and the last attempt marks it failed, so none is left `running`. A worker
 * that dies mid-run leaves a stalled job BullMQ hands to another worker; the sweep fails what even
 * that leaves behind.
 */
export function investigationsProcessor({ logger, ai, timeoutMs }: InvestigationDeps) {
  return async (job: Job) => {
    switch (job.name) {
      case 'investigate': {
        const parsed = jobs.investigations.investigate.safeParse(job.data);
        if (!parsed.success) throw new UnrecoverableError(`malformed investigate job: ${parsed.error.issues[0]?.message}`);
        const { investigationId } = parsed.data;
        try {
          const outcome = await runInvestigation(investigationId, ai);
          logger.info({ investigationId, outcome }, 'investigation finished');
          return { outcome };
        } catch (error) {
          const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
          if (lastAttempt) await failInvestigation(investigationId, 'the investigation failed unexpectedly').catch(() => undefined);
          throw error;
        }
      }
      case 'fail-stuck-investigations': {
        const failed = await failStuckInvestigations(timeoutMs);
        if (failed > 0) logger.warn({ failed }, 'stuck investigations failed');
        return { failed };
      }
      default:
        throw new UnrecoverableError(`unknown investigations job ${job.name}`);
    }
  };
}
