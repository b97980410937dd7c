import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import mongoose from 'mongoose';
import { createApiApp } from '../../src/api/app.js';
import { createIngestApp } from '../../src/ingest/app.js';
import { connectMongo, ensureIndexes } from '../../src/shared/clients/mongo.js';
import { closeRedis, createRedis, redisReady } from '../../src/shared/clients/redis.js';
import { loadConfig, type Config } from '../../src/shared/config.js';
import { listen, type RunningServer } from '../../src/shared/http/server.js';
import { createLogger, type Logger } from '../../src/shared/logger.js';
import { startWorkers } from '../../src/workers/main.js';
import { Client } from './http.js';
import { deleteKeys } from './redis-keys.js';

export const DASHBOARD_ORIGIN = 'http://dashboard.test';

/** Log lines a harness captured, so tests can assert what never reaches a log. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void) {
    this.lines.push(chunk.toString());
    done();
  }
  get text() {
    return this.lines.join('');
  }
}

let connected: Promise<string> | undefined;

/** One database per test file, dropped when the file's last harness closes. */
function connectTestDatabase(logger: Logger): Promise<string> {
  connected ??= (async () => {
    const name = `slk_test_${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(4).toString('hex')}`;
    await connectMongo(`${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${name}`, logger);
    await ensureIndexes(process.env.TEST_FERRETDB_POSTGRES_URL || undefined);
    return name;
  })();
  return connected;
}

export async function dropTestDatabase(): Promise<void> {
  if (!connected) return;
  await connected;
  await mongoose.connection.dropDatabase();
  await mongoose.disconnect();
  connected = undefined;
}

export interface Harness {
  config: Config;
  logs: LogCapture;
  api: Client;
  ingest: Client;
  close(): Promise<void>;
}

/**
 * Starts the API and ingest apps on port 0 against the real MongoDB-compatible server and Redis, and
 * with `workers` the BullMQ workers too. `env` overrides configuration, e.g. a low rate limit or an
 * unreachable REDIS_URL. Each harness has its own Redis prefix, so its queues are its own, and deletes
 * its keys when closed; a prefix given in `env` may be shared with another harness, and is left alone.
 */
export async function startHarness(env: Record<string, string> = {}, options: { workers?: boolean } = {}): Promise<Harness> {
  const config = loadConfig({
    MONGO_URL: process.env.TEST_MONGO_URL,
    REDIS_URL: process.env.TEST_REDIS_URL,
    REDIS_PREFIX: `slk_test_${randomBytes(6).toString('hex')}`,
    DASHBOARD_ORIGIN,
    PASSWORD_HASH_COST: '12',
    LOG_LEVEL: 'info',
    ...env,
  });
  const logs = new LogCapture();
  const logger = createLogger(config.LOG_LEVEL, logs);
  await connectTestDatabase(logger);
  const redis = createRedis(config.REDIS_URL!, 'fast', logger);
  await redisReady(redis, 2000);
  const ingestApp = await createIngestApp({ config, logger, redis });
  const servers: RunningServer[] = [
    await listen(createApiApp({ config, logger, redis }), 0, '127.0.0.1'),
    await listen(ingestApp.app, 0, '127.0.0.1'),
  ];
  const queueRedis = options.workers ? createRedis(config.REDIS_URL!, 'queue', logger) : undefined;
  const stopWorkers = queueRedis ? await startWorkers({ config, logger, redis: queueRedis }) : undefined;
  const [api, ingest] = servers.map((s) => new Client(`http://127.0.0.1:${s.port}`)) as [Client, Client];
  return {
    config,
    logs,
    api,
    ingest,
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
      await ingestApp.close();
      await stopWorkers?.();
      if (queueRedis) await closeRedis(queueRedis);
      // the queues, limits and turns under a prefix this harness made up (on a Redis that answers), so that test runs leave nothing in a shared Redis
      if (!env.REDIS_PREFIX && redis.status === 'ready') await deleteKeys(redis, `${config.REDIS_PREFIX}:*`);
      await closeRedis(redis);
    },
  };
}

/**
 * A test file's harness: started before its tests, closed (with the file's database dropped) after.
 * `use` receives it, so the file can keep it in a variable.
 */
export function useHarness(use: (harness: Harness) => void, env: Record<string, string> = {}, options: { workers?: boolean } = {}): void {
  let harness: Harness | undefined;
  beforeAll(async () => {
    harness = await startHarness(env, options);
    use(harness);
  });
  afterAll(async () => {
    await harness?.close();
    await dropTestDatabase();
  });
}

/**
 * A test file's harness without workers, and the telemetry queue its ingest writes to, so the file
 * can read or rewrite the jobs: `use` receives both once started; the queue is emptied and closed after.
 */
export function useQueueHarness(use: (harness: Harness, queue: Queue) => Promise<void>): void {
  let harness: Harness | undefined;
  let queue: Queue | undefined;
  beforeAll(async () => {
    harness = await startHarness();
    queue = new Queue('telemetry', { connection: { url: harness.config.REDIS_URL }, prefix: harness.config.REDIS_PREFIX });
    await use(harness, queue);
  });
  afterAll(async () => {
    await queue?.obliterate({ force: true });
    await queue?.close();
    await harness?.close();
    await dropTestDatabase();
  });
}

/**
 * A harness's maintenance queue with its job events, for a test file that runs one scheduled job
 * itself at the moments it names (`adds` a job and waits for its result): that job's schedule is
 * removed, so it runs only then. Closed after the file's tests.
 */
export function useScheduledJob(harness: () => Harness, job: string): { run: (data?: Record<string, unknown>, timeoutMs?: number) => Promise<unknown> } {
  const connections: Redis[] = [];
  let queue: Queue | undefined;
  let events: QueueEvents | undefined;
  beforeAll(async () => {
    const { config } = harness();
    const connection = () => {
      const redis = new Redis(config.REDIS_URL!, { maxRetriesPerRequest: null });
      connections.push(redis);
      return redis;
    };
    queue = new Queue('maintenance', { connection: connection(), prefix: config.REDIS_PREFIX });
    await queue.removeJobScheduler(job);
    events = new QueueEvents('maintenance', { connection: connection(), prefix: config.REDIS_PREFIX });
    await events.waitUntilReady();
  });
  afterAll(async () => {
    await events?.close();
    await queue?.close();
    await Promise.all(connections.map((redis) => redis.quit()));
  });
  return { run: async (data = {}, timeoutMs = 30_000) => (await queue!.add(job, data)).waitUntilFinished(events!, timeoutMs) };
}
