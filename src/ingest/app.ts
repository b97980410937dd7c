import { Queue } from 'bullmq';
import cors from 'cors';
import { performance } from 'node:perf_hooks';
import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import { pingMongo } from '../shared/clients/mongo.js';
import { pingRedis } from '../shared/clients/redis.js';
import { errorHandler, notFoundRoute } from '../shared/http/errors.js';
import { healthRouter } from '../shared/http/health.js';
import { createLimiter } from '../shared/http/rate-limit.js';
import { requestId } from '../shared/http/request-id.js';
import type { Logger } from '../shared/logger.js';
import { TelemetryBatcher } from './batcher.js';
import { DiskSpool } from './spool.js';
import type { IngestContext } from './context.js';
import { DsnCache } from './dsn.js';
import { otlpRouter } from './routes/otlp.js';
import { sentryRouter } from './routes/sentry.js';

export interface IngestAppOptions {
  config: Config;
  logger: Logger;
  /** A `fast` Redis client: batches fail at once rather than queue while Redis is down. */
  redis: Redis;
}

export interface IngestApp {
  app: Express;
  /** Writes waiting batches and closes the queue; the HTTP server must already have stopped accepting. */
  close(): Promise<void>;
}

/**
 * Ingest answers thousands of requests a second, so it logs what a reader needs: refusals at info,
 * failures at error, and accepted requests only at debug (pino-http's per-request logger cost more
 * than the envelope's parsing). The request id comes from the request's context.
 */
function requestLog(logger: Logger): express.RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once('finish', () => {
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'info' : 'debug';
      if (!logger.isLevelEnabled(level)) return;
      const path = req.originalUrl.split('?')[0];
      logger[level]({ method: req.method, path, status: res.statusCode, ms: Math.round(performance.now() - started) }, 'ingest request');
    });
    next();
  };
}

export async function createIngestApp({ config, logger, redis }: IngestAppOptions): Promise<IngestApp> {
  const queue = new Queue('telemetry', { connection: redis, prefix: config.REDIS_PREFIX });
  queue.on('error', (error) => logger.warn({ err: error }, 'telemetry queue error'));
  const spool = await DiskSpool.open(config.INGEST_SPOOL_DIR, Math.floor(config.INGEST_SPOOL_MAX_MB * 1024 * 1024));
  const batcher = new TelemetryBatcher(queue, redis, spool, logger, {
    maxItems: config.INGEST_BATCH_SIZE,
    spoolMaxAgeMs: config.INGEST_SPOOL_MAX_AGE_HOURS * 3_600_000,
  });
  const ctx: IngestContext = {
    dsns: new DsnCache(config.INGEST_DSN_CACHE_MS),
    limiter: createLimiter(redis, config.REDIS_PREFIX, 'ingest', config.INGEST_RATE_LIMIT_PER_SECOND, 1),
    unauthenticated: createLimiter(redis, config.REDIS_PREFIX, 'ingest-unauthenticated', config.INGEST_UNAUTHENTICATED_PER_MINUTE, 60),
    batcher,
  };

  const app = express();
  app.disable('x-powered-by');
  // answers are a few bytes no client revalidates: hashing each for an ETag is wasted work
  app.disable('etag');
  app.set('trust proxy', config.TRUST_PROXY_HOPS);
  app.use(requestId);
  app.use(requestLog(logger));
  // Browser SDKs post cross-origin from any site that embeds them; they carry no cookies, only the public key.
  const browsers = cors({
    origin: true,
    methods: ['POST', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Content-Encoding', 'Authorization', 'X-Sentry-Auth', 'sentry-trace', 'baggage', 'X-Request-Id'],
    exposedHeaders: ['X-Sentry-Rate-Limits', 'Retry-After', 'X-Request-Id'],
    maxAge: 3600,
  });
  // servers' SDKs and exporters send no Origin: nothing for CORS to answer
  app.use((req, res, next) => (req.headers.origin ? browsers(req, res, next) : next()));
  // While the spool has room, a Redis outage costs no telemetry, so it does not take ingest out of service.
  app.use(
    healthRouter(
      {
        mongo: pingMongo,
        spool: async () => {
          const status = batcher.spoolStatus();
          if (status.full) throw new Error(`the disk spool is full (${status.bytes} of ${status.max_bytes} bytes in ${status.batches} batches) and Redis cannot take telemetry: ingest answers 503 until Redis returns`);
          return status;
        },
      },
      {
        redis: async () => {
          try {
            await pingRedis(redis);
          } catch (error) {
            throw new Error(`${(error as Error).message}; accepted telemetry goes to the disk spool until Redis returns`);
          }
        },
      },
    ),
  );
  app.use(sentryRouter(ctx));
  app.use(otlpRouter(ctx));
  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return {
    app,
    close: async () => {
      await ctx.batcher.close();
      await queue.close();
    },
  };
}
