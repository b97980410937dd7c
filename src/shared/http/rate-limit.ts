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

/** What the routes use of a limiter. */
export type Limiter = Pick<RateLimiterAbstract, 'consume' | 'reward' | 'delete' | 'points' | 'duration'>;

/** The points of one key's window that this process took from the shared counter and has not used yet. */
interface Share {
  left: number;
  /** When the shared window the share was taken in ends (ms since the epoch). */
  until: number;
  /** What the shared counter had left once the share was taken. */
  remaining: number;
  /** A share being taken: the key's other requests wait for it rather than take one each. */
  taking?: Promise<boolean> | undefined;
}

/** Keys with a share held at most, before expired shares are dropped. */
const SHARES_KEPT = 10_000;

/**
 * A limiter that takes its points from a shared one (in Redis) a share at a time: one round trip per
 * `share` requests of a key rather than per request, the rest counted in this process. A share the
 * window ends before this process has used is lost to that window, so with n processes a key may be
 * refused up to n × (share − 1) points early, never admitted past the limit. Near the limit (less
 * than a share left in the window) it asks the shared counter for what is left, down to a point at a time.
 */
export class SharedLimiter implements Limiter {
  private readonly shares = new Map<string, Share>();

  constructor(
    private readonly shared: Limiter,
    private readonly share: number,
  ) {}

  get points() {
    return this.shared.points;
  }

  get duration() {
    return this.shared.duration;
  }

  async consume(key: string | number, points = 1): Promise<RateLimiterRes> {
    const id = String(key);
    for (;;) {
      const now = Date.now();
      const held = this.shares.get(id);
      const current = held && held.until > now ? held : undefined;
      if (current?.taking) {
        await current.taking;
        continue;
      }
      if (current && current.left >= points) {
        current.left -= points;
        return new RateLimiterRes(current.remaining + current.left, current.until - now, this.shared.points - current.remaining - current.left, false);
      }
      const ask = Math.min(this.share, current ? current.remaining : this.share);
      if (points !== 1 || ask <= 1) return this.shared.consume(key, points);
      const share: Share = { left: 0, until: Infinity, remaining: 0 };
      this.shares.set(id, share);
      this.dropExpired(now);
      share.taking = this.take(id, ask, share);
      const taken = await share.taking;
      share.taking = undefined;
      if (!taken) {
        // refused (less than a share left: `remaining` says how much) or not answered: asked alone
        if (share.until === Infinity) this.shares.delete(id);
        return this.shared.consume(key, 1);
      }
      // the share's first point is this request's
      share.left -= 1;
      return new RateLimiterRes(share.remaining + share.left, share.until - Date.now(), this.shared.points - share.remaining - share.left, false);
    }
  }

  /**
   * Takes `ask` points of the shared window into `share`; answers whether it got them. A share
   * refused (the window has less than that left) is given back, and `share` notes what was left.
   */
  private async take(id: string, ask: number, share: Share): Promise<boolean> {
    try {
      const taken = await this.shared.consume(id, ask);
      Object.assign(share, { left: ask, until: Date.now() + taken.msBeforeNext, remaining: taken.remainingPoints });
      return true;
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) return false;
      // a refused consume still counted its points
      await this.shared.reward(id, ask).catch(() => undefined);
      Object.assign(share, { until: Date.now() + refusal.msBeforeNext, remaining: Math.max(0, this.shared.points - (refusal.consumedPoints - ask)) });
      return false;
    }
  }

  reward(key: string | number, points = 1) {
    return this.shared.reward(key, points);
  }

  delete(key: string | number) {
    this.shares.delete(String(key));
    return this.shared.delete(key);
  }

  private dropExpired(now: number): void {
    if (this.shares.size < SHARES_KEPT) return;
    for (const [id, share] of this.shares) if (share.until <= now) this.shares.delete(id);
  }
}

/** A share is a hundredth of the limit, at most 100 points: limits under 200 are counted exactly. */
const shareOf = (points: number) => Math.min(100, Math.max(1, Math.floor(points / 100)));

/**
 * A limiter for a hot path (ingest, thousands of requests a second per key): counted in Redis like
 * createLimiter's, a share at a time (see SharedLimiter).
 */
export const createSharedLimiter = (redis: Redis, prefix: string, name: string, points: number, duration: number): Limiter =>
  new SharedLimiter(createLimiter(redis, prefix, name, points, duration), shareOf(points));

function limitHeaders(limiter: Limiter, result: RateLimiterRes): Record<string, string> {
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
  limiter: Limiter,
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

export const resetLimit = (limiter: Limiter, key: string) => limiter.delete(sha256(key));

/** Gives back the point `consumeLimit` took for `key`, for a request that turned out to be one the limit does not count. */
export const refundLimit = (limiter: Limiter, key: string) => limiter.reward(sha256(key), 1);
