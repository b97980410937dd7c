import express, { type Express } from 'express';
import type { Redis } from 'ioredis';
import { pinoHttp } from 'pino-http';
import { pingMongo } from '../shared/clients/mongo.js';
import { pingRedis } from '../shared/clients/redis.js';
import { errorHandler, notFoundRoute } from '../shared/http/errors.js';
import { healthRouter } from '../shared/http/health.js';
import { requestId } from '../shared/http/request-id.js';
import type { Logger } from '../shared/logger.js';

export interface IngestAppOptions {
  logger: Logger;
  redis: Redis;
}

export function createIngestApp({ logger, redis }: IngestAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId);
  app.use(pinoHttp({ logger, genReqId: (req) => (req as express.Request).requestId, quietReqLogger: true }));
  app.use(healthRouter({ mongo: pingMongo, redis: () => pingRedis(redis) }));
  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
