import type { Request, RequestHandler, Response } from 'express';
import type { Config } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import { resolveSession } from '../../shared/features/accounts/service.js';
import { resolveApiKey } from '../../shared/features/api-keys/service.js';
import { resolveDsn } from '../../shared/features/projects/service.js';
import type { Principal } from '../../shared/principal.js';

export const SESSION_COOKIE = 'slk_session';

async function resolvePrincipal(req: Request, config: Config): Promise<Principal | undefined> {
  const authorization = req.get('authorization');
  if (authorization) {
    const [scheme = '', value = ''] = authorization.trim().split(/\s+/, 2);
    if (/^bearer$/i.test(scheme)) {
      const key = await resolveApiKey(value);
      if (!key) throw new AppError('unauthenticated', 'API key is invalid or revoked');
      return { kind: 'api_key', ...key };
    }
    if (/^dsn$/i.test(scheme)) {
      const dsn = await resolveDsn(value);
      if (!dsn) throw new AppError('unauthenticated', 'DSN is invalid or revoked');
      return { kind: 'dsn', ...dsn };
    }
    throw new AppError('unauthenticated', 'Authorization must be "Bearer <API key>" or "DSN <public key>"');
  }
  const token: unknown = req.cookies?.[SESSION_COOKIE];
  if (typeof token === 'string' && token) {
    // A cookie rides along on cross-site requests; only the dashboard's origin may use it.
    if (req.get('origin') !== config.DASHBOARD_ORIGIN) {
      throw new AppError('origin_rejected', 'cookie-authenticated requests must come from the dashboard origin');
    }
    const session = await resolveSession(token);
    if (!session) throw new AppError('unauthenticated', 'session expired or signed out');
    return { kind: 'session', ...session };
  }
  return undefined;
}

/**
 * Resolves the caller's credential once per request. A bad credential is kept, not thrown, so that a
 * route open to everyone (login, register) still works for a browser holding a stale cookie.
 */
export function authenticate(config: Config): RequestHandler {
  return async (req, res, next) => {
    try {
      res.locals.principal = await resolvePrincipal(req, config);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      res.locals.credentialError = error;
    }
    next();
  };
}

/**
 * The rate-limit identity of a request: its verified credential, else its address. Keying on an
 * unverified header would give every made-up credential a fresh budget.
 */
export function rateLimitIdentity(req: Request, res: Response): string {
  const principal = res.locals.principal as Principal | undefined;
  if (!principal) return `ip:${req.ip}`;
  switch (principal.kind) {
    case 'session':
      return `session:${principal.sessionId.toHexString()}`;
    case 'api_key':
    case 'dsn':
      return `${principal.kind}:${principal.keyId.toHexString()}`;
  }
}

/**
 * The organisation whose shared request budget a request spends: that of its session or API key. A
 * DSN is public (it sits in every page of the customer's site) and keeps to its own limit, so no
 * stranger holding it can spend the organisation's budget and lock its members out.
 */
export function rateLimitOrganisation(_req: Request, res: Response): string | undefined {
  const principal = res.locals.principal as Principal | undefined;
  return principal && principal.kind !== 'dsn' ? `org:${principal.orgId.toHexString()}` : undefined;
}
