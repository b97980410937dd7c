import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';

let h: Harness;
let owner: Account;
useHarness((started) => (h = started));
beforeAll(async () => {
  owner = await signUp(h);
});

const errorBody = (code: string) => ({ code, message: expect.any(String), request_id: expect.any(String) });

describe('CONTRACT.md error bodies', () => {
  test('unknown routes and methods answer JSON 404 with the request id echoed', async () => {
    for (const [method, path] of [['GET', '/v1/nope'], ['DELETE', '/v1/projects'], ['GET', '/elsewhere']] as const) {
      const reply = await h.api.request(method, path, undefined, { 'x-request-id': 'trace-me-123' });
      expect(reply.status).toBe(404);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(reply.body).toEqual({ code: 'not_found', message: expect.any(String), request_id: 'trace-me-123' });
      expect(reply.headers.get('x-request-id')).toBe('trace-me-123');
    }
  });

  test('an unsafe X-Request-Id is replaced, and every response carries one', async () => {
    const reply = await h.api.get('/healthz', { 'x-request-id': 'bad id with spaces' });
    expect(reply.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('no credential → 401 unauthenticated', async () => {
    const reply = await h.api.get('/v1/projects');
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual(errorBody('unauthenticated'));
  });

  test('malformed JSON → 400 invalid_request', async () => {
    const reply = await owner.client.post('/v1/projects', '{"name": ', { 'content-type': 'application/json' });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual(errorBody('invalid_request'));
  });

  test('schema failures → 400 validation_failed with details naming each field', async () => {
    const reply = await h.api.post('/v1/auth/register', { email: 'not-an-email', password: 'short' });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ ...errorBody('validation_failed'), details: expect.any(Array) });
    expect(reply.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['body.email', 'body.password']);
    const retention = await owner.client.patch('/v1/settings', { retention_days: 366 });
    expect(retention.status).toBe(400);
    expect(retention.body.details[0].path).toBe('body.retention_days');
  });

  test('a body that is not JSON → 415 unsupported_media_type', async () => {
    const reply = await owner.client.post('/v1/projects', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(reply.status).toBe(415);
    expect(reply.body).toEqual(errorBody('unsupported_media_type'));
  });

  test('a body over 1 MiB → 413 payload_too_large', async () => {
    const reply = await owner.client.post('/v1/projects', { name: 'x', platform: 'y'.repeat(1024 * 1024 + 10) });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual(errorBody('payload_too_large'));
  });

  test('a body nested deeper than 32 levels → 400 invalid_request', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = { deeper: deep };
    const reply = await owner.client.post('/v1/projects', { name: 'deep', extra: deep });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual(errorBody('invalid_request'));
  });

  test('unknown query parameters → 400 invalid_request; out-of-range ones → validation_failed; a forged cursor → invalid_request', async () => {
    const unknown = await owner.client.get('/v1/projects?color=blue');
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('invalid_request');
    expect(unknown.body.details).toEqual([{ path: 'query', message: 'unknown color' }]);
    const range = await owner.client.get('/v1/projects?limit=500');
    expect(range.status).toBe(400);
    expect(range.body.code).toBe('validation_failed');
    const cursor = await owner.client.get('/v1/projects?cursor=Zm9yZ2Vk');
    expect(cursor.status).toBe(400);
    expect(cursor.body.code).toBe('invalid_request');
  });
});

describe('paging', () => {
  test('limit and cursor walk a list once, in order, while new items arrive', async () => {
    const account = await signUp(h);
    const names = Array.from({ length: 5 }, (_, i) => `paged-${i}`);
    for (const name of names) await account.client.post('/v1/projects', { name });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: { name: string }[]; next_cursor: string | null } } = await account.client.get(`/v1/projects?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.data.map((p) => p.name));
      cursor = page.body.next_cursor;
      if (seen.length === 2) await account.client.post('/v1/projects', { name: 'late arrival' });
    } while (cursor);
    expect(seen).toEqual([...names, 'late arrival']);
  });
});
