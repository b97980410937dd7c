import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import { Types } from 'mongoose';
import type { Mailer } from '../../shared/clients/mailer.js';
import type { Outbound } from '../../shared/clients/outbound.js';
import type { SecretBox } from '../../shared/clients/secret-box.js';
import { sweepChecks } from '../../shared/features/cron/service.js';
import { evaluateDeployments } from '../../shared/features/deployments/service.js';
import { claimDueReports, sendDigest } from '../../shared/features/reports/service.js';
import { dueMonitors, probeMonitor } from '../../shared/features/uptime/service.js';
import type { Logger } from '../../shared/logger.js';
import { jobs } from '../../shared/queues.js';

export interface MonitorDeps {
  logger: Logger;
  outbound: Outbound;
  /** Opens monitors' sealed header values for their probes. */
  secrets: SecretBox;
  mailer: Mailer | undefined;
  tlsWarnDays: number;
  /** The monitors queue, for the jobs a tick hands out. */
  queue: () => Queue;
}

/** Probe and report jobs stay a day after they finish, so a tick that sees the same turn again adds nothing. */
const KEEP_FINISHED = { removeOnComplete: { age: 86_400 }, removeOnFail: { age: 86_400 } };

/** Cron-check sweeps, uptime probes and digests: ticks that find what is due, and one job per due item. */
export function monitorsProcessor({ logger, outbound, secrets, mailer, tlsWarnDays, queue }: MonitorDeps) {
  return async (job: Job) => {
    switch (job.name) {
      case 'sweep-cron-checks': {
        const found = await sweepChecks();
        if (found.down > 0) logger.info(found, 'cron checks late or down');
        return found;
      }
      case 'evaluate-deployments': {
        const judged = await evaluateDeployments();
        if (judged.judged > 0) logger.info(judged, 'deployments judged');
        return judged;
      }
      case 'schedule-probes': {
        const due = await dueMonitors();
        await queue().addBulk(due.map(({ id, due: at }) => ({ name: 'probe', data: { monitorId: id, due: at }, opts: { jobId: `probe-${id}-${at}`, ...KEEP_FINISHED } })));
        return { due: due.length };
      }
      case 'probe': {
        const { monitorId, due } = parse('probe', job.data);
        const outcome = await probeMonitor(monitorId, due, { outbound, secrets, tlsWarnDays });
        return outcome ? { ok: outcome.ok } : { skipped: true };
      }
      case 'send-due-reports': {
        const due = await claimDueReports();
        // a failed send is retried with backoff; the schedule has moved on already
        await queue().addBulk(due.map(({ orgId, sendAt }) => ({ name: 'send-report', data: { orgId, sendAt }, opts: { jobId: `report-${orgId}-${sendAt}`, attempts: 5, backoff: { type: 'exponential', delay: 30_000 }, ...KEEP_FINISHED } })));
        return { due: due.length };
      }
      case 'send-report': {
        const { orgId, sendAt } = parse('send-report', job.data);
        return sendDigest(new Types.ObjectId(orgId), new Date(sendAt), mailer);
      }
      default:
        throw new UnrecoverableError(`unknown monitors job ${job.name}`);
    }
  };
}

function parse<N extends 'probe' | 'send-report'>(name: N, data: unknown) {
  const parsed = jobs.monitors[name].safeParse(data);
  if (!parsed.success) throw new UnrecoverableError(`malformed ${name} job: ${parsed.error.issues[0]?.message}`);
  return parsed.data as ReturnType<(typeof jobs.monitors)[N]['parse']>;
}
