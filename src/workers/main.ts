import { Queue, Worker, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';
import { createAiClient } from '../shared/clients/ai.js';
import { createBlobStore } from '../shared/clients/blob.js';
import { createMailer } from '../shared/clients/mailer.js';
import { createOutbound, parseAllowlist } from '../shared/clients/outbound.js';
import { createSecretBox } from '../shared/clients/secret-box.js';
import { requestContext } from '../shared/context.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { QueueName } from '../shared/queues.js';
import { shareWriteTurns } from '../shared/telemetry/storage.js';
import { countsSettled } from '../shared/features/issues/store.js';
import { writeEndUsers } from '../shared/features/users/service.js';
import { upgradeStoredData } from '../shared/features/maintenance/upgrades.js';
import { alertsProcessor } from './processors/alerts.js';
import { investigationsProcessor } from './processors/investigations.js';
import { maintenanceProcessor } from './processors/maintenance.js';
import { monitorsProcessor } from './processors/monitors.js';
import { telemetryProcessor } from './processors/telemetry.js';

/** Schedules are declared here and upserted at start, so any number of worker processes run each tick once. */
const schedules = [
  { queue: 'maintenance', id: 'cleanup', every: 3_600_000, job: 'cleanup' },
  { queue: 'maintenance', id: 'reopen-ignored-issues', every: 60_000, job: 'reopen-ignored-issues' },
  { queue: 'maintenance', id: 'recount-error-events', every: 30_000, job: 'recount-error-events' },
  { queue: 'maintenance', id: 'detect-anomalies', every: 60_000, job: 'detect-anomalies' },
  { queue: 'monitors', id: 'sweep-cron-checks', every: 10_000, job: 'sweep-cron-checks' },
  { queue: 'monitors', id: 'schedule-probes', every: 5_000, job: 'schedule-probes' },
  { queue: 'monitors', id: 'send-due-reports', every: 60_000, job: 'send-due-reports' },
  { queue: 'monitors', id: 'evaluate-deployments', every: 60_000, job: 'evaluate-deployments' },
  { queue: 'alerts', id: 'dispatch-alerts', every: 5_000, job: 'dispatch-alerts' },
  { queue: 'investigations', id: 'fail-stuck-investigations', every: 300_000, job: 'fail-stuck-investigations' },
] as const;
/** Jobs each worker process runs at once per queue: probes and deliveries wait on the network, so many at once. */
const concurrencyOf = (name: QueueName, config: Config) => ({ telemetry: config.WORKER_CONCURRENCY, maintenance: 1, monitors: 8, alerts: 8, investigations: 2 })[name];
/**
 * BullMQ workers a workers process runs on the telemetry queue, sharing its WORKER_CONCURRENCY and one
 * flusher. A BullMQ worker takes jobs one round trip at a time, and while the process's event loop is
 * busy storing a flush each round trip waits for it: at 1,300 error events/s one worker took jobs in
 * bursts, some a second or more after they were queued (the freshness p99 3.1 and 5.5 s), three kept
 * up (1.4 and 1.6 s; see performance.md).
 */
const TELEMETRY_WORKERS = 3;
/** How often a workers process writes the end users its flushes saw: the users list is this far behind at most. */
const END_USER_WRITE_MS = 5_000;
/** On FerretDB's PostgreSQL backend: indexes for collections created since start (see ferretdb-indexes). */
const storeIndexSchedule = { queue: 'maintenance', id: 'store-indexes', every: 60_000, job: 'store-indexes' } as const;

export interface WorkerOptions {
  config: Config;
  logger: Logger;
  redis: Redis;
  /** Set when the store is FerretDB on PostgreSQL. */
  ferretdbPostgresUrl?: string | undefined;
}

export async function startWorkers({ config, logger, redis, ferretdbPostgresUrl }: WorkerOptions) {
  // several worker processes count into the same issues and rollups: on FerretDB they take turns through Redis
  shareWriteTurns(redis, config.REDIS_PREFIX);
  const blobs = createBlobStore(config);
  const mailer = createMailer(config, redis);
  const secrets = createSecretBox(config);
  const outbound = createOutbound({ allowlist: parseAllowlist(config.OUTBOUND_ALLOWLIST) });
  const connection = { connection: redis, prefix: config.REDIS_PREFIX };
  const queues = new Map<QueueName, Queue>();
  const queue = (name: QueueName) => {
    if (!queues.has(name)) queues.set(name, new Queue(name, connection));
    return queues.get(name)!;
  };
  const processors: Record<QueueName, Processor> = {
    telemetry: telemetryProcessor(blobs, logger),
    maintenance: maintenanceProcessor({ logger, blobs, ferretdbPostgresUrl, recountAfterMs: config.WORKER_RECOUNT_AFTER_MS }),
    monitors: monitorsProcessor({ logger, outbound, secrets, mailer, tlsWarnDays: config.TLS_EXPIRY_WARN_DAYS, queue: () => queue('monitors') }),
    alerts: alertsProcessor({ mailer, outbound, secrets }, () => queue('alerts')),
    investigations: investigationsProcessor({ logger, ai: createAiClient(config), timeoutMs: config.AI_TIMEOUT_MS }),
  };
  const startWorker = (name: string, processor: Processor, concurrency: number) => {
    const worker = new Worker(name, (job, token) => requestContext.run({ jobId: job.id }, () => processor(job, token)), {
      ...connection,
      concurrency,
      lockDuration: config.WORKER_LOCK_MS,
      stalledInterval: config.WORKER_STALLED_CHECK_MS,
    });
    worker.on('failed', (job, error) => logger.error({ err: error, queue: name, job: job?.name }, 'job failed'));
    worker.on('error', (error) => logger.error({ err: error, queue: name }, 'worker error'));
    return worker;
  };
  const workers = Object.entries(processors).flatMap(([name, processor]) => {
    const instances = name === 'telemetry' ? TELEMETRY_WORKERS : 1;
    const concurrency = Math.ceil(concurrencyOf(name as QueueName, config) / instances);
    return Array.from({ length: instances }, () => startWorker(name, processor, concurrency));
  });
  // Data stored by an earlier release is brought up to date in the background.
  void upgradeStoredData(secrets)
    .then((changed) => Object.values(changed).some((count) => count > 0) && logger.info(changed, 'upgraded stored data'))
    .catch((error: unknown) => logger.error({ err: error }, 'upgrading stored data failed'));
  // Declared in the background: with Redis down at start the workers wait for it, and the other roles
  // of this process (ingest with its disk spool) must not wait with them.
  const declared = (async () => {
    for (const schedule of ferretdbPostgresUrl ? [...schedules, storeIndexSchedule] : schedules) {
      await queue(schedule.queue).upsertJobScheduler(schedule.id, { every: schedule.every }, { name: schedule.job, data: {} });
    }
    logger.info({ queues: [...new Set(workers.map((w) => w.name))] }, 'workers started');
  })().catch((error: unknown) => logger.error({ err: error }, 'job schedulers could not be declared'));
  // the end users the flushes saw, written once per user per interval (see writeEndUsers)
  const writeUsers = () => writeEndUsers().catch((error: unknown) => logger.error({ err: error }, 'writing end users failed'));
  const usersTimer = setInterval(writeUsers, END_USER_WRITE_MS);
  return async () => {
    await Promise.race([declared, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    await Promise.all(workers.map((worker) => worker.close()));
    // the counts of the error events its last jobs stored, so that none waits for the recount sweep
    await countsSettled();
    clearInterval(usersTimer);
    await writeUsers();
    await Promise.all([...queues.values()].map((q) => q.close()));
    mailer?.close();
  };
}
