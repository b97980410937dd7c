import { Redis } from 'ioredis';

/** Deletes the keys matching `pattern`, a SCAN page at a time. */
export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/**
 * Deletes the keys under `prefix` in the Redis at `url`, for a test whose service processes have
 * stopped. A Redis that does not answer within a second (a test's own server, stopped) has nothing
 * left to delete.
 */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
  } catch {
    redis.disconnect();
    return;
  }
  try {
    await deleteKeys(redis, `${prefix}:*`);
  } finally {
    await redis.quit();
  }
}
