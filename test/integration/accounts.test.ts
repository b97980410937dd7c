import { DASHBOARD_ORIGIN, type Harness, useHarness } from '../support/harness.js';
import { sessionCookieOf } from '../support/http.js';
import { randomBytes } from 'node:crypto';
import { PASSWORD, addMember, login, register, signUp, uniqueEmail } from '../support/factories/accounts.js';

let h: Harness;
useHarness((started) => (h = started));

describe('account flow', () => {
  test('register returns the account and no session; login sets the cookie; /v1/me answers', async () => {
    const email = uniqueEmail();
    const registered = await h.api.post('/v1/auth/register', { email, password: PASSWORD, name: 'Ada', organization: 'Analytical' });
    expect(registered.status).toBe(201);
    expect(registered.headers.getSetCookie()).toEqual([]);
    expect(registered.body).toMatchObject({ user: { email, name: 'Ada' }, organization: { name: 'Analytical' }, role: 'owner' });

    const loggedIn = await h.api.post('/v1/auth/login', { email: email.toUpperCase(), password: PASSWORD });
    expect(loggedIn.status).toBe(200);
    expect(loggedIn.body.organization.id).toBe(registered.body.organization.id);
    const cookie = sessionCookieOf(loggedIn.headers)!;

    const me = await h.api.with({ cookie, origin: DASHBOARD_ORIGIN }).get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({ user: registered.body.user, organization: registered.body.organization, role: 'owner' });
  });

  test('the session cookie is HttpOnly, SameSite=Lax, Path=/ and lasts 720 hours', async () => {
    const email = uniqueEmail();
    await register(h, email);
    const reply = await h.api.post('/v1/auth/login', { email, password: PASSWORD });
    const line = reply.headers.getSetCookie().find((c) => c.startsWith('slk_session='))!;
    const attributes = line.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/', `max-age=${720 * 3600}`]));
    expect(attributes).not.toContain('secure');
    const value = line.split(';')[0]!.split('=')[1]!;
    expect(value.length).toBeGreaterThanOrEqual(43);
  });

  test('each login gets a new token; logout makes the old cookie useless while other sessions live on', async () => {
    const email = uniqueEmail();
    await register(h, email);
    const first = await login(h, email);
    const second = await login(h, email);
    expect(first.cookie).not.toBe(second.cookie);

    const out = await first.client.post('/v1/auth/logout');
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toMatch(/^slk_session=;/);

    const after = await first.client.get('/v1/me');
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ code: 'unauthenticated' });
    expect((await second.client.get('/v1/me')).status).toBe(200);
  });

  test('wrong password and unknown email answer the same', async () => {
    const account = await signUp(h);
    const wrong = await h.api.post('/v1/auth/login', { email: account.email, password: 'not the password' });
    const unknown = await h.api.post('/v1/auth/login', { email: uniqueEmail('nobody'), password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.code).toBe('invalid_credentials');
    expect({ ...unknown.body, request_id: undefined }).toEqual({ ...wrong.body, request_id: undefined });
  });

  test('emails are trimmed and lower-cased, so one address is one account', async () => {
    const email = uniqueEmail();
    const registered = await h.api.post('/v1/auth/register', { email: `  ${email.toUpperCase()} `, password: PASSWORD });
    expect(registered.status).toBe(201);
    expect(registered.body.user.email).toBe(email);
    expect((await h.api.post('/v1/auth/login', { email: ` ${email}`, password: PASSWORD })).status).toBe(200);
  });

  test('registering a taken email is a conflict', async () => {
    const email = uniqueEmail();
    await register(h, email);
    const again = await h.api.post('/v1/auth/register', { email, password: PASSWORD });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('conflict');
  });

  test('the password is stored as a scrypt hash, never as given', async () => {
    const account = await signUp(h);
    const { User } = await import('../../src/shared/features/accounts/model.js');
    const user = await User.findOne({ email: account.email }).lean();
    expect(user!.passwordHash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(user)).not.toContain(PASSWORD);
  });
});

describe('organization slugs', () => {
  test('a new organization gets a slug from its name, numbered when the name is taken', async () => {
    const name = `Acme Widgets ${randomBytes(3).toString('hex')}`;
    const base = name.toLowerCase().replaceAll(' ', '-');
    const first = await register(h, uniqueEmail(), name);
    const second = await register(h, uniqueEmail(), name);
    expect(first.organization.slug).toBe(base);
    expect(second.organization.slug).toBe(`${base}-2`);
    const owner = await login(h, first.user.email);
    expect((await owner.client.get('/v1/me')).body.organization.slug).toBe(base);
    expect((await owner.client.get('/v1/settings')).body.organization).toEqual({ id: first.organization.id, name, slug: base });
  });

  test('an admin changes the slug; a taken or malformed slug is refused; a member cannot change it', async () => {
    const owner = await signUp(h);
    const other = await signUp(h);
    const wanted = `shop-${randomBytes(3).toString('hex')}`;
    const changed = await owner.client.patch('/v1/settings', { slug: wanted });
    expect(changed.status).toBe(200);
    expect(changed.body.organization.slug).toBe(wanted);
    expect((await owner.client.get('/v1/me')).body.organization.slug).toBe(wanted);

    const taken = await other.client.patch('/v1/settings', { slug: wanted });
    expect(taken.status).toBe(409);
    expect(taken.body).toMatchObject({ code: 'conflict', message: `the organization slug "${wanted}" is taken` });
    for (const bad of ['Upper', '12345', '-lead', 'with space', 'x'.repeat(51)]) {
      const refused = await other.client.patch('/v1/settings', { slug: bad });
      expect([bad, refused.status, refused.body.code]).toEqual([bad, 400, 'validation_failed']);
    }
    const member = await addMember(h, owner, 'member');
    expect((await member.client.patch('/v1/settings', { slug: `${wanted}-x` })).status).toBe(403);

    // the old slug is free again once renamed away from
    const renamed = await owner.client.patch('/v1/settings', { slug: `${wanted}-new` });
    expect(renamed.status).toBe(200);
    expect((await other.client.patch('/v1/settings', { slug: wanted })).body.organization.slug).toBe(wanted);
  });
});

describe('the Origin rule for cookie-authenticated requests', () => {
  test('absent or wrong Origin → 403 origin_rejected; the dashboard origin → 200', async () => {
    const account = await signUp(h);
    const absent = await h.api.with({ cookie: account.cookie }).get('/v1/me');
    expect(absent.status).toBe(403);
    expect(absent.body).toEqual({ code: 'origin_rejected', message: expect.any(String), request_id: expect.any(String) });
    const wrong = await h.api.with({ cookie: account.cookie, origin: 'https://evil.example' }).get('/v1/me');
    expect(wrong.status).toBe(403);
    expect(wrong.body.code).toBe('origin_rejected');
    expect((await account.client.get('/v1/me')).status).toBe(200);
  });

  test('a stale cookie does not stop the login form from working', async () => {
    const account = await signUp(h);
    const stale = h.api.with({ cookie: 'slk_session=stale', origin: 'https://elsewhere.example' });
    const reply = await stale.post('/v1/auth/login', { email: account.email, password: PASSWORD });
    expect(reply.status).toBe(200);
  });

  test('CORS allows the dashboard origin with credentials, and no other', async () => {
    const preflight = await h.api.request('OPTIONS', '/v1/me', undefined, {
      origin: DASHBOARD_ORIGIN,
      'access-control-request-method': 'GET',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(DASHBOARD_ORIGIN);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    const other = await h.api.request('OPTIONS', '/v1/me', undefined, { origin: 'https://evil.example', 'access-control-request-method': 'GET' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});
