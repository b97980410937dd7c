import { Queue } from 'bullmq';
import cors from 'cors';
import type { RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import type { Config } from '../shared/config.js';
import { pingMongo } from '../shared/clients/mongo.js';
import { closeRedis, pingRedis, redisReady } from '../shared/clients/redis.js';
import { readiness, type OptionalCheck, type ReadinessChecks } from '../shared/http/health.js';
import { createLimiter, createSharedLimiter } from '../shared/http/rate-limit.js';
import { requestIdFrom } from '../shared/http/request-id.js';
import type { Logger } from '../shared/logger.js';
import { TelemetryBatcher } from './batcher.js';
import { DiskSpool } from './spool.js';
import type { IngestContext } from './context.js';
import { DsnCache } from './dsn.js';
import { noRoute, originFormOf, sendError, sendJson, type IngestCall } from './http.js';
import type { OtlpSignal } from '../shared/telemetry/otlp/decode.js';
import { acceptExport } from './routes/otlp.js';
import { acceptEnvelope, acceptStoreEvent } from './routes/sentry.js';

export interface IngestAppOptions {
  config: Config;
  logger: Logger;
  /** A `fast` Redis client: batches fail at once rather than queue while Redis is down. */
  redis: Redis;
}

export interface IngestApp {
  /** A plain node:http handler: ingest's few routes need no framework, and its hot path no per-request middleware. */
  app: RequestListener;
  /** Writes waiting batches and closes the queue; the HTTP server must already have stopped accepting. */
  close(): Promise<void>;
}

/**
 * Ingest answers thousands of requests a second, so it logs what a reader needs: refusals at info,
 * failures at error, and accepted requests only at debug (pino-http's per-request logger cost more
 * than the envelope's parsing).
 */
function logRequest(logger: Logger, call: IngestCall): void {
  const status = call.res.statusCode;
  const level = status >= 500 ? 'error' : status >= 400 ? 'info' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  logger[level]({ request_id: call.requestId, method: call.req.method, path: call.path, status, ms: Math.round(performance.now() - call.started) }, 'ingest request');
}

// Browser SDKs post cross-origin from any site that embeds them; they carry no cookies, only the public key.
const browsers = cors({
  origin: true,
  methods: ['POST', 'OPTIONS'],
  allowedHeaders: ['Content-Type', 'Content-Encoding', 'Authorization', 'X-Sentry-Auth', 'sentry-trace', 'baggage', 'X-Request-Id'],
  exposedHeaders: ['X-Sentry-Rate-Limits', 'Retry-After', 'X-Request-Id'],
  maxAge: 3600,
});

type Route = (call: IngestCall, param: string) => Promise<void> | void;

/** Paths match case-insensitively, with or without a trailing slash, as they did when ingest ran on Express. */
const SENTRY_PATH = /^\/api\/([^/]+)\/(envelope|store)\/?$/i;
const OTLP_PATH = /^\/v1\/(traces|logs|metrics)\/?$/i;
const HEALTH_PATH = /^\/(healthz|readyz)\/?$/i;

/** A path parameter percent-decoded, or as sent when it is not valid percent-encoding. */
function decodedParam(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The methods a path takes, for an OPTIONS request without `Origin` (no CORS preflight), as Express answered it. */
function sendAllow(res: ServerResponse, allow: string): void {
  res.setHeader('Allow', allow);
  res.setHeader('Content-Length', Buffer.byteLength(allow));
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.end(allow);
}

export async function createIngestApp({ config, logger, redis }: IngestAppOptions): Promise<IngestApp> {
  // BullMQ defines its scripts as commands on the client it is given, and ioredis copies every defined
  // command onto each auto-pipeline it starts, which cost more than the batch's write itself. The queue
  // has a connection of its own without auto-pipelining (otherwise with the shared client's options,
  // which reports outages).
  const queueRedis = redis.duplicate({ enableAutoPipelining: false });
  queueRedis.on('error', () => {});
  // so the first batches go to Redis rather than to the spool while it connects
  if (redis.status === 'ready') await redisReady(queueRedis, 5000);
  const queue = new Queue('telemetry', { connection: queueRedis, prefix: config.REDIS_PREFIX });
  queue.on('error', (error) => logger.warn({ err: error }, 'telemetry queue error'));
  const spool = await DiskSpool.open(config.INGEST_SPOOL_DIR, Math.floor(config.INGEST_SPOOL_MAX_MB * 1024 * 1024));
  const batcher = new TelemetryBatcher(queue, queueRedis, spool, logger, {
    maxItems: config.INGEST_BATCH_SIZE,
    spoolMaxAgeMs: config.INGEST_SPOOL_MAX_AGE_HOURS * 3_600_000,
  });
  const ctx: IngestContext = {
    dsns: new DsnCache(config.INGEST_DSN_CACHE_MS),
    limiter: createSharedLimiter(redis, config.REDIS_PREFIX, 'ingest', config.INGEST_RATE_LIMIT_PER_SECOND, 1),
    unauthenticated: createLimiter(redis, config.REDIS_PREFIX, 'ingest-unauthenticated', config.INGEST_UNAUTHENTICATED_PER_MINUTE, 60),
    batcher,
    trustProxyHops: config.TRUST_PROXY_HOPS,
  };

  // While the spool has room, a Redis outage costs no telemetry, so it does not take ingest out of service.
  const required: ReadinessChecks = {
    mongo: pingMongo,
    spool: async () => {
      const status = batcher.spoolStatus();
      if (status.full) throw new Error(`the disk spool is full (${status.bytes} of ${status.max_bytes} bytes in ${status.batches} batches) and Redis cannot take telemetry: ingest answers 503 until Redis returns`);
      return status;
    },
  };
  const optional: Record<string, OptionalCheck> = {
    redis: async () => {
      try {
        await pingRedis(redis);
      } catch (error) {
        throw new Error(`${(error as Error).message}; accepted telemetry goes to the disk spool until Redis returns`);
      }
    },
  };
  const health: Route = async (call, name) => {
    if (name.toLowerCase() === 'healthz') return sendJson(call, 200, { status: 'ok' });
    const { status, body } = await readiness(required, optional, call.requestId);
    sendJson(call, status, body);
  };
  const envelope: Route = (call, project) => acceptEnvelope(ctx, call, project);
  const store: Route = (call, project) => acceptStoreEvent(ctx, call, project);
  const otlp: Route = (call, signal) => acceptExport(ctx, call, signal.toLowerCase() as OtlpSignal);

  /** The route for a request and what its path names, or the methods the path takes when the request's is not one of them. */
  const routeOf = (method: string | undefined, path: string): { route: Route; param: string } | { allow: string } | undefined => {
    let match = SENTRY_PATH.exec(path);
    if (match) return method === 'POST' ? { route: match[2]!.toLowerCase() === 'store' ? store : envelope, param: decodedParam(match[1]!) } : { allow: 'POST' };
    match = OTLP_PATH.exec(path);
    if (match) return method === 'POST' ? { route: otlp, param: match[1]! } : { allow: 'POST' };
    match = HEALTH_PATH.exec(path);
    if (match) return method === 'GET' || method === 'HEAD' ? { route: health, param: match[1]! } : { allow: 'GET, HEAD' };
    return undefined;
  };

  const serve = async (call: IngestCall): Promise<void> => {
    const { req, res } = call;
    try {
      const found = routeOf(req.method, call.path);
      if (found && 'route' in found) await found.route(call, found.param);
      else if (found && req.method === 'OPTIONS') sendAllow(res, found.allow);
      else throw noRoute(call);
    } catch (error) {
      sendError(call, error, logger);
    }
    logRequest(logger, call);
  };

  // No AsyncLocalStorage context per request: it turns on promise hooks, a cost on every promise of the
  // process; the few lines logged during a request name its id themselves.
  const app: RequestListener = (req, res) => {
    const requestId = requestIdFrom(req.headers['x-request-id'] as string | undefined);
    res.setHeader('X-Request-Id', requestId);
    const url = originFormOf(req.url ?? '/');
    const at = url.indexOf('?');
    const call: IngestCall = { req, res, requestId, path: at === -1 ? url : url.slice(0, at), search: at === -1 ? '' : url.slice(at + 1), started: performance.now() };
    // servers' SDKs and exporters send no Origin: nothing for CORS to answer
    if (!req.headers.origin) return void serve(call);
    // CORS answers a preflight itself, without calling on
    if (req.method !== 'OPTIONS') return void browsers(req, res, () => void serve(call));
    browsers(req, res, () => {});
    logRequest(logger, call);
  };
  return {
    app,
    close: async () => {
      await ctx.batcher.close();
      await queue.close();
      await closeRedis(queueRedis);
    },
  };
}
