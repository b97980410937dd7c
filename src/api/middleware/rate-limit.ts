import type { Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.js';
import { requestContext } from '../../shared/context.js';
import { consumeLimit, createLimiter } from '../../shared/http/rate-limit.js';

export interface RateLimits {
  /** Per address and email: guessing one account's password. */
  login: RateLimiterAbstract;
  /** Per address: trying one password against many accounts. */
  loginAddress: RateLimiterAbstract;
  register: RateLimiterAbstract;
  /** Per email address: reset mails to one inbox. */
  passwordReset: RateLimiterAbstract;
  api: RateLimiterAbstract;
  /** Per organisation: all its sessions and API keys together, so more keys buy no more requests. */
  org: RateLimiterAbstract;
  /** Per check-in token: a looping script, not a schedule. */
  checkin: RateLimiterAbstract;
}

export function createRateLimits(config: Config, redis: Redis): RateLimits {
  const prefix = config.REDIS_PREFIX;
  return {
    login: createLimiter(redis, prefix, 'login', config.RATE_LIMIT_LOGIN, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    loginAddress: createLimiter(redis, prefix, 'login-ip', config.RATE_LIMIT_LOGIN_ADDRESS, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    register: createLimiter(redis, prefix, 'register', config.RATE_LIMIT_REGISTER, config.RATE_LIMIT_REGISTER_WINDOW_SECONDS),
    passwordReset: createLimiter(redis, prefix, 'password-reset', config.RATE_LIMIT_PASSWORD_RESET, config.RATE_LIMIT_PASSWORD_RESET_WINDOW_SECONDS),
    api: createLimiter(redis, prefix, 'api', config.RATE_LIMIT_API, config.RATE_LIMIT_API_WINDOW_SECONDS),
    org: createLimiter(redis, prefix, 'api-org', config.RATE_LIMIT_ORG, config.RATE_LIMIT_API_WINDOW_SECONDS),
    checkin: createLimiter(redis, prefix, 'checkin', config.CHECKIN_RATE_LIMIT_PER_MINUTE, 60),
  };
}

const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'];

/** Runs `consume` leaving the RateLimit-* headers already on the answer as they were; a refusal still answers its own. */
async function keepingHeaders(res: Response, consume: () => Promise<void>): Promise<void> {
  const kept = RATE_LIMIT_HEADERS.map((name) => [name, res.get(name)] as const);
  await consume();
  for (const [name, value] of kept) {
    if (value === undefined) res.removeHeader(name);
    else res.set(name, value);
  }
}

/**
 * Charges each request to `limiter` under the key `keyOf` gives (undefined: this limit does not count
 * the request). `outer`: a second, wider limit on the same requests, whose headers are answered only
 * when it refuses, so that otherwise they describe the more specific limit before it.
 */
export const rateLimitBy =
  (limiter: RateLimiterAbstract, keyOf: (req: Request, res: Response) => string | undefined, { outer = false } = {}): RequestHandler =>
  async (req, res, next) => {
    const key = keyOf(req, res);
    if (key === undefined) return next();
    const consume = (points: number) => (outer ? keepingHeaders(res, () => consumeLimit(limiter, key, res, undefined, points)) : consumeLimit(limiter, key, res, undefined, points));
    await consume(1);
    // what the request's work costs beyond its first point is charged when the work is known (chargeWork)
    const context = requestContext.getStore();
    if (context) (context.chargers ??= []).push(consume);
    next();
  };
