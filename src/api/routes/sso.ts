import type { RequestHandler } from 'express';
import { z } from 'zod';
import type { DnsClient } from '../../shared/clients/dns.js';
import type { OidcClient } from '../../shared/clients/oidc.js';
import type { Config } from '../../shared/config.js';
import { AppError, notFound } from '../../shared/errors.js';
import { normalizeDomain } from '../../shared/features/sso/domains.js';
import { callbackJson, callbackQuery, connectionJson, domainBody, domainJson, putConnectionBody, startBody, startJson } from '../../shared/features/sso/schemas.js';
import {
  claimDomain,
  completeLogin,
  deleteConnection,
  deleteDomain,
  getConnection,
  listDomains,
  LOGIN_STATE_TTL_MS,
  putConnection,
  redirectUriOf,
  startLogin,
  verifyDomain,
  type SsoDeps,
} from '../../shared/features/sso/service.js';
import type { ApiDeps } from '../deps.js';
import { SESSION_COOKIE } from '../middleware/authenticate.js';
import { defineRoute, listOf, withErrors } from '../routing.js';

/** The path prefixes of every single sign-on route. */
export const SSO_PATHS = ['/v1/settings/sso', '/v1/auth/sso'];

/** Binds a login in flight to the browser that started it; sent only to the callback. */
const LOGIN_COOKIE = 'slk_sso_login';

const OFF = 'single sign-on is off on this server: set API_PUBLIC_URL to switch it on';

/**
 * Mounted before authentication: without API_PUBLIC_URL single sign-on is off, and every SSO route
 * says so (501), whatever credential the request carries or lacks.
 */
export function ssoGate(config: Pick<Config, 'API_PUBLIC_URL'>): RequestHandler {
  return (_req, _res, next) => {
    if (!config.API_PUBLIC_URL) throw new AppError('sso_unavailable', OFF);
    next();
  };
}

const domainParams = z.object({ domain: z.string() });
/** A browser (rather than a script) is sent back to the dashboard's login page with the reason. */
const wantsHtml = (accept: string | undefined) => /\btext\/html\b/i.test(accept ?? '');

export function ssoRoutes(deps: ApiDeps, clients: { oidc: OidcClient; dns: DnsClient }) {
  const { config } = deps;
  const sso: SsoDeps = { config, secrets: deps.secrets, oidc: clients.oidc, dns: clients.dns };
  const cookieOptions = { httpOnly: true, sameSite: 'lax', path: '/', secure: config.secureCookies } as const;
  const dashboard = config.DASHBOARD_ORIGIN.replace(/\/+$/, '');
  // only reached with API_PUBLIC_URL set (ssoGate answers 501 before)
  const loginCookieOptions = () => ({ ...cookieOptions, path: new URL(redirectUriOf(config)).pathname });
  return withErrors([
    defineRoute({
      method: 'get',
      path: '/v1/settings/sso',
      tag: 'Single sign-on',
      summary: "The organization's OpenID Connect connection (the client secret is never shown: `client_secret_set`), with the redirect URI to register at the provider.",
      access: 'admin',
      response: connectionJson,
      handler: ({ principal }) => getConnection(principal.orgId, config),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/settings/sso',
      tag: 'Single sign-on',
      summary: 'Configure the connection: the issuer must answer its discovery document; the client secret is kept encrypted (left out, the stored one is kept).',
      access: 'admin',
      body: putConnectionBody,
      response: connectionJson,
      handler: ({ principal, body, req }) => putConnection(principal, body, sso, req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/settings/sso',
      tag: 'Single sign-on',
      summary: 'Remove the connection and the identities linked through it; claimed domains stay.',
      access: 'admin',
      status: 204,
      handler: ({ principal, req }) => deleteConnection(principal, req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/settings/sso/domains',
      tag: 'Single sign-on',
      summary: 'Claimed email domains, each with its DNS TXT record and whether it is verified.',
      access: 'admin',
      response: listOf(domainJson),
      handler: ({ principal }) => listDomains(principal.orgId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/settings/sso/domains',
      tag: 'Single sign-on',
      summary: 'Claim an email domain: answers the TXT record to publish. Public mail providers are refused; a domain verified by another organization is a conflict.',
      access: 'admin',
      body: domainBody,
      status: 201,
      response: domainJson,
      handler: ({ principal, body, req }) => claimDomain(principal, body.domain, req.ip),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/settings/sso/domains/verify',
      tag: 'Single sign-on',
      summary: 'Prove a claimed domain: its TXT record is looked up; found, the domain is verified (400 when it is not there yet).',
      access: 'admin',
      body: domainBody,
      response: domainJson,
      handler: ({ principal, body, req }) => verifyDomain(principal, body.domain, sso.dns, req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/settings/sso/domains/{domain}',
      tag: 'Single sign-on',
      summary: 'Withdraw a domain claim (and its verification).',
      access: 'admin',
      params: domainParams,
      status: 204,
      handler: ({ principal, params, req }) => {
        const domain = normalizeDomain(params.domain);
        if (!domain) throw notFound('claimed domain');
        return deleteDomain(principal, domain, req.ip);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/sso/start',
      tag: 'Single sign-on',
      summary:
        "Begin an SSO login for an email: answers the identity provider's authorization URL (state, nonce, PKCE) and sets the HttpOnly `slk_sso_login` cookie (Path: the callback, lasting as long as the login may take) that binds the login to this browser; the callback is refused without it. 404 when single sign-on is not set up for the email's domain.",
      access: 'public',
      body: startBody,
      response: startJson,
      handler: async ({ body, res }) => {
        const { authorization_url, browserBinding } = await startLogin(body.email, sso);
        res.cookie(LOGIN_COOKIE, browserBinding, { ...loginCookieOptions(), maxAge: LOGIN_STATE_TTL_MS });
        return { authorization_url };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/auth/sso/callback',
      tag: 'Single sign-on',
      summary:
        'Where the identity provider sends the browser back; it must carry the `slk_sso_login` cookie of the browser that started the login (which it clears). Success: the slk_session cookie and a redirect to the dashboard. Refused: a browser (Accept: text/html) is redirected to the dashboard\'s /login?sso_error=<code>&sso_reason=<reason>; other clients get the error body.',
      access: 'public',
      query: callbackQuery,
      status: 302,
      response: callbackJson,
      handler: async ({ query, req, res }) => {
        // the URL the provider redirected to, as registered (not as proxies rewrote the host)
        const callbackUrl = new URL(redirectUriOf(config));
        callbackUrl.search = new URL(req.originalUrl, 'http://callback.invalid').search;
        const browserBinding: unknown = req.cookies?.[LOGIN_COOKIE];
        res.clearCookie(LOGIN_COOKIE, loginCookieOptions());
        const result = await completeLogin({ state: query.state, browserBinding: typeof browserBinding === 'string' ? browserBinding : undefined, callbackUrl }, sso, req.ip);
        if (result.outcome === 'refused') {
          if (!wantsHtml(req.get('accept'))) throw result.error;
          const target = `${dashboard}/login?${new URLSearchParams({ sso_error: result.error.code, sso_reason: result.reason })}`;
          res.location(target);
          return { redirect_to: target };
        }
        res.cookie(SESSION_COOKIE, result.token, { ...cookieOptions, maxAge: config.SESSION_TTL_HOURS * 3_600_000 });
        res.location(dashboard);
        return { redirect_to: dashboard };
      },
    }),
  ], { 501: `sso_unavailable: ${OFF} (answered before authentication)` });
}
