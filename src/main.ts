/**
 * One entry for every role: ROLE=all (default) runs api, ingest and workers in this process;
 * ROLE=api|ingest|workers runs one. With MONGO_URL/REDIS_URL unset, local servers are reused or started.
 */
import { connectMongo, disconnectMongo, ensureIndexes } from './shared/clients/mongo.js';
import { closeRedis, createRedis, evictionPolicy, redisReady } from './shared/clients/redis.js';
import { ConfigError, loadConfig } from './shared/config.js';
import { dashboardHandler } from './api/web.js';
import { listen } from './shared/http/server.js';
import { ensureLocalServices, LocalServiceError } from './shared/local-services.js';
import { createLogger } from './shared/logger.js';

type Stop = [name: string, stop: () => Promise<unknown>];

async function main() {
  const config = loadConfig();
  const logger = createLogger(config.LOG_LEVEL);
  const urls = await ensureLocalServices(config);

  // Started in order; stopped in reverse: stop accepting, finish work, then close clients.
  const stops: Stop[] = [];
  // Handled from the start: a signal while a dependency is still awaited stops what has started so far.
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.SHUTDOWN_TIMEOUT_MS);
    deadline.unref();
    for (const [name, stop] of stops.reverse()) {
      await stop().catch((error: unknown) => logger.error({ err: error, name }, 'error while stopping'));
    }
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  // Each role's modules are loaded only by a process that runs it (an ingest process carries no S3,
  // SMTP, OIDC or model clients, and idles in less memory); loading them registers the models whose
  // indexes are ensured below.
  const runs = (role: string) => config.ROLE === 'all' || config.ROLE === role;
  const [workers, ingestRole, api] = await Promise.all([
    runs('workers') ? import('./workers/main.js') : undefined,
    runs('ingest') ? import('./ingest/app.js') : undefined,
    runs('api') ? import('./api/app.js') : undefined,
  ]);
  await connectMongo(urls.mongoUrl, logger, config.ROLE);
  stops.push(['mongo', disconnectMongo]);
  await ensureIndexes(urls.ferretdbPostgresUrl);
  const fastRedis = createRedis(urls.redisUrl, 'fast', logger);
  stops.push(['redis', () => closeRedis(fastRedis)]);
  if (!(await redisReady(fastRedis, 5000))) logger.warn('Redis is not reachable; starting anyway (rate limits fall back to per-process counters, ingest keeps accepted telemetry in its disk spool, workers wait for Redis)');
  else {
    const policy = await evictionPolicy(fastRedis);
    // queued telemetry lives in Redis until a worker stores it: an evicting Redis can lose what ingest acknowledged
    if (policy && policy !== 'noeviction') {
      logger.warn({ policy }, `Redis maxmemory-policy is "${policy}": under memory pressure Redis may evict queued telemetry and jobs that ingest already answered 200 for. Set maxmemory-policy to noeviction.`);
    }
  }

  if (workers) {
    const { startWorkers } = workers;
    const queueRedis = createRedis(urls.redisUrl, 'queue', logger);
    stops.push(['queue redis', () => closeRedis(queueRedis)]);
    stops.push(['workers', await startWorkers({ config, logger, redis: queueRedis, ferretdbPostgresUrl: urls.ferretdbPostgresUrl })]);
  }
  if (ingestRole) {
    const { createIngestApp } = ingestRole;
    const ingest = await createIngestApp({ config, logger, redis: fastRedis });
    const server = await listen(ingest.app, config.INGEST_PORT, config.HOST);
    stops.push(['ingest', async () => {
      await server.close();
      await ingest.close();
    }]);
    logger.info({ port: server.port }, 'ingest listening');
  }
  if (api) {
    const { createApiApp } = api;
    const server = await listen(createApiApp({ config, logger, redis: fastRedis }), config.PORT, config.HOST);
    stops.push(['api', server.close]);
    logger.info({ port: server.port }, 'api listening');
    if (config.WEB_PORT) {
      const web = await listen(dashboardHandler({ config, apiPort: server.port }), config.WEB_PORT, config.HOST);
      stops.push(['dashboard', web.close]);
      logger.info({ port: web.port, url: config.DASHBOARD_ORIGIN }, 'dashboard listening');
      logger.info(`open the dashboard at ${config.DASHBOARD_ORIGIN}`);
    }
  }

}

main().catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof LocalServiceError;
  process.stderr.write(`${known ? (error as Error).message : (error as Error).stack}\n`);
  process.exit(1);
});
