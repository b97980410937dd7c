import cookieParser from 'cookie-parser';
import cors from 'cors';
import express, { Router, type Express } from 'express';
import helmet from 'helmet';
import type { Redis } from 'ioredis';
import { pinoHttp } from 'pino-http';
import type { Config } from '../shared/config.js';
import { createBlobStore, type BlobStore } from '../shared/clients/blob.js';
import { createMailer } from '../shared/clients/mailer.js';
import { createCodeHosts } from '../shared/clients/code-hosts.js';
import { createOutbound, parseAllowlist } from '../shared/clients/outbound.js';
import { createSecretBox } from '../shared/clients/secret-box.js';
import { pingMongo } from '../shared/clients/mongo.js';
import { pingRedis } from '../shared/clients/redis.js';
import { errorHandler, notFoundRoute } from '../shared/http/errors.js';
import { healthRouter } from '../shared/http/health.js';
import { requestId } from '../shared/http/request-id.js';
import type { Logger } from '../shared/logger.js';
import type { ApiDeps } from './deps.js';
import { authenticate, rateLimitIdentity } from './middleware/authenticate.js';
import { createRateLimits, rateLimitBy } from './middleware/rate-limit.js';
import { openApiRoute } from './openapi.js';
import { accountRoutes } from './routes/accounts.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { issueRoutes } from './routes/issues.js';
import { memberRoutes } from './routes/members.js';
import { projectRoutes } from './routes/projects.js';
import { replayRoutes } from './routes/replays.js';
import { settingsRoutes } from './routes/settings.js';
import { logRoutes } from './routes/logs.js';
import { metricRoutes } from './routes/metrics.js';
import { anomalyRoutes } from './routes/anomalies.js';
import { ARTIFACT_UPLOAD_PATH, artifactRoutes, deferArtifactBody } from './routes/artifacts.js';
import { databaseRoutes } from './routes/database.js';
import { endpointRoutes } from './routes/endpoints.js';
import { queueRoutes } from './routes/queues.js';
import { serviceRoutes } from './routes/services.js';
import { traceRoutes } from './routes/traces.js';
import { alertRoutes } from './routes/alerts.js';
import { cronRoutes } from './routes/cron.js';
import { deploymentRoutes } from './routes/deployments.js';
import { integrationRoutes } from './routes/integrations.js';
import { dashboardRoutes } from './routes/dashboards.js';
import { uptimeRoutes } from './routes/uptime.js';
import { mountRoutes, type AnyRoute } from './routing.js';

export const JSON_BODY_LIMIT = '1mb';

/** Express matches paths case-insensitively and folds repeated slashes into no route: the redaction covers both. */
export const redactCheckinToken = (url: string) => url.replace(/(\/v1\/+checkins\/+)[^/?#]+/i, '$1[redacted]');

export interface ApiAppOptions {
  config: Config;
  logger: Logger;
  /** A `fast` Redis client: rate-limit counters and readiness. */
  redis: Redis;
  /** Instead of the store `config` names: tests pass the real store wrapped to record its reads. */
  blobs?: BlobStore;
}

export function createApiApp({ config, logger, redis, blobs = createBlobStore(config) }: ApiAppOptions): Express {
  const deps: ApiDeps = {
    config,
    limits: createRateLimits(config, redis),
    outbound: createOutbound({ allowlist: parseAllowlist(config.OUTBOUND_ALLOWLIST) }),
    codeHosts: createCodeHosts(config),
    secrets: createSecretBox(config),
  };
  const routes: AnyRoute[] = [
    ...accountRoutes(deps),
    ...memberRoutes(),
    ...projectRoutes(deps),
    ...apiKeyRoutes(),
    ...settingsRoutes(),
    ...issueRoutes(blobs),
    ...traceRoutes(),
    ...serviceRoutes(),
    ...endpointRoutes(),
    ...anomalyRoutes(),
    ...queueRoutes(),
    ...databaseRoutes(),
    ...logRoutes(),
    ...metricRoutes(),
    ...cronRoutes(deps),
    ...uptimeRoutes(deps),
    ...alertRoutes(deps),
    ...artifactRoutes(blobs),
    ...deploymentRoutes(),
    ...integrationRoutes(deps),
    ...dashboardRoutes(() => routes),
    ...replayRoutes(blobs),
  ];
  routes.push(openApiRoute(() => routes));

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.TRUST_PROXY_HOPS);
  app.use(requestId);
  app.use(
    pinoHttp({
      logger,
      genReqId: (req) => (req as express.Request).requestId,
      quietReqLogger: true,
      // a check-in token in the path is a credential: logged as [redacted]
      serializers: { req: (req: { url: string }) => ({ ...req, url: redactCheckinToken(req.url) }) },
    }),
  );
  app.use(helmet());
  const exposedHeaders = ['X-Request-Id', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'];
  app.use(
    cors((req, done) => {
      const origin = req.headers.origin;
      // The dashboard may send its cookie; a customer's page may only post feedback with a DSN, without cookies.
      if (origin === config.DASHBOARD_ORIGIN) done(null, { origin, credentials: true, exposedHeaders });
      else if (req.url === '/v1/feedback') done(null, { origin: true, credentials: false, methods: ['POST'], exposedHeaders });
      else done(null, { origin: false });
    }),
  );
  const mailer = createMailer(config);
  app.use(healthRouter({ mongo: pingMongo, redis: () => pingRedis(redis), blob: () => blobs.ping() }, { email: mailer ? () => mailer.ping() : { off: 'SMTP_URL is not set: email destinations and digests are off' } }));

  const v1 = Router();
  // artifact uploads (up to 50 MiB, multipart or raw) are read by their route, after authentication
  v1.post(ARTIFACT_UPLOAD_PATH, deferArtifactBody);
  v1.use(express.json({ limit: JSON_BODY_LIMIT }));
  // a check-in may carry any text (a job's log tail), whatever its content type
  v1.use('/v1/checkins', express.text({ type: () => true, limit: JSON_BODY_LIMIT }));
  v1.use(cookieParser());
  v1.use(authenticate(config));
  v1.use(rateLimitBy(deps.limits.api, rateLimitIdentity));
  mountRoutes(v1, routes);
  app.use(v1);

  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
