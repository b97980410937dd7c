import { accountJson, loginBody, registerBody } from '../../shared/features/accounts/schemas.js';
import { login, logout, me, register } from '../../shared/features/accounts/service.js';
import type { ApiDeps } from '../deps.js';
import { SESSION_COOKIE } from '../middleware/authenticate.js';
import { consumeLimit, resetLimit } from '../../shared/http/rate-limit.js';
import { defineRoute } from '../routing.js';

export function accountRoutes({ config, limits }: ApiDeps) {
  const cookieOptions = { httpOnly: true, sameSite: 'lax', path: '/', secure: config.secureCookies } as const;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/auth/register',
      tag: 'Account',
      summary: 'Create an account (and an organization, unless the email was invited). Returns no session.',
      access: 'public',
      body: registerBody,
      status: 201,
      response: accountJson,
      handler: async ({ body, req, res }) => {
        await consumeLimit(limits.register, `ip:${req.ip}`, res);
        return register(body, config);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/login',
      tag: 'Account',
      summary: 'Exchange email and password for the slk_session cookie.',
      access: 'public',
      body: loginBody,
      response: accountJson,
      handler: async ({ body, req, res }) => {
        const limitKey = `${req.ip}:${body.email}`;
        await consumeLimit(limits.loginAddress, `ip:${req.ip}`, res);
        await consumeLimit(limits.login, limitKey, res);
        const { account, token } = await login(body, config, req.ip);
        await resetLimit(limits.login, limitKey);
        res.cookie(SESSION_COOKIE, token, { ...cookieOptions, maxAge: config.SESSION_TTL_HOURS * 3_600_000 });
        return account;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/logout',
      tag: 'Account',
      summary: 'End the current session; its cookie stops working everywhere.',
      access: 'member',
      status: 204,
      handler: async ({ principal, req, res }) => {
        await logout(principal, req.ip);
        res.clearCookie(SESSION_COOKIE, cookieOptions);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/me',
      tag: 'Account',
      summary: 'The signed-in user, their organization and role.',
      access: 'member',
      response: accountJson,
      handler: ({ principal }) => me(principal),
    }),
  ];
}
