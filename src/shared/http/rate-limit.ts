import type { ServerResponse } from 'node:http';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../errors.js';
import { sha256 } from '../secrets.js';

/**
 * Counters live in Redis so every instance shares them; when Redis cannot answer, each process falls
 * back to an in-memory limiter with the same rule (the insurance limiter), so limiting never stops.
 */
export function createLimiter(redis: Redis, prefix: string, name: string, points: number, duration: number): RateLimiterAbstract {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${prefix}:rl:${name}`,
    points,
    duration,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix: `rl:${name}`, points, duration }),
  });
}

function limitHeaders(limiter: RateLimiterAbstract, result: RateLimiterRes): Record<string, string> {
  return {
    'RateLimit-Limit': String(limiter.points),
    'RateLimit-Remaining': String(Math.max(0, result.remainingPoints)),
    'RateLimit-Reset': String(Math.ceil(result.msBeforeNext / 1000)),
    'RateLimit-Policy': `${limiter.points};w=${limiter.duration}`,
  };
}

/**
 * Takes `points` (one unless the request's work costs more) for `key` (hashed: keys may carry credentials);
 * over the limit throws `rate_limited` with Retry-After, plus whatever `refusalHeaders` adds for the
 * protocol (Sentry's X-Sentry-Rate-Limits).
 */
export async function consumeLimit(
  limiter: RateLimiterAbstract,
  key: string,
  res: Pick<ServerResponse, 'setHeader'>,
  refusalHeaders: (retryAfterSeconds: number) => Record<string, string> = () => ({}),
  points = 1,
): Promise<void> {
  try {
    const result = await limiter.consume(sha256(key), points);
    for (const [name, value] of Object.entries(limitHeaders(limiter, result))) res.setHeader(name, value);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    const headers = { ...limitHeaders(limiter, rejection), 'Retry-After': String(retryAfter), ...refusalHeaders(retryAfter) };
    throw new AppError('rate_limited', 'too many requests; retry later', { headers });
  }
}

export const resetLimit = (limiter: RateLimiterAbstract, key: string) => limiter.delete(sha256(key));

/** Gives back the point `consumeLimit` took for `key`, for a request that turned out to be one the limit does not count. */
export const refundLimit = (limiter: RateLimiterAbstract, key: string) => limiter.reward(sha256(key), 1);
