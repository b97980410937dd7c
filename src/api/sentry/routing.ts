import express, { Router, type Request, type Response } from 'express';
import cookieParser from 'cookie-parser';
import { z, type ZodType } from 'zod';
import type { Config } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import type { OrganizationDoc } from '../../shared/features/accounts/model.js';
import { organizationWithSlug } from '../../shared/features/accounts/organization-slug.js';
import { errorHandler } from '../../shared/http/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { MemberPrincipal, Principal, Role } from '../../shared/principal.js';
import { authenticate, rateLimitIdentity, rateLimitOrganisation } from '../middleware/authenticate.js';
import { deadline } from '../middleware/deadline.js';
import { rateLimitBy, type RateLimits } from '../middleware/rate-limit.js';
import { authorize, detailsOf, JSON_BODY_LIMIT, parseBody, parseParams, refuseNulText } from '../routing.js';

/**
 * The Sentry-compatible routes under `/api/0/`: the subset of Sentry's web API that sentry-cli and the
 * Sentry bundler plugins call, answered from Sluice's own features. Paths, bodies and errors are Sentry's
 * (`{"detail": "..."}`), so the stock tools work and print our refusals; the credential is a Sluice API
 * key sent as `Authorization: Bearer`, with the same roles as `/v1`.
 */

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** The organisation a request's credential belongs to, with its slug. */
export type SentryOrganization = Pick<OrganizationDoc, '_id' | 'name' | 'createdAt'> & { slug: string };

export interface SentryAnswer {
  status?: number;
  body?: unknown;
}

export interface SentryRoute<P extends AnyObject = AnyObject, Q extends AnyObject = AnyObject, B extends ZodType = ZodType> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express style, without the `/api/0` prefix or a trailing slash: `/organizations/:org/releases`. An `:org` must be the caller's organisation's slug. */
  path: string;
  access: Role;
  params?: P;
  query?: Q;
  body?: B;
  handler: (input: { params: z.output<P>; query: z.output<Q>; body: z.output<B>; principal: MemberPrincipal; organization: SentryOrganization; req: Request; res: Response }) => Promise<SentryAnswer>;
}

export const sentryRoute = <P extends AnyObject, Q extends AnyObject, B extends ZodType>(route: SentryRoute<P, Q, B>) => route as unknown as SentryRoute;

/** Sentry's error shape: what sentry-cli prints after "API request failed". */
export const sentryErrorBody = (error: AppError) => ({
  detail: error.details?.length ? `${error.message}: ${error.details.map((detail) => `${detail.path} ${detail.message}`).join('; ')}` : error.message,
});

const emptyObject = z.object({});

/** Sentry ignores query parameters it does not know (the tools send `cursor=`, `per_page=`): so do these routes. */
function parseQuery(schema: AnyObject, query: unknown) {
  refuseNulText(query, 'query');
  const result = schema.safeParse(query);
  if (!result.success) throw new AppError('validation_failed', 'query parameters failed validation', { details: detailsOf(result.error, 'query') });
  return result.data;
}

async function callerOrganization(principal: MemberPrincipal): Promise<SentryOrganization> {
  const organization = await organizationWithSlug(principal.orgId);
  if (!organization) throw new AppError('not_found', 'The requested resource does not exist');
  return organization;
}

export interface SentryApiOptions {
  config: Config;
  logger: Logger;
  limits: RateLimits;
  /** Requests whose time is the client's (uploads, assembling what was uploaded): no request deadline. */
  noDeadline: (req: Request) => boolean;
}

/** The `/api/0` router: authentication, limits and errors as `/v1` has them, in Sentry's shapes; every other path a Sentry-shaped 404. */
export function sentryApi(routes: readonly SentryRoute[], { config, logger, limits, noDeadline }: SentryApiOptions): Router {
  const answerError = errorHandler(logger, sentryErrorBody);
  const router = Router();
  router.use(deadline(config.REQUEST_DEADLINE_MS, answerError, noDeadline));
  // chunk uploads are multipart, read by their route
  router.use(express.json({ limit: JSON_BODY_LIMIT, type: (req) => /^application\/json\b/i.test(req.headers['content-type'] ?? '') }));
  router.use(cookieParser());
  router.use(authenticate(config));
  router.use(rateLimitBy(limits.api, rateLimitIdentity));
  router.use(rateLimitBy(limits.org, rateLimitOrganisation, { outer: true }));
  for (const route of routes) {
    router[route.method](route.path, async (req, res) => {
      authorize(route.access, res.locals.principal as Principal | undefined, res.locals.credentialError as AppError | undefined);
      const principal = res.locals.principal as MemberPrincipal;
      const organization = await callerOrganization(principal);
      // another organisation's slug names nothing, exactly like an unknown one
      if (req.params.org !== undefined && req.params.org !== organization.slug) throw new AppError('not_found', 'The requested resource does not exist');
      const params = parseParams(route.params ?? emptyObject, req.params);
      const query = parseQuery(route.query ?? emptyObject, req.query);
      const body = route.body ? parseBody(route.body, req) : undefined;
      const answer = await route.handler({ params, query, body, principal, organization, req, res });
      if (res.headersSent) return;
      const status = answer.status ?? 200;
      if (status === 204 || answer.body === undefined) res.status(status).end();
      else res.status(status).json(answer.body);
    });
  }
  router.use((req) => {
    throw new AppError('not_found', `Sluice does not support ${req.method} /api/0${req.path} (see docs/api.md, "Sentry-compatible")`);
  });
  router.use(answerError);
  return router;
}
