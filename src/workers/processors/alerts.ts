import { DelayedError, UnrecoverableError, type Job, type Queue } from 'bullmq';
import type { Channels } from '../../shared/features/alerts/channels.js';
import { deliverAlert, dispatchAlerts } from '../../shared/features/alerts/service.js';
import { jobs } from '../../shared/queues.js';

/** Attempts per delivery: about 1 + 2 + 4 + 8 + 16 minutes of retries before it is given up. */
const DELIVERY_ATTEMPTS = 6;
/** How soon a resolved event waiting for its opened one looks again. */
const OPENED_FIRST_POLL_MS = 1_000;

/** Alert dispatch (a tick) and delivery (one job per alert event and destination, retried with backoff). */
export function alertsProcessor(channels: Channels, queue: () => Queue) {
  const enqueue = async (deliveryId: string) => {
    await queue().add('deliver', { deliveryId }, {
      jobId: `deliver-${deliveryId}`,
      attempts: DELIVERY_ATTEMPTS,
      backoff: { type: 'exponential', delay: 60_000 },
      removeOnComplete: { age: 7 * 86_400 },
      removeOnFail: { age: 7 * 86_400 },
    });
  };
  return async (job: Job, token?: string) => {
    switch (job.name) {
      case 'dispatch-alerts':
        return { deliveries: await dispatchAlerts(enqueue) };
      case 'deliver': {
        const parsed = jobs.alerts.deliver.safeParse(job.data);
        if (!parsed.success) throw new UnrecoverableError(`malformed deliver job: ${parsed.error.issues[0]?.message}`);
        const outcome = await deliverAlert(parsed.data.deliveryId, channels, { final: job.attemptsMade + 1 >= (job.opts.attempts ?? 1) });
        if (outcome === 'after-opened') {
          // The opened event goes first; waiting for it uses up no attempt.
          await job.moveToDelayed(Date.now() + OPENED_FIRST_POLL_MS, token);
          throw new DelayedError();
        }
        return outcome;
      }
      default:
        throw new UnrecoverableError(`unknown alerts job ${job.name}`);
    }
  };
}
