import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import {
  accountJson,
  loginBody,
  passwordChangeBody,
  passwordResetBody,
  passwordResetRequestBody,
  registerBody,
  tokenParams,
} from '../../shared/features/accounts/schemas.js';
import { changePassword, login, logout, logoutEverywhere, me, register, requestPasswordReset, resetPassword } from '../../shared/features/accounts/service.js';
import type { ApiDeps } from '../deps.js';
import { SESSION_COOKIE } from '../middleware/authenticate.js';
import { consumeLimit, resetLimit } from '../../shared/http/rate-limit.js';
import { defineRoute } from '../routing.js';

const RESET_OFF = 'password reset needs email: SMTP_URL is not set';

export function accountRoutes({ config, limits, mailer }: ApiDeps) {
  const cookieOptions = { httpOnly: true, sameSite: 'lax', path: '/', secure: config.secureCookies } as const;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/auth/register',
      tag: 'Account',
      summary:
        'Create an account and a new organization; with an invite_token, join the inviting organization with the invited role instead (an address that has an account joins with it, given its password). Returns no session.',
      access: 'public',
      body: registerBody,
      status: 201,
      response: accountJson,
      errors: { 401: 'invalid_credentials: with an invite_token, the address has an account and the password is not its password', 404: 'not_found: the invite_token is unknown, used, expired, withdrawn or for another address' },
      handler: async ({ body, req, res }) => {
        await consumeLimit(limits.register, `ip:${req.ip}`, res);
        return register(body, config);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/login',
      tag: 'Account',
      summary: 'Exchange email and password for the slk_session cookie, in the organization the account joined last.',
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
      method: 'post',
      path: '/v1/auth/logout-all',
      tag: 'Account',
      summary: "Sign out everywhere: every session of the signed-in user ends, this one included (session only).",
      access: 'member',
      status: 204,
      errors: { 403: 'forbidden: called with an API key' },
      handler: async ({ principal, req, res }) => {
        await logoutEverywhere(principal, req.ip);
        res.clearCookie(SESSION_COOKIE, cookieOptions);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password',
      tag: 'Account',
      summary: "Change the signed-in user's password (session only). Every other session of the user ends; this one stays.",
      access: 'member',
      body: passwordChangeBody,
      status: 204,
      errors: { 401: 'invalid_credentials: current_password is wrong', 403: 'forbidden: called with an API key' },
      handler: async ({ principal, body, req, res }) => {
        // guessing the current password with a stolen session is limited like guessing it at login
        const limitKey = `password:${principal.userId.toHexString()}`;
        await consumeLimit(limits.login, limitKey, res);
        await changePassword(principal, body, config, req.ip);
        await resetLimit(limits.login, limitKey);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password-reset',
      tag: 'Account',
      summary:
        'Mail a single-use password-reset link (valid 1 hour) to the address, if it has an account. Always 202, whatever the address.',
      access: 'public',
      body: passwordResetRequestBody,
      status: 202,
      response: z.object({ message: z.string() }),
      errors: { 501: `email_unavailable: ${RESET_OFF}` },
      handler: async ({ body, req, res }) => {
        if (!mailer) throw new AppError('email_unavailable', RESET_OFF);
        await consumeLimit(limits.loginAddress, `ip:${req.ip}`, res);
        await consumeLimit(limits.passwordReset, `email:${body.email}`, res);
        // the answer waits for neither the account look-up nor the mail, so neither its content nor its timing says whether the address has an account
        void requestPasswordReset(body.email, mailer, config).catch((error: unknown) => req.log.warn({ err: error }, 'password reset mail not sent'));
        return { message: 'if an account has that address, a reset link is on its way' };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/auth/password-reset/{token}',
      tag: 'Account',
      summary: "Set a new password with a mailed reset link's token; the token is used up and every session of the account ends.",
      access: 'public',
      params: tokenParams,
      body: passwordResetBody,
      status: 204,
      errors: { 404: 'not_found: unknown, used or expired token' },
      handler: ({ params, body, req }) => resetPassword(params.token, body.password, config, req.ip),
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
