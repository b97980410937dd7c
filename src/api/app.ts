import { Queue } from 'bullmq';
import cookieParser from 'cookie-parser';
import cors from 'cors';
import express, { Router, type Express } from 'express';
import helmet from 'helmet';
import type { Redis } from 'ioredis';
import { pinoHttp } from 'pino-http';
import type { Config } from '../shared/config.js';
import { aiEnabled } from '../shared/clients/ai.js';
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
import { authenticate, rateLimitIdentity, rateLimitOrganisation } from './middleware/authenticate.js';
import { deadline } from './middleware/deadline.js';
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
import { artifactRoutes, isArtifactUpload } from './routes/artifacts.js';
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
import { SSO_PATHS, ssoGate, ssoRoutes } from './routes/sso.js';
import { createDnsClient } from '../shared/clients/dns.js';
import { createOidcClient } from '../shared/clients/oidc.js';
import { aiUnavailableGate, investigationRoutes } from './routes/investigations.js';
import { JSON_BODY_LIMIT, mountRoutes, type AnyRoute } from './routing.js';
import { sentryApi } from './sentry/routing.js';
import { sentryRoutes } from './sentry/routes.js';
import { isBundleUpload, sentryArtifactRoutes } from './sentry/artifacts.js';
import { usageRoutes } from './routes/usage.js';
import { checkoutRoutes } from './routes/checkout.js';
import { createPayments } from '../shared/clients/payments.js';
import { storableText } from '../shared/telemetry/records.js';
import { shareWriteTurns } from '../shared/telemetry/storage.js';


/** Express matches paths case-insensitively and folds repeated slashes into no route: the redaction covers both. */
/** A check-in's text is a job's output, kept as sent but storable: a NUL byte in it becomes U+FFFD rather than a refusal. */
const keepNulAsReplacement: express.RequestHandler = (req, _res, next) => {
  if (typeof req.body === 'string') req.body = storableText(req.body);
  next();
};

export const redactCheckinToken = (url: string) => url.replace(/(\/v1\/+checkins\/+)[^/?#]+/i, '$1[redacted]');

/** The single-use code and state an identity provider sends back are credentials for a moment: not logged. */
export const redactSsoCallback = (url: string) => (/\/v1\/+auth\/+sso\/+callback/i.test(url) ? url.replace(/([?&](code|state)=)[^&#]*/gi, '$1[redacted]') : url);

export interface ApiAppOptions {
  config: Config;
  logger: Logger;
  /** A `fast` Redis client: rate-limit counters and readiness. */
  redis: Redis;
  /** Instead of the store `config` names: tests pass the real store wrapped to record its reads. */
  blobs?: BlobStore;
}

/** Every route the API mounts with this configuration, and what the app around them needs. */
function assemble({ config, logger, redis, blobs = createBlobStore(config) }: ApiAppOptions) {
  // check-ins, issue status changes and monitor edits write documents the workers count into too
  shareWriteTurns(redis, config.REDIS_PREFIX);
  const outbound = createOutbound({ allowlist: parseAllowlist(config.OUTBOUND_ALLOWLIST) });
  const deps: ApiDeps = {
    config,
    limits: createRateLimits(config, redis),
    outbound,
    codeHosts: createCodeHosts(config),
    secrets: createSecretBox(config),
    mailer: createMailer(config, redis),
  };
  // AI on: investigation jobs go to the workers through this queue (on the shared `fast` client, as ingest's).
  const investigationQueue = aiEnabled(config) ? new Queue('investigations', { connection: redis, prefix: config.REDIS_PREFIX }) : undefined;
  investigationQueue?.on('error', (error) => logger.warn({ err: error }, 'investigations queue error'));
  const aiRoutes = investigationRoutes({
    model: config.OLLAMA_MODEL,
    enqueue: investigationQueue && (async (investigationId) => {
      await investigationQueue.add('investigate', { investigationId }, { jobId: `investigation-${investigationId}`, attempts: 3, backoff: { type: 'exponential', delay: 5_000 }, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 86_400 } });
    }),
  });
  const routes: AnyRoute[] = [
    ...accountRoutes(deps),
    ...memberRoutes(deps),
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
    ...aiRoutes,
    ...ssoRoutes(deps, { oidc: createOidcClient({ outbound, logger }), dns: createDnsClient(config) }),
    ...usageRoutes(deps),
    // without PAYMENT_API_KEY checkout is not mounted at all: 404 for everyone
    ...(config.PAYMENT_API_KEY ? checkoutRoutes(deps, createPayments(config)) : []),
  ];
  routes.push(openApiRoute(() => routes));
  return { deps, routes, aiRoutes, blobs };
}

/** The API's routes, as its OpenAPI document describes them (the dashboard's types are generated from it). */
export const apiRoutes = (options: ApiAppOptions): readonly AnyRoute[] => assemble(options).routes;

export function createApiApp(options: ApiAppOptions): Express {
  const { config, logger, redis } = options;
  const { deps, routes, aiRoutes, blobs } = assemble(options);

  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.TRUST_PROXY_HOPS);
  app.use(requestId);
  app.use(
    pinoHttp({
      logger,
      genReqId: (req) => (req as express.Request).requestId,
      quietReqLogger: true,
      // a check-in token in the path, and an SSO callback's code and state, are credentials: logged as [redacted]
      // the query and params are in the URL already, redacted
      serializers: { req: (req: { url: string }) => ({ ...req, url: redactSsoCallback(redactCheckinToken(req.url)), query: undefined, params: undefined }) },
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
  const { mailer } = deps;
  app.use(healthRouter({ mongo: pingMongo, redis: () => pingRedis(redis), blob: () => blobs.ping() }, { email: mailer ? () => mailer.ping() : { off: 'SMTP_URL is not set: email destinations and digests are off' } }));

  // sentry-cli and the Sentry bundler plugins: Sentry's paths and error shape, our credentials and roles
  app.use('/api/0', sentryApi([...sentryRoutes(), ...sentryArtifactRoutes(blobs)], { config, logger, limits: deps.limits, noDeadline: isBundleUpload }));

  const v1 = Router();
  // a request still working after REQUEST_DEADLINE_MS is answered 503 deadline_exceeded and its reads stop
  v1.use(deadline(config.REQUEST_DEADLINE_MS, errorHandler(logger), isArtifactUpload));
  // SSO off (no API_PUBLIC_URL): every SSO route answers 501 sso_unavailable before any credential is looked at
  v1.use(SSO_PATHS, ssoGate(config));
  // AI off: every AI route answers 501 ai_unavailable before any credential is looked at
  if (!aiEnabled(config)) v1.use(aiUnavailableGate(aiRoutes));
  // artifact uploads (up to 50 MiB, multipart or raw) are read by their route, after authentication
  v1.use(express.json({ limit: JSON_BODY_LIMIT, type: (req) => !isArtifactUpload(req as express.Request) && /^application\/json\b/i.test(req.headers['content-type'] ?? '') }));
  // a check-in may carry any text (a job's log tail), whatever its content type
  v1.use('/v1/checkins', express.text({ type: () => true, limit: JSON_BODY_LIMIT }), keepNulAsReplacement);
  v1.use(cookieParser());
  v1.use(authenticate(config));
  v1.use(rateLimitBy(deps.limits.api, rateLimitIdentity));
  // then the organisation's budget, shared by all its sessions and API keys
  v1.use(rateLimitBy(deps.limits.org, rateLimitOrganisation, { outer: true }));
  mountRoutes(v1, routes);
  app.use(v1);

  app.use(notFoundRoute);
  app.use(errorHandler(logger));
  return app;
}
