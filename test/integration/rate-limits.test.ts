import { randomBytes } from 'node:crypto';
import { dropTestDatabase, type Harness, startHarness } from '../support/harness.js';
import { createApiKey, PASSWORD, register, signUp, uniqueEmail } from '../support/factories/accounts.js';
import { deletePrefix } from '../support/redis-keys.js';

const harnesses: Harness[] = [];
async function harness(env: Record<string, string>) {
  const h = await startHarness(env);
  harnesses.push(h);
  return h;
}
/** Prefixes given to two harnesses at once, which neither clears for the other. */
const sharedPrefixes: string[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
  for (const prefix of sharedPrefixes) await deletePrefix(process.env.TEST_REDIS_URL!, prefix);
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
    sharedPrefixes.push(prefix);
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

  test('the API keys and sessions of one organisation share its budget: two keys together hit it where each alone would not', async () => {
    const h = await harness({ RATE_LIMIT_API: '5', RATE_LIMIT_ORG: '8' });
    const owner = await signUp(h);
    const [first, second] = [await createApiKey(owner), await createApiKey(owner)];
    const statuses: number[] = [];
    // each key stays under its own 5; the session's two requests above (the keys) and these share the 8
    for (const key of [first, second, first, second, first, second]) statuses.push((await h.api.with({ bearer: key.secret }).get('/v1/projects')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    const limited = await h.api.with({ bearer: second.secret }).get('/v1/projects');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ code: 'rate_limited', message: expect.any(String), request_id: expect.any(String) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit-limit')).toBe('8');
    expect(limited.headers.get('ratelimit-remaining')).toBe('0');
    expect(limited.headers.get('ratelimit-policy')).toBe('8;w=60');
    // the session is refused too, though it made two requests of its five
    expect((await owner.client.get('/v1/me')).status).toBe(429);
    // another organisation has a budget of its own
    const other = await signUp(h);
    const allowed = await other.client.get('/v1/me');
    expect(allowed.status).toBe(200);
    // under both limits the answer describes the credential's own
    expect(allowed.headers.get('ratelimit-limit')).toBe('5');
  });

  test('made-up credentials share their address’s budget instead of getting one each', async () => {
    const h = await harness({ RATE_LIMIT_API: '3' });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await h.api.with({ bearer: `slk_made_up_${i}` }).get('/v1/projects')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  test('a request pays for its work: a point per widget a dashboard resolves, a point per started 7 days of a view’s window', async () => {
    const h = await harness({ RATE_LIMIT_API: '25' });
    const owner = await signUp(h);
    const reader = async (name: string) => h.api.with({ bearer: (await owner.client.post('/v1/api-keys', { name })).body.secret as string });
    const tile = (i: number) => ({ title: `alerts ${i}`, type: 'list', query: { view: 'alerts', params: {} }, layout: { x: i % 12, y: Math.floor(i / 12), w: 1, h: 1 } });
    const wall = (await owner.client.post('/v1/dashboards', { name: 'wall', widgets: Array.from({ length: 50 }, (_, i) => tile(i)) })).body.id as string;
    const single = (await owner.client.post('/v1/dashboards', { name: 'one tile', widgets: [tile(0)] })).body.id as string;

    // 50 widgets resolved (12 of them per request) cost 1 + 12 points: a second one is over the budget of 25
    const wallReader = await reader('wall reader');
    const first = await wallReader.get(`/v1/dashboards/${wall}?resolve=true`);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-remaining')).toBe(String(25 - 13));
    const second = await wallReader.get(`/v1/dashboards/${wall}?resolve=true`);
    expect(second.status).toBe(429);
    expect(second.body).toEqual({ code: 'rate_limited', message: expect.any(String), request_id: expect.any(String) });
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(second.headers.get('ratelimit-limit')).toBe('25');
    expect(second.headers.get('ratelimit-remaining')).toBe('0');

    // the same budget holds a dozen one-widget dashboards resolved (2 points each)
    const tileReader = await reader('tile reader');
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await tileReader.get(`/v1/dashboards/${single}?resolve=true`)).status);
    expect(statuses).toEqual(Array(12).fill(200));

    // a view: 1 point up to 7 days of window, 2 for 8 days; 366 days cost 53, more than the whole budget
    const viewer = await reader('viewer');
    const now = Date.now();
    const services = (days: number) => viewer.get(`/v1/services?from=${now - days * 86_400_000}&to=${now}`);
    expect((await services(7)).headers.get('ratelimit-remaining')).toBe('24');
    expect((await services(8)).headers.get('ratelimit-remaining')).toBe('22');
    const year = await services(366);
    expect(year.status).toBe(429);
    expect(year.body.code).toBe('rate_limited');
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
