import type { Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.js';
import { consumeLimit, createLimiter } from '../../shared/http/rate-limit.js';

export interface RateLimits {
  /** Per address and email: guessing one account's password. */
  login: RateLimiterAbstract;
  /** Per address: trying one password against many accounts. */
  loginAddress: RateLimiterAbstract;
  register: RateLimiterAbstract;
  api: RateLimiterAbstract;
  /** Per check-in token: a looping script, not a schedule. */
  checkin: RateLimiterAbstract;
}

export function createRateLimits(config: Config, redis: Redis): RateLimits {
  const prefix = config.REDIS_PREFIX;
  return {
    login: createLimiter(redis, prefix, 'login', config.RATE_LIMIT_LOGIN, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    loginAddress: createLimiter(redis, prefix, 'login-ip', config.RATE_LIMIT_LOGIN_ADDRESS, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    register: createLimiter(redis, prefix, 'register', config.RATE_LIMIT_REGISTER, config.RATE_LIMIT_REGISTER_WINDOW_SECONDS),
    api: createLimiter(redis, prefix, 'api', config.RATE_LIMIT_API, config.RATE_LIMIT_API_WINDOW_SECONDS),
    checkin: createLimiter(redis, prefix, 'checkin', config.CHECKIN_RATE_LIMIT_PER_MINUTE, 60),
  };
}

export const rateLimitBy =
  (limiter: RateLimiterAbstract, keyOf: (req: Request, res: Response) => string): RequestHandler =>
  async (req, res, next) => {
    await consumeLimit(limiter, keyOf(req, res), res);
    next();
  };
