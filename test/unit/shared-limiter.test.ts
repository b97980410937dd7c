import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { SharedLimiter } from '../../src/shared/http/rate-limit.js';

/** The shared counter two ingest processes would both take from (in Redis in production), counting what it is asked. */
class SharedCounter extends RateLimiterMemory {
  asked = 0;

  override consume(key: string | number, points?: number, options?: Record<string, unknown>) {
    this.asked++;
    return super.consume(key, points, options);
  }
}

/** Consumes one point at a time from `processes` in turn until one is refused; answers how many were admitted. */
async function admittedUntilRefused(processes: SharedLimiter[], key: string): Promise<{ admitted: number; refusal: RateLimiterRes }> {
  for (let admitted = 0; ; admitted++) {
    try {
      await processes[admitted % processes.length]!.consume(key);
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      return { admitted, refusal };
    }
  }
}

test('two processes taking shares of 10 from a limit of 1,000 admit at most 1,000, ask the shared counter about a tenth as often, and refuse with the window left', async () => {
  const counter = new SharedCounter({ points: 1000, duration: 60 });
  const processes = [new SharedLimiter(counter, 10), new SharedLimiter(counter, 10)];
  const { admitted, refusal } = await admittedUntilRefused(processes, 'dsn');
  expect(admitted).toBeLessThanOrEqual(1000);
  // each process may hold at most a share minus one unused when the other is refused
  expect(admitted).toBeGreaterThanOrEqual(1000 - 2 * 9);
  expect(counter.asked).toBeLessThan(200);
  expect(refusal.msBeforeNext).toBeGreaterThan(0);
  expect(refusal.msBeforeNext).toBeLessThanOrEqual(60_000);
  // refused again at once, each request's point asked alone now that less than a share is left
  await expect(processes[0]!.consume('dsn')).rejects.toBeInstanceOf(RateLimiterRes);
  await expect(processes[1]!.consume('dsn')).rejects.toBeInstanceOf(RateLimiterRes);
});

test('with a share of one point, a limit is counted exactly across processes', async () => {
  const counter = new SharedCounter({ points: 150, duration: 60 });
  const processes = [new SharedLimiter(counter, 1), new SharedLimiter(counter, 1)];
  expect((await admittedUntilRefused(processes, 'dsn')).admitted).toBe(150);
  expect(counter.asked).toBe(151);
});

test('near the limit the last points are taken in a share of what is left rather than lost to one that does not fit', async () => {
  const counter = new SharedCounter({ points: 25, duration: 60 });
  const limiter = new SharedLimiter(counter, 10);
  // two shares of 10, then one of the 5 the second left
  expect((await admittedUntilRefused([limiter], 'dsn')).admitted).toBe(25);
});

test('a share refused because another process took the rest of the window is given back, and every point is still admitted', async () => {
  const counter = new SharedCounter({ points: 25, duration: 60 });
  const [first, second] = [new SharedLimiter(counter, 10), new SharedLimiter(counter, 10)];
  // each takes a share of 10: 5 of the 25 are left
  await first.consume('dsn');
  await second.consume('dsn');
  // the first uses its share, then asks for 10 more: refused, given back, and the last 5 go in smaller asks
  const afterFirst = await admittedUntilRefused([first], 'dsn');
  const afterSecond = await admittedUntilRefused([second], 'dsn');
  expect(2 + afterFirst.admitted + afterSecond.admitted).toBe(25);
  expect(afterFirst.admitted).toBe(14);
});

test('requests arriving together on a key without a share wait for one share rather than each take one', async () => {
  const counter = new SharedCounter({ points: 1000, duration: 60 });
  const limiter = new SharedLimiter(counter, 10);
  const results = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('dsn')));
  expect(counter.asked).toBe(1);
  // what each answer says is left: the shared counter's 990 plus what the share still holds
  expect(results.map((result) => result.remainingPoints).sort((a, b) => b - a)).toEqual([999, 998, 997, 996, 995, 994, 993, 992, 991, 990]);
  await limiter.consume('dsn');
  expect(counter.asked).toBe(2);
});

test('a share ends with its window: the next window takes a new one', async () => {
  const counter = new SharedCounter({ points: 1000, duration: 1 });
  const limiter = new SharedLimiter(counter, 10);
  await limiter.consume('dsn');
  expect(counter.asked).toBe(1);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const result = await limiter.consume('dsn');
  expect(counter.asked).toBe(2);
  expect(result.remainingPoints).toBe(999);
});
