import type { Request, Response, Router } from 'express';
import { z, type ZodType } from 'zod';
import { AppError, type ErrorDetail } from '../shared/errors.js';
import { hasRole, type MemberPrincipal, type Principal, type Role } from '../shared/principal.js';

/**
 * Who may call a route: `public` needs no credential; a role needs a member credential (session or API
 * key) of at least that role; `member+dsn` also takes a project's DSN (write routes the SDKs call).
 */
export type Access = 'public' | Role | 'member+dsn';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface RouteDefinition<
  B extends ZodType = ZodType,
  Q extends AnyObject = AnyObject,
  P extends AnyObject = AnyObject,
  R extends ZodType = ZodType,
  A extends Access = Access,
> {
  method: Method;
  /** OpenAPI style: /v1/projects/{projectID} */
  path: string;
  tag: string;
  summary: string;
  access: A;
  params?: P;
  query?: Q;
  body?: B;
  status?: number;
  response?: R;
  /** Error statuses particular to this route, beyond CONTRACT.md's generic refusals, each with when it is answered (documented in OpenAPI). */
  errors?: Record<number, string>;
  handler: (input: {
    params: z.output<P>;
    query: z.output<Q>;
    body: z.output<B>;
    principal: A extends 'public' ? Principal | undefined : A extends 'member+dsn' ? Principal : MemberPrincipal;
    req: Request;
    res: Response;
  }) => Promise<R extends ZodType ? z.input<R> : void>;
}

export type AnyRoute = RouteDefinition<ZodType, AnyObject, AnyObject, ZodType, Access>;

export const defineRoute = <B extends ZodType, Q extends AnyObject, P extends AnyObject, R extends ZodType, A extends Access>(
  route: RouteDefinition<B, Q, P, R, A>,
) => route as unknown as AnyRoute;

/** What a JSON request body may weigh (uploads are read by their routes, with their own limits). */
export const JSON_BODY_LIMIT = '1mb';

const MAX_BODY_DEPTH = 32;

const NUL_REFUSED = 'text may not hold the NUL character (U+0000)';

/**
 * Why a parsed body or query cannot be taken, if it cannot: nested past MAX_BODY_DEPTH, or holding
 * U+0000 in a text or key, which the store cannot hold nor compare (PostgreSQL's jsonb under FerretDB
 * refuses it in any text, BSON in any key).
 */
function refusal(value: unknown, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? NUL_REFUSED : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= MAX_BODY_DEPTH) return `request body is nested deeper than ${MAX_BODY_DEPTH} levels`;
  for (const [key, child] of Object.entries(value)) {
    const found = key.includes('\0') ? NUL_REFUSED : refusal(child, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** A query or form with U+0000 in a name or value is malformed, on every route; `location` names which in the details. */
export function refuseNulText(fields: unknown, location: 'query' | 'body'): void {
  const found = refusal(fields);
  if (found) throw new AppError('invalid_request', found, { details: [{ path: location, message: found }] });
}

export function detailsOf(error: z.ZodError, location: string): ErrorDetail[] {
  return error.issues.map((issue) => ({
    path: [location, ...issue.path.map(String)].join('.'),
    message: issue.code === 'unrecognized_keys' ? `unknown ${issue.keys.join(', ')}` : issue.message,
  }));
}

/** A route's query parameters checked as mounting checks them: unknown ones refused, defaults applied. */
export const safeParseQuery = (route: Pick<AnyRoute, 'query'>, query: unknown) => (route.query ?? emptyObject).strict().safeParse(query);

/** Unknown query parameters are a malformed request; values that fail the schema are a validation failure. */
function parseQuery(route: AnyRoute, query: unknown) {
  refuseNulText(query, 'query');
  const result = safeParseQuery(route, query);
  if (result.success) return result.data;
  const details = detailsOf(result.error, 'query');
  if (result.error.issues.every((issue) => issue.code === 'unrecognized_keys')) {
    throw new AppError('invalid_request', 'unknown query parameter', { details });
  }
  throw new AppError('validation_failed', 'query parameters failed validation', { details });
}

/** Ids in paths are opaque: one that cannot be valid names nothing, exactly like an unknown one. */
export function parseParams(schema: AnyObject, params: unknown) {
  const result = schema.safeParse(params);
  // a text with U+0000 names nothing (the store could not even compare it)
  if (!result.success || refusal(params)) throw new AppError('not_found', 'not found');
  return result.data;
}

export function parseBody(schema: ZodType, req: Request) {
  const hasBody = req.body !== undefined;
  if (!hasBody && Number(req.get('content-length') ?? 0) > 0) {
    throw new AppError('unsupported_media_type', 'request bodies must be application/json');
  }
  const found = refusal(req.body);
  if (found) throw new AppError('invalid_request', found);
  const result = schema.safeParse(hasBody ? req.body : {});
  if (!result.success) throw new AppError('validation_failed', 'request body failed validation', { details: detailsOf(result.error, 'body') });
  return result.data;
}

export function authorize(access: Access, principal: Principal | undefined, credentialError: AppError | undefined): void {
  if (access === 'public') return;
  if (credentialError) throw credentialError;
  if (!principal) throw new AppError('unauthenticated', 'authentication required');
  if (principal.kind === 'dsn') {
    if (access === 'member+dsn') return;
    throw new AppError('forbidden', 'a DSN can only write telemetry');
  }
  const needed: Role = access === 'member+dsn' ? 'member' : access;
  if (!hasRole(principal.role, needed)) throw new AppError('forbidden', `this needs the ${needed} role or higher`);
}

const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');
const emptyObject = z.object({});

/** Mounts routes: authorize → validate → call the handler → respond. Errors go to the error middleware. */
export function mountRoutes(router: Router, routes: readonly AnyRoute[]): void {
  for (const route of routes) {
    router[route.method](expressPath(route.path), async (req, res) => {
      const principal = res.locals.principal as Principal | undefined;
      authorize(route.access, principal, res.locals.credentialError as AppError | undefined);
      const params = parseParams(route.params ?? emptyObject, req.params);
      const query = parseQuery(route, req.query);
      const body = route.body ? parseBody(route.body, req) : undefined;
      const result = await route.handler({ params, query, body, principal: principal as MemberPrincipal, req, res });
      // past its deadline the request was answered already (deadline_exceeded)
      if (res.headersSent) return;
      const status = route.status ?? 200;
      if (status === 204) res.status(204).end();
      else res.status(status).json(result);
    });
  }
}

/** The same routes, each also documenting `errors` (an answer a whole group gives, such as a switched-off feature's 501). */
export const withErrors = (routes: readonly AnyRoute[], errors: Record<number, string>): AnyRoute[] => routes.map((route) => ({ ...route, errors: { ...route.errors, ...errors } }));

/** The list envelope of CONTRACT.md: a page of items and the cursor of the next one. */
export const listOf = <T extends ZodType>(item: T) => z.object({ data: z.array(item), next_cursor: z.string().nullable() });
