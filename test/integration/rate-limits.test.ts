import { randomBytes } from 'node:crypto';
import { dropTestDatabase, type Harness, startHarness } from '../support/harness.js';
import { PASSWORD, register, signUp, uniqueEmail } from '../support/factories/accounts.js';

const harnesses: Harness[] = [];
async function harness(env: Record<string, string>) {
  const h = await startHarness(env);
  harnesses.push(h);
  return h;
}
afterAll(async () => {
  for (const h of harnesses) await h.close();
  await dropTestDatabase();
});

describe('rate limits', () => {
  test('login is limited per IP and email, with Retry-After and RateLimit-* headers; other emails are unaffected', async () => {
    const h = await harness({ RATE_LIMIT_LOGIN: '3' });
    const email = uniqueEmail();
    await register(h, email);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await h.api.post('/v1/auth/login', { email, password: 'wrong password' })).status);
    expect(statuses).toEqual([401, 401, 401]);
    const limited = await h.api.post('/v1/auth/login', { email, password: PASSWORD });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ code: 'rate_limited', message: expect.any(String), request_id: expect.any(String) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit-limit')).toBe('3');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('ratelimit-reset'))).toBeGreaterThan(0);

    const other = uniqueEmail();
    await register(h, other);
    expect((await h.api.post('/v1/auth/login', { email: other, password: PASSWORD })).status).toBe(200);
  });

  test('a successful login clears the failures counted against it', async () => {
    const h = await harness({ RATE_LIMIT_LOGIN: '3' });
    const email = uniqueEmail();
    await register(h, email);
    for (let round = 0; round < 3; round++) {
      expect((await h.api.post('/v1/auth/login', { email, password: 'wrong password' })).status).toBe(401);
      expect((await h.api.post('/v1/auth/login', { email, password: 'wrong password' })).status).toBe(401);
      expect((await h.api.post('/v1/auth/login', { email, password: PASSWORD })).status).toBe(200);
    }
  });

  test('API requests are limited per credential, and the counters are shared by every instance through Redis', async () => {
    const prefix = `slk_test_${randomBytes(6).toString('hex')}`;
    const first = await harness({ RATE_LIMIT_API: '6', REDIS_PREFIX: prefix });
    const second = await harness({ RATE_LIMIT_API: '6', REDIS_PREFIX: prefix });
    const owner = await signUp(first);
    const key = (await owner.client.post('/v1/api-keys', { name: 'busy' })).body.secret as string;
    const statuses: number[] = [];
    for (const h of [first, second, first, second, first, second]) statuses.push((await h.api.with({ bearer: key }).get('/v1/projects')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    const limited = await second.api.with({ bearer: key }).get('/v1/projects');
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
    // Another credential has its own budget.
    expect((await first.api.with({ cookie: owner.cookie, origin: owner.client.options.origin! }).get('/v1/me')).status).toBe(200);
  });

  test('made-up credentials share their address’s budget instead of getting one each', async () => {
    const h = await harness({ RATE_LIMIT_API: '3' });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.api.with({ bearer: `slk_made_up_${i}` }).get('/v1/projects')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  test('login is also limited per address across many emails', async () => {
    const h = await harness({ RATE_LIMIT_LOGIN_ADDRESS: '3' });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.api.post('/v1/auth/login', { email: uniqueEmail(), password: 'one guess' })).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  test('register is limited per IP', async () => {
    const h = await harness({ RATE_LIMIT_REGISTER: '2' });
    expect((await h.api.post('/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).status).toBe(201);
    expect((await h.api.post('/v1/auth/register', { email: uniqueEmail(), password: PASSWORD })).status).toBe(201);
    const limited = await h.api.post('/v1/auth/register', { email: uniqueEmail(), password: PASSWORD });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
  });
});

describe('with Redis unreachable', () => {
  let h: Harness;
  beforeAll(async () => {
    // Port 1 on loopback refuses connections: every Redis command fails at once.
    h = await harness({ REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_LOGIN: '2' });
  });

  test('routes that do not need Redis keep working', async () => {
    const owner = await signUp(h);
    const project = await owner.client.post('/v1/projects', { name: 'still works' });
    expect(project.status).toBe(201);
    expect((await owner.client.get(`/v1/projects/${project.body.id}/dsns`)).status).toBe(200);
  });

  test('the in-process fallback limiter still limits', async () => {
    const email = uniqueEmail();
    await register(h, email);
    expect((await h.api.post('/v1/auth/login', { email, password: 'wrong password' })).status).toBe(401);
    expect((await h.api.post('/v1/auth/login', { email, password: 'wrong password' })).status).toBe(401);
    const limited = await h.api.post('/v1/auth/login', { email, password: PASSWORD });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).not.toBeNull();
  });

  test('the API /readyz reports Redis down with 503 not_ready while /healthz stays up; ingest, spooling to disk, stays ready', async () => {
    const ready = await h.api.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ code: 'not_ready', checks: expect.arrayContaining([{ name: 'mongo', status: 'ok' }, expect.objectContaining({ name: 'redis', status: 'down' })]) });
    expect((await h.api.get('/healthz')).body).toEqual({ status: 'ok' });
    const ingest = await h.ingest.get('/readyz');
    expect(ingest.status).toBe(200);
    expect(ingest.body.checks).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'redis', status: 'down', required: false }), expect.objectContaining({ name: 'spool', status: 'ok' })]));
  });
});
