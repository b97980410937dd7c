import type { Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config } from '../../shared/config.js';
import { AppError } from '../../shared/errors.js';
import { sha256 } from '../../shared/secrets.js';

export interface RateLimits {
  /** Per address and email: guessing one account's password. */
  login: RateLimiterAbstract;
  /** Per address: trying one password against many accounts. */
  loginAddress: RateLimiterAbstract;
  register: RateLimiterAbstract;
  api: RateLimiterAbstract;
}

/**
 * Counters live in Redis so every instance shares them; when Redis cannot answer, each process falls
 * back to an in-memory limiter with the same rule (the insurance limiter), so limiting never stops.
 */
function limiter(redis: Redis, prefix: string, name: string, points: number, duration: number): RateLimiterAbstract {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${prefix}:rl:${name}`,
    points,
    duration,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix: `rl:${name}`, points, duration }),
  });
}

export function createRateLimits(config: Config, redis: Redis): RateLimits {
  const prefix = config.REDIS_PREFIX;
  return {
    login: limiter(redis, prefix, 'login', config.RATE_LIMIT_LOGIN, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    loginAddress: limiter(redis, prefix, 'login-ip', config.RATE_LIMIT_LOGIN_ADDRESS, config.RATE_LIMIT_LOGIN_WINDOW_SECONDS),
    register: limiter(redis, prefix, 'register', config.RATE_LIMIT_REGISTER, config.RATE_LIMIT_REGISTER_WINDOW_SECONDS),
    api: limiter(redis, prefix, 'api', config.RATE_LIMIT_API, config.RATE_LIMIT_API_WINDOW_SECONDS),
  };
}

function limitHeaders(limiter: RateLimiterAbstract, result: RateLimiterRes): Record<string, string> {
  return {
    'RateLimit-Limit': String(limiter.points),
    'RateLimit-Remaining': String(Math.max(0, result.remainingPoints)),
    'RateLimit-Reset': String(Math.ceil(result.msBeforeNext / 1000)),
    'RateLimit-Policy': `${limiter.points};w=${limiter.duration}`,
  };
}

/** Takes one point for `key` (hashed: keys may carry credentials); over the limit throws `rate_limited`. */
export async function consumeLimit(limiter: RateLimiterAbstract, key: string, res: Response): Promise<void> {
  try {
    const result = await limiter.consume(sha256(key));
    res.set(limitHeaders(limiter, result));
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const headers = { ...limitHeaders(limiter, rejection), 'Retry-After': String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000))) };
    throw new AppError('rate_limited', 'too many requests; retry later', { headers });
  }
}

export const resetLimit = (limiter: RateLimiterAbstract, key: string) => limiter.delete(sha256(key));

export const rateLimitBy =
  (limiter: RateLimiterAbstract, keyOf: (req: Request, res: Response) => string): RequestHandler =>
  async (req, res, next) => {
    await consumeLimit(limiter, keyOf(req, res), res);
    next();
  };
