import { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

/**
 * `queue`: BullMQ connections, which wait out outages (commands queue while offline).
 * `fast`: rate-limit counters, caches and readiness, which must fail at once while Redis is down
 * so callers fall back instead of hanging.
 */
export type RedisPurpose = 'queue' | 'fast';

export function createRedis(url: string, purpose: RedisPurpose, logger: Logger): Redis {
  const client = new Redis(url, {
    lazyConnect: false,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    ...(purpose === 'queue'
      ? { maxRetriesPerRequest: null }
      : // commands issued in one turn of the event loop (a request's limit, a batch's job) share one socket write
        { enableOfflineQueue: false, maxRetriesPerRequest: 0, enableAutoPipelining: true }),
  });
  let lastReport = 0;
  client.on('error', (error) => {
    // A down Redis emits an error per reconnect attempt; one line every 30 s is enough.
    if (Date.now() - lastReport < 30_000) return;
    lastReport = Date.now();
    logger.warn({ err: error, purpose }, 'Redis connection error');
  });
  return client;
}

export async function pingRedis(client: Redis): Promise<void> {
  if (client.status !== 'ready') throw new Error(`connection ${client.status}`);
  await client.ping();
}

/** Quits politely when connected; otherwise stops reconnecting at once, so no retry timer outlives the process's work. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  await client.quit().catch(() => client.disconnect());
}

/**
 * Waits up to `timeoutMs` for the first connection. Serving before it would count rate limits in the
 * in-process fallback first and in Redis afterwards; a Redis still down after the wait is served around.
 */
export async function redisReady(client: Redis, timeoutMs: number): Promise<boolean> {
  if (client.status === 'ready') return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(false), timeoutMs);
    const onReady = () => finish(true);
    function finish(ready: boolean) {
      clearTimeout(timer);
      client.off('ready', onReady);
      resolve(ready);
    }
    client.on('ready', onReady);
  });
}

/**
 * Redis's `maxmemory-policy`, or undefined when the server does not tell (managed services often
 * refuse CONFIG). Anything but `noeviction` lets Redis drop queued batches under memory pressure.
 */
export async function evictionPolicy(client: Redis): Promise<string | undefined> {
  try {
    const answer = (await client.config('GET', 'maxmemory-policy')) as string[];
    return answer[1];
  } catch {
    return undefined;
  }
}
