/**
 * Single sign-on (OpenID Connect) against a real provider (oidc-provider on a loopback port) and a
 * local UDP DNS server for domain verification: the connection settings (secret sealed, never
 * answered), domain claims and their TXT proof, the login from start to session, and every refusal
 * leaving no account or session behind. Every request to a provider passes the outbound guard (the
 * loopback provider is allowed through OUTBOUND_ALLOWLIST=127.0.0.1; 127.0.0.2 is not), a login is
 * bound to the browser that started it, and a provider's assertion links no account it does not prove.
 * Without API_PUBLIC_URL every SSO route answers 501.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose, { Types } from 'mongoose';
import { createSecretBox } from '../../src/shared/clients/secret-box.js';
import { sha256 } from '../../src/shared/secrets.js';
import { DISCOVERY_FAILED, EXCHANGE_FAILED } from '../../src/shared/clients/oidc.js';
import { refusals } from '../../src/shared/features/sso/service.js';
import { addMember, PASSWORD, register, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { DASHBOARD_ORIGIN, startHarness, useHarness, type Harness } from '../support/harness.js';
import { answerRecorder, sessionCookieOf } from '../support/http.js';
import { startOidcProvider, type AccountClaims, type TestOidcProvider } from '../support/oidc-provider.js';
import { startTarget, targetPool, type Target } from '../support/targets.js';

/** The API's public URL: only the provider's redirect and the callback's URL use it, so it needs no listener. */
const API_PUBLIC_URL = 'http://sluice-api.test';
const REDIRECT_URI = `${API_PUBLIC_URL}/v1/auth/sso/callback`;
const CLIENT_ID = 'sluice-dashboard';
const CLIENT_SECRET = `oidc-secret-${randomBytes(12).toString('hex')}`;
const SECOND_CLIENT_SECRET = `oidc-secret-2-${randomBytes(12).toString('hex')}`;

const dataDir = mkdtempSync(join(tmpdir(), 'sluice-sso-'));
/** Filled in before the harness starts (hooks run in order): the DNS server's port is known only then. */
const env: Record<string, string> = { DATA_DIR: dataDir, API_PUBLIC_URL, RATE_LIMIT_REGISTER: '1000', OUTBOUND_ALLOWLIST: '127.0.0.1' };
let dns: TestDnsServer;
let idp: TestOidcProvider;
let otherIdp: TestOidcProvider;
beforeAll(async () => {
  dns = await startDnsServer();
  env.DNS_RESOLVER = dns.address;
  idp = await startOidcProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: REDIRECT_URI });
  // this one puts the email in the ID token; the first serves it from its userinfo endpoint only
  otherIdp = await startOidcProvider({ clientId: CLIENT_ID, clientSecret: SECOND_CLIENT_SECRET, redirectUri: REDIRECT_URI, claimsInIdToken: true });
});
afterAll(async () => {
  await Promise.all([dns?.close(), idp?.close(), otherIdp?.close()]);
  rmSync(dataDir, { recursive: true, force: true });
});

let h: Harness;
useHarness((started) => (h = started), env);

/** Every answer the API gave in this file, to show the client secret is never in one. */
const { answers, kept } = answerRecorder();
afterAll(() => {
  for (const secret of [CLIENT_SECRET, SECOND_CLIENT_SECRET]) {
    expect(answers.join('\n')).not.toContain(secret);
    expect(h.logs.text).not.toContain(secret);
  }
});

const db = () => mongoose.connection;
const uniqueDomain = () => `corp-${randomBytes(5).toString('hex')}.test`;
type Issuer = Pick<TestOidcProvider, 'issuer'>;
const connectionBody = (provider: Issuer = idp, secret = CLIENT_SECRET) => ({ issuer: provider.issuer, client_id: CLIENT_ID, client_secret: secret });

/** An organisation with its connection to `provider` and a verified domain. */
async function ssoOrganization(provider: Issuer = idp, secret = CLIENT_SECRET): Promise<{ owner: Account; domain: string }> {
  const owner = await signUp(h);
  const put = await kept(owner.client.put('/v1/settings/sso', connectionBody(provider, secret)));
  expect(put.status).toBe(200);
  const domain = uniqueDomain();
  const claim = await owner.client.post('/v1/settings/sso/domains', { domain });
  expect(claim.status).toBe(201);
  dns.txt.set(claim.body.record.name, [claim.body.record.value]);
  const verify = await owner.client.post('/v1/settings/sso/domains/verify', { domain });
  expect(verify.status).toBe(200);
  return { owner, domain };
}

async function invite(owner: Account, email: string, role = 'member') {
  const reply = await owner.client.post('/v1/members', { email, role });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; invite_token?: string };
}

/** The `slk_sso_login` cookie each started login set, by its state: what the browser that started it holds. */
const loginCookies = new Map<string, string>();
const LOGIN_COOKIE = /^slk_sso_login=([^;]+)/;

/** Starts a login for `email` as a browser does, keeping its login cookie. */
async function startLogin(email: string) {
  const start = await kept(h.api.post('/v1/auth/sso/start', { email }));
  expect(start.status).toBe(200);
  const setCookie = start.headers.getSetCookie().find((line) => LOGIN_COOKIE.test(line));
  expect(setCookie).toBeDefined();
  loginCookies.set(new URL(start.body.authorization_url).searchParams.get('state')!, setCookie!.split(';')[0]!);
  return { ...start, setCookie: setCookie! };
}

interface Callback {
  status: number;
  location: string | null;
  cookie: string | undefined;
  setCookies: string[];
  body: any;
}

/**
 * Requests the callback as the provider's redirect leads a browser (`html`) or a script to it; redirects
 * are not followed. `loginCookie`: by default the one of the browser that started this login; null: none.
 */
async function callback(url: URL, mode: 'html' | 'json' = 'html', loginCookie: string | null = loginCookies.get(url.searchParams.get('state') ?? '') ?? null): Promise<Callback> {
  const response = await fetch(`${h.api.baseUrl}${url.pathname}${url.search}`, {
    redirect: 'manual',
    headers: { accept: mode === 'html' ? 'text/html,application/xhtml+xml,*/*;q=0.8' : 'application/json', ...(loginCookie && { cookie: loginCookie }) },
  });
  const text = await response.text();
  answers.push(text);
  return {
    status: response.status,
    location: response.headers.get('location'),
    cookie: sessionCookieOf(response.headers),
    setCookies: response.headers.getSetCookie(),
    body: text ? JSON.parse(text) : undefined,
  };
}

/** Starts a login for `email`, signs in at the provider as `subject` with `claims`; answers the callback URL. */
async function signInAt(email: string, subject: string, claims: AccountClaims, provider = idp): Promise<URL> {
  provider.accounts.set(subject, claims);
  const start = await startLogin(email);
  return provider.signIn(start.body.authorization_url, subject);
}

const newSubject = () => `sub-${randomBytes(6).toString('hex')}`;
const sessionsOf = (userId: Types.ObjectId | string) => db().collection('sessions').countDocuments({ userId: new Types.ObjectId(String(userId)) });
const userByEmail = (email: string) => db().collection('users').findOne({ email });
const refusalRedirect = (code: string, reason: string) => `${DASHBOARD_ORIGIN}/login?sso_error=${code}&sso_reason=${reason}`;

async function auditOf(owner: Account, action: string) {
  const reply = await owner.client.get(`/v1/audit-log?action=${action}`);
  expect(reply.status).toBe(200);
  return reply.body.data as { action: string; actor: { type: string; id: string | null }; details: Record<string, unknown> }[];
}

describe('without API_PUBLIC_URL', () => {
  let off: Harness;
  beforeAll(async () => {
    off = await startHarness({ DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await off.close();
  });

  test.each([
    ['GET', '/v1/settings/sso'],
    ['PUT', '/v1/settings/sso'],
    ['DELETE', '/v1/settings/sso'],
    ['GET', '/v1/settings/sso/domains'],
    ['POST', '/v1/settings/sso/domains'],
    ['POST', '/v1/settings/sso/domains/verify'],
    ['DELETE', '/v1/settings/sso/domains/example.com'],
    ['POST', '/v1/auth/sso/start'],
    ['GET', '/v1/auth/sso/callback?code=abc&state=def'],
  ])('%s %s answers 501 sso_unavailable, even without any credential', async (method, path) => {
    const reply = await off.api.request(method, path, method === 'GET' || method === 'DELETE' ? undefined : { email: 'a@example.com', domain: 'example.com' });
    expect(reply.status).toBe(501);
    expect(reply.body).toMatchObject({ code: 'sso_unavailable', request_id: expect.any(String) });
  });

  test('a bad credential or a malformed body does not change the answer', async () => {
    const withKey = await off.api.with({ bearer: 'slk_not_a_key' }).get('/v1/settings/sso');
    expect(withKey.status).toBe(501);
    const broken = await off.api.post('/v1/auth/sso/start', '{not json', { 'content-type': 'application/json' });
    expect(broken.status).toBe(501);
  });
});

describe('the connection settings', () => {
  test('are configured, read and removed by an admin; the secret is sealed at rest and never answered', async () => {
    const owner = await signUp(h);
    const missing = await kept(owner.client.get('/v1/settings/sso'));
    expect(missing.status).toBe(404);
    expect(missing.body.message).toContain(REDIRECT_URI);

    const created = await kept(owner.client.put('/v1/settings/sso', connectionBody()));
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      issuer: idp.issuer,
      client_id: CLIENT_ID,
      client_secret_set: true,
      enabled: true,
      redirect_uri: REDIRECT_URI,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await kept(owner.client.get('/v1/settings/sso'))).body).toEqual(created.body);

    const stored = await db().collection('sso_connections').findOne({ orgId: new Types.ObjectId(owner.organization.id) });
    expect(JSON.stringify(stored)).not.toContain(CLIENT_SECRET);
    expect(createSecretBox(h.config).open(stored!.clientSecretSealed)).toBe(CLIENT_SECRET);

    // switched off, the secret left out: the stored one is kept
    const off = await kept(owner.client.put('/v1/settings/sso', { issuer: idp.issuer, client_id: CLIENT_ID, enabled: false }));
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, client_secret_set: true });
    const kept2 = await db().collection('sso_connections').findOne({ orgId: new Types.ObjectId(owner.organization.id) });
    expect(createSecretBox(h.config).open(kept2!.clientSecretSealed)).toBe(CLIENT_SECRET);

    const audit = await auditOf(owner, 'sso.connection.set');
    expect(audit).toHaveLength(2);
    expect(JSON.stringify(audit)).not.toContain(CLIENT_SECRET);

    expect((await owner.client.delete('/v1/settings/sso')).status).toBe(204);
    expect((await owner.client.get('/v1/settings/sso')).status).toBe(404);
    expect((await owner.client.delete('/v1/settings/sso')).status).toBe(404);
  });

  test('an issuer without a discovery document is refused and nothing is stored', async () => {
    const owner = await signUp(h);
    // the API itself answers JSON 404 at /.well-known/openid-configuration
    const notAnIssuer = await kept(owner.client.put('/v1/settings/sso', { ...connectionBody(), issuer: h.api.baseUrl }));
    expect(notAnIssuer.status).toBe(400);
    expect(notAnIssuer.body).toMatchObject({ code: 'validation_failed', details: [{ path: 'body.issuer' }] });
    const unreachable = await kept(owner.client.put('/v1/settings/sso', { ...connectionBody(), issuer: 'http://127.0.0.1:9/' }));
    expect(unreachable.status).toBe(400);
    const noSecret = await kept(owner.client.put('/v1/settings/sso', { issuer: idp.issuer, client_id: CLIENT_ID }));
    expect(noSecret.status).toBe(400);
    expect(noSecret.body.details).toEqual([{ path: 'body.client_secret', message: expect.any(String) }]);
    expect(await db().collection('sso_connections').countDocuments({ orgId: new Types.ObjectId(owner.organization.id) })).toBe(0);
  });

  test('a member (not an admin) may not read or change them', async () => {
    const owner = await signUp(h);
    const member = await addMember(h, owner, 'member');
    expect((await member.client.get('/v1/settings/sso')).status).toBe(403);
    expect((await kept(member.client.put('/v1/settings/sso', connectionBody()))).status).toBe(403);
    expect((await member.client.delete('/v1/settings/sso')).status).toBe(403);
    expect((await member.client.get('/v1/settings/sso/domains')).status).toBe(403);
    const claim = await member.client.post('/v1/settings/sso/domains', { domain: uniqueDomain() });
    expect(claim).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    // and nobody without a credential
    expect((await h.api.get('/v1/settings/sso')).status).toBe(401);
  });
});

describe('domains', () => {
  test('a claim answers its TXT record; verification needs the record published', async () => {
    const owner = await signUp(h);
    const domain = uniqueDomain();
    const claim = await owner.client.post('/v1/settings/sso/domains', { domain: ` ${domain.toUpperCase()}. ` });
    expect(claim.status).toBe(201);
    expect(claim.body).toEqual({
      domain,
      record: { name: `_sluice-verification.${domain}`, type: 'TXT', value: expect.stringMatching(/^sluice-verification=[A-Za-z0-9]{20,}$/) },
      verified: false,
      verified_at: null,
      created_at: expect.any(String),
    });
    // claiming again answers the same record
    expect((await owner.client.post('/v1/settings/sso/domains', { domain })).body.record).toEqual(claim.body.record);

    const unpublished = await owner.client.post('/v1/settings/sso/domains/verify', { domain });
    expect(unpublished).toMatchObject({ status: 400, body: { code: 'validation_failed' } });
    expect(unpublished.body.message).toContain(`_sluice-verification.${domain}`);

    dns.txt.set(claim.body.record.name, ['v=spf1 -all', 'sluice-verification=someone-elses-token']);
    expect((await owner.client.post('/v1/settings/sso/domains/verify', { domain })).status).toBe(400);

    dns.txt.set(claim.body.record.name, ['v=spf1 -all', claim.body.record.value]);
    const verified = await owner.client.post('/v1/settings/sso/domains/verify', { domain });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ domain, verified: true, verified_at: expect.any(String) });

    const list = await owner.client.get('/v1/settings/sso/domains');
    expect(list.body).toEqual({ data: [verified.body], next_cursor: null });
    expect((await auditOf(owner, 'sso.domain.verify'))[0]!.details).toEqual({ domain });

    expect((await owner.client.post('/v1/settings/sso/domains/verify', { domain: uniqueDomain() })).status).toBe(404);
    expect((await owner.client.delete(`/v1/settings/sso/domains/${domain}`)).status).toBe(204);
    expect((await owner.client.get('/v1/settings/sso/domains')).body.data).toEqual([]);
    expect(await db().collection('sso_verified_domains').countDocuments({ domain })).toBe(0);
  });

  let owner: Account | undefined;
  test.each(['gmail.com', 'GoogleMail.com', 'outlook.com', 'proton.me', 'gmx.de', 'gmx.net', 'yandex.ru', 'qq.com', '163.com', 'mail.ru'])(
    'the public mail domain %s cannot be claimed',
    async (domain) => {
      owner ??= await signUp(h);
      const reply = await owner.client.post('/v1/settings/sso/domains', { domain });
      expect(reply).toMatchObject({ status: 400, body: { code: 'validation_failed', details: [{ path: 'body.domain' }] } });
    },
  );

  test('not-a-domain values are refused', async () => {
    const owner = await signUp(h);
    for (const domain of ['localhost', '127.0.0.1', 'bad_domain.test', '-x.test', 'a..test', '']) {
      expect((await owner.client.post('/v1/settings/sso/domains', { domain })).status).toBe(400);
    }
  });

  test('a domain verified by one organisation cannot be claimed or verified by another; an unverified one can be claimed by both', async () => {
    const first = await signUp(h);
    const second = await signUp(h);
    const domain = uniqueDomain();
    const firstClaim = await first.client.post('/v1/settings/sso/domains', { domain });
    const secondClaim = await second.client.post('/v1/settings/sso/domains', { domain });
    expect(secondClaim.status).toBe(201);
    expect(secondClaim.body.record.value).not.toBe(firstClaim.body.record.value);

    // both records published; the first to verify owns the domain
    dns.txt.set(firstClaim.body.record.name, [firstClaim.body.record.value, secondClaim.body.record.value]);
    expect((await first.client.post('/v1/settings/sso/domains/verify', { domain })).status).toBe(200);
    expect((await second.client.post('/v1/settings/sso/domains/verify', { domain })).body).toMatchObject({ code: 'conflict' });
    const third = await signUp(h);
    const late = await third.client.post('/v1/settings/sso/domains', { domain });
    expect(late).toMatchObject({ status: 409, body: { code: 'conflict' } });
  });
});

describe('signing in', () => {
  test('an invited email signs in end to end: account, membership, linked identity, session, audit', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `ada@${domain}`;
    await invite(owner, email, 'admin');
    const subject = newSubject();

    idp.accounts.set(subject, { email, email_verified: true, name: 'Ada Lovelace' });
    const start = await startLogin(email.toUpperCase());
    // the login is bound to this browser by a cookie only the callback receives, lasting as long as the login may take
    expect(start.setCookie).toMatch(/^slk_sso_login=[A-Za-z0-9]{40,}; Max-Age=600; Path=\/v1\/auth\/sso\/callback; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    const authorization = new URL(start.body.authorization_url);
    expect(authorization.origin).toBe(idp.issuer);
    for (const param of ['state', 'nonce', 'code_challenge']) expect(authorization.searchParams.get(param)).toBeTruthy();
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('redirect_uri')).toBe(REDIRECT_URI);
    expect(authorization.searchParams.get('login_hint')).toBe(email);
    // the state is kept hashed, with the verifier, the nonce, the organisation and the email
    const state = authorization.searchParams.get('state')!;
    const stored = await db().collection('sso_login_states').findOne({ stateHash: sha256(state) });
    expect(stored).toMatchObject({ orgId: new Types.ObjectId(owner.organization.id), emailHint: email, nonce: authorization.searchParams.get('nonce') });
    expect(stored!.expiresAt.getTime() - Date.now()).toBeGreaterThan(9 * 60_000);
    expect(JSON.stringify(stored)).not.toContain(state);

    const back = await idp.signIn(start.body.authorization_url, subject);
    expect(back.href.startsWith(`${REDIRECT_URI}?`)).toBe(true);
    const done = await callback(back);
    expect(done.status).toBe(302);
    expect(done.location).toBe(DASHBOARD_ORIGIN);
    expect(done.cookie).toMatch(/^slk_session=/);
    expect(done.setCookies.find((line) => line.startsWith('slk_sso_login='))).toMatch(/^slk_sso_login=; Path=\/v1\/auth\/sso\/callback; Expires=Thu, 01 Jan 1970/);
    // the provider's single-use code and the state never reach a log line
    expect(h.logs.text).toContain('/v1/auth/sso/callback?code=[redacted]');
    expect(h.logs.text).not.toContain(back.searchParams.get('code')!);
    expect(h.logs.text).not.toContain(state);

    const me = await h.api.with({ cookie: done.cookie!, origin: DASHBOARD_ORIGIN }).get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { email, name: 'Ada Lovelace' }, organization: { id: owner.organization.id }, role: 'admin' });
    const members = await owner.client.get('/v1/members');
    expect(members.body.data.find((m: { email: string }) => m.email === email)).toMatchObject({ status: 'active', user_id: me.body.user.id });
    expect(await db().collection('sso_identities').findOne({ issuer: idp.issuer, subject })).toMatchObject({ userId: new Types.ObjectId(me.body.user.id) });

    const logins = await auditOf(owner, 'sso.login');
    expect(logins[0]).toMatchObject({ actor: { type: 'user', id: me.body.user.id }, details: { issuer: idp.issuer, subject, email, linked: 'new' } });
    expect((await auditOf(owner, 'session.login')).some((entry) => entry.details?.method === 'sso')).toBe(true);

    // the state was single-use: it is gone
    expect(await db().collection('sso_login_states').countDocuments({ stateHash: sha256(state) })).toBe(0);

    // the next login goes through the link
    const again = await callback(await signInAt(email, subject, { email, email_verified: true }));
    expect(again.status).toBe(302);
    expect(again.cookie).toBeDefined();
    expect((await auditOf(owner, 'sso.login'))[0]!.details.linked).toBe('existing');
    expect(await db().collection('users').countDocuments({ email })).toBe(1);

    // the account has no password anyone knows
    expect((await h.api.post('/v1/auth/login', { email, password: 'correct horse battery staple' })).status).toBe(401);
  });

  test('an existing member (registered with a password) signs in and is linked', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `grace@${domain}`;
    const invited = await invite(owner, email);
    const registered = await h.api.post('/v1/auth/register', { email, password: 'a long enough password 1', invite_token: invited.invite_token });
    expect(registered.status).toBe(201);
    const done = await callback(await signInAt(email, newSubject(), { email, email_verified: true }), 'json');
    expect(done.status).toBe(302);
    expect(done.body).toEqual({ redirect_to: DASHBOARD_ORIGIN });
    const me = await h.api.with({ cookie: done.cookie!, origin: DASHBOARD_ORIGIN }).get('/v1/me');
    expect(me.body).toMatchObject({ user: { id: registered.body.user.id, email }, role: 'member' });
  });

  test('a provider that puts the email in the ID token (no userinfo call needed) works the same', async () => {
    const { owner, domain } = await ssoOrganization(otherIdp, SECOND_CLIENT_SECRET);
    const email = `idtoken@${domain}`;
    await invite(owner, email);
    const done = await callback(await signInAt(email, newSubject(), { email, email_verified: true }, otherIdp));
    expect(done).toMatchObject({ status: 302, location: DASHBOARD_ORIGIN, cookie: expect.stringMatching(/^slk_session=/) });
    expect((await auditOf(owner, 'sso.login'))[0]!.details).toMatchObject({ issuer: otherIdp.issuer, email });
  });

  test('an identity linked to one user never signs in another, whatever email it asserts later', async () => {
    const { owner, domain } = await ssoOrganization();
    const [alice, bob] = [`alice@${domain}`, `bob@${domain}`];
    await invite(owner, alice);
    await invite(owner, bob);
    const subject = newSubject();
    const first = await callback(await signInAt(alice, subject, { email: alice, email_verified: true }));
    expect(first.status).toBe(302);

    // the provider now says this subject is bob: the link still says alice
    const second = await callback(await signInAt(bob, subject, { email: bob, email_verified: true }));
    expect(second.status).toBe(302);
    const me = await h.api.with({ cookie: second.cookie!, origin: DASHBOARD_ORIGIN }).get('/v1/me');
    expect(me.body.user.email).toBe(alice);
    expect(await userByEmail(bob)).toBeNull();
  });

  test('POST /v1/auth/sso/start answers 404 for a domain without single sign-on', async () => {
    const { owner, domain } = await ssoOrganization();
    for (const email of [uniqueEmail(), 'someone@gmail.com']) {
      const reply = await kept(h.api.post('/v1/auth/sso/start', { email }));
      expect(reply).toMatchObject({ status: 404, body: { code: 'not_found', message: 'single sign-on is not set up for this domain' } });
    }
    // a disabled connection: the same answer
    await kept(owner.client.put('/v1/settings/sso', { issuer: idp.issuer, client_id: CLIENT_ID, enabled: false }));
    expect((await h.api.post('/v1/auth/sso/start', { email: `x@${domain}` })).status).toBe(404);
    expect((await h.api.post('/v1/auth/sso/start', { email: 'not an email' })).status).toBe(400);
  });
});

describe('refusals leave no account and no session', () => {
  test('an unknown state', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `eve@${domain}`;
    await invite(owner, email);
    const back = await signInAt(email, newSubject(), { email, email_verified: true });
    const forged = new URL(back);
    forged.searchParams.set('state', 'made-up-state');
    const json = await callback(forged, 'json');
    expect(json).toMatchObject({ status: 400, cookie: undefined, body: { code: 'invalid_request', request_id: expect.any(String) } });
    const html = await callback(forged, 'html');
    expect(html.status).toBe(302);
    expect(html.location).toBe(refusalRedirect('invalid_request', 'state_invalid'));
    expect(html.cookie).toBeUndefined();
    const noState = new URL(back);
    noState.searchParams.delete('state');
    expect((await callback(noState, 'json')).status).toBe(400);
    expect(await userByEmail(email)).toBeNull();
  });

  test('a replayed state (the second use of a callback)', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `replay@${domain}`;
    await invite(owner, email);
    const back = await signInAt(email, newSubject(), { email, email_verified: true });
    const first = await callback(back);
    expect(first.status).toBe(302);
    expect(first.location).toBe(DASHBOARD_ORIGIN);
    const user = await userByEmail(email);
    expect(await sessionsOf(user!._id)).toBe(1);
    const replay = await callback(back);
    expect(replay.location).toBe(refusalRedirect('invalid_request', 'state_invalid'));
    expect(replay.cookie).toBeUndefined();
    expect(await sessionsOf(user!._id)).toBe(1);
  });

  test('an expired state', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `late@${domain}`;
    await invite(owner, email);
    const back = await signInAt(email, newSubject(), { email, email_verified: true });
    const stateHash = sha256(back.searchParams.get('state')!);
    const aged = await db().collection('sso_login_states').updateOne({ stateHash }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect(aged.modifiedCount).toBe(1);
    const reply = await callback(back, 'json');
    expect(reply).toMatchObject({ status: 400, body: { code: 'invalid_request' } });
    expect(await userByEmail(email)).toBeNull();
    expect((await auditOf(owner, 'sso.refused'))[0]).toMatchObject({ actor: { type: 'system', id: null }, details: { reason: 'state_expired' } });
    // and it was consumed: no second chance
    expect((await callback(back, 'html')).location).toBe(refusalRedirect('invalid_request', 'state_invalid'));
  });

  test('email_verified false', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `unverified@${domain}`;
    await invite(owner, email);
    const subject = newSubject();
    const reply = await callback(await signInAt(email, subject, { email, email_verified: false }));
    expect(reply.location).toBe(refusalRedirect('forbidden', 'email_unverified'));
    expect(reply.cookie).toBeUndefined();
    expect(await userByEmail(email)).toBeNull();
    expect(await db().collection('sso_identities').countDocuments({ subject })).toBe(0);
    const members = await owner.client.get('/v1/members');
    expect(members.body.data.find((m: { email: string }) => m.email === email).status).toBe('invited');
    expect((await auditOf(owner, 'sso.refused'))[0]).toMatchObject({ details: { reason: 'email_unverified', email, subject } });
  });

  test('a verified address of the verified domain that was never invited (SPEC: only invited accounts)', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `stranger@${domain}`;
    const reply = await callback(await signInAt(email, newSubject(), { email, email_verified: true }), 'json');
    expect(reply).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    expect(await userByEmail(email)).toBeNull();
    expect((await auditOf(owner, 'sso.refused'))[0]!.details.reason).toBe('not_invited');
  });

  test("an email of a domain the organisation has not verified (even an invited one)", async () => {
    const { owner, domain } = await ssoOrganization();
    const elsewhere = `mallory@${uniqueDomain()}`;
    await invite(owner, elsewhere);
    // started for a verified address; the provider asserts an address of another domain
    const reply = await callback(await signInAt(`mallory@${domain}`, newSubject(), { email: elsewhere, email_verified: true }));
    expect(reply.location).toBe(refusalRedirect('forbidden', 'domain_unverified'));
    expect(await userByEmail(elsewhere)).toBeNull();
  });

  test('a second provider asserting the email of a user linked through the first', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `linked@${domain}`;
    await invite(owner, email);
    const first = await callback(await signInAt(email, newSubject(), { email, email_verified: true }));
    expect(first.status).toBe(302);
    const user = await userByEmail(email);

    // the organisation's connection now points at another issuer, which asserts the same email
    const moved = await kept(owner.client.put('/v1/settings/sso', connectionBody(otherIdp, SECOND_CLIENT_SECRET)));
    expect(moved.body.issuer).toBe(otherIdp.issuer);
    const reply = await callback(await signInAt(email, newSubject(), { email, email_verified: true }, otherIdp), 'json');
    expect(reply).toMatchObject({ status: 403, body: { code: 'forbidden' }, cookie: undefined });
    expect(await sessionsOf(user!._id)).toBe(1);
    expect(await db().collection('sso_identities').countDocuments({ issuer: otherIdp.issuer, userId: user!._id })).toBe(0);
    expect((await auditOf(owner, 'sso.refused'))[0]!.details).toMatchObject({ reason: 'identity_mismatch', issuer: otherIdp.issuer });
  });

  test('the provider refusing the login (the user cancels)', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `cancel@${domain}`;
    await invite(owner, email);
    const start = await startLogin(email);
    const state = new URL(start.body.authorization_url).searchParams.get('state')!;
    const back = new URL(`${REDIRECT_URI}?${new URLSearchParams({ error: 'access_denied', state, iss: idp.issuer })}`);
    const reply = await callback(back);
    expect(reply.location).toBe(refusalRedirect('unauthenticated', 'provider_denied'));
    expect(await userByEmail(email)).toBeNull();
  });
});

describe('a login is bound to the browser that started it', () => {
  test('a callback URL handed to another browser signs nobody in (login CSRF)', async () => {
    const { owner, domain } = await ssoOrganization();
    const attacker = `mallory@${domain}`;
    await invite(owner, attacker);
    // the attacker starts a login and completes it at the provider, then hands the callback URL to a victim
    const back = await signInAt(attacker, newSubject(), { email: attacker, email_verified: true });
    const victim = await callback(back, 'html', null);
    expect(victim).toMatchObject({ status: 302, location: refusalRedirect('invalid_request', 'browser_mismatch'), cookie: undefined });
    expect(await userByEmail(attacker)).toBeNull();
    expect((await auditOf(owner, 'sso.refused'))[0]!.details.reason).toBe('browser_mismatch');

    // a victim whose browser holds the cookie of a login of its own is refused the same way
    const own = await startLogin(`victim@${domain}`);
    const ownCookie = loginCookies.get(new URL(own.body.authorization_url).searchParams.get('state')!)!;
    const handed = await signInAt(attacker, newSubject(), { email: attacker, email_verified: true });
    const withOther = await callback(handed, 'json', ownCookie);
    expect(withOther).toMatchObject({ status: 400, cookie: undefined, body: { code: 'invalid_request', message: refusals.browser_mismatch.message, request_id: expect.any(String) } });
    expect(await userByEmail(attacker)).toBeNull();
  });
});

describe("an organisation's provider asserting someone else's address", () => {
  test('unverified, or verified in a domain the organisation did not verify: no link, no session as that person', async () => {
    // the victim: a password account of an address whose domain another organisation verified
    const { domain: victimDomain } = await ssoOrganization(otherIdp, SECOND_CLIENT_SECRET);
    const victimEmail = `victim@${victimDomain}`;
    await register(h, victimEmail);
    const passwordSession = await h.api.post('/v1/auth/login', { email: victimEmail, password: PASSWORD });
    expect(passwordSession.status).toBe(200);
    const victim = (await userByEmail(victimEmail))!;
    const plainVictim = await signUp(h, 'plain-victim');

    // the attacker: an organisation of their own, whose provider says whatever they like
    const { owner: attacker, domain } = await ssoOrganization();
    const attempts: [AccountClaims, string][] = [
      [{ email: victimEmail, email_verified: false }, 'email_unverified'],
      [{ email: victimEmail }, 'email_unverified'],
      [{ email: victimEmail, email_verified: true }, 'domain_unverified'],
      [{ email: plainVictim.email, email_verified: true }, 'domain_unverified'],
    ];
    for (const [claims, reason] of attempts) {
      const reply = await callback(await signInAt(`mallory@${domain}`, newSubject(), claims), 'json');
      expect(reply).toMatchObject({ status: 403, cookie: undefined, body: { code: 'forbidden', message: refusals[reason as keyof typeof refusals].message } });
      expect((await auditOf(attacker, 'sso.refused'))[0]!.details.reason).toBe(reason);
    }
    for (const userId of [victim._id, plainVictim.user.id]) {
      expect(await db().collection('sso_identities').countDocuments({ userId: new Types.ObjectId(String(userId)) })).toBe(0);
      expect(await db().collection('memberships').countDocuments({ userId: new Types.ObjectId(String(userId)), orgId: new Types.ObjectId(attacker.organization.id) })).toBe(0);
    }
    expect(await sessionsOf(victim._id)).toBe(1);
    expect(await sessionsOf(plainVictim.user.id)).toBe(1);
  });

  test('an existing account is not pulled into the organisation, nor its pending invite accepted, by a sign-in', async () => {
    const { owner, domain } = await ssoOrganization();
    const email = `dual@${domain}`;
    await register(h, email);
    await invite(owner, email, 'admin');
    const user = (await userByEmail(email))!;
    const subject = newSubject();
    const reply = await callback(await signInAt(email, subject, { email, email_verified: true }), 'json');
    expect(reply).toMatchObject({ status: 403, cookie: undefined, body: { code: 'forbidden', message: refusals.not_member.message } });
    const members = await owner.client.get('/v1/members');
    expect(members.body.data.find((m: { email: string }) => m.email === email)).toMatchObject({ status: 'invited', role: 'admin' });
    expect(await db().collection('sso_identities').countDocuments({ subject })).toBe(0);
    expect(await sessionsOf(user._id)).toBe(0);
    expect((await auditOf(owner, 'sso.refused'))[0]!.details.reason).toBe('not_member');
  });
});

/**
 * A provider as small as a login needs, on loopback: its discovery document names the endpoints `route`
 * picks (by default its own), its token endpoint answers an RS256 ID token for the nonce the test sets
 * (with no email, so the userinfo endpoint is asked), and its JWKS serves the key.
 */
async function startSmallProvider(route: (own: string) => Record<string, string> = () => ({})) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const subject = newSubject();
  const state = { issuer: '', nonce: '', email: '' };
  const json = (body: unknown) => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const target = await startTarget((req) => {
    const own = state.issuer;
    switch (req.url) {
      case '/.well-known/openid-configuration':
        return json({
          issuer: own,
          authorization_endpoint: `${own}/authorize`,
          token_endpoint: `${own}/token`,
          userinfo_endpoint: `${own}/userinfo`,
          jwks_uri: `${own}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
          ...route(own),
        });
      case '/token': {
        const now = Math.floor(Date.now() / 1000);
        const signed = `${part({ alg: 'RS256', kid: 'small', typ: 'JWT' })}.${part({ iss: own, sub: subject, aud: CLIENT_ID, iat: now, exp: now + 300, nonce: state.nonce })}`;
        const idToken = `${signed}.${sign('sha256', Buffer.from(signed), privateKey).toString('base64url')}`;
        return json({ access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', expires_in: 300, id_token: idToken });
      }
      case '/jwks':
        return json({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'small', use: 'sig', alg: 'RS256' }] });
      case '/userinfo':
        return json({ sub: subject, email: state.email, email_verified: true });
      default:
        return { status: 404 };
    }
  });
  state.issuer = target.url;
  return { target, issuer: target.url, state };
}

describe('every request to the identity provider passes the outbound guard', () => {
  const pool = targetPool();
  afterAll(() => pool.closeAll());
  let guarded: Harness;
  let listener: Target;
  beforeAll(async () => {
    // without OUTBOUND_ALLOWLIST, as a server whose provider is on the internet
    guarded = await startHarness({ ...env, OUTBOUND_ALLOWLIST: '' });
    // a loopback listener answering a well-formed discovery document: a real target an attacker would aim at
    listener = await pool.start(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ issuer: `http://127.0.0.1:${listener.port}`, authorization_endpoint: `http://127.0.0.1:${listener.port}/auth`, token_endpoint: `http://127.0.0.1:${listener.port}/token`, jwks_uri: `http://127.0.0.1:${listener.port}/jwks`, response_types_supported: ['code'] }) }));
  });
  afterAll(async () => {
    await guarded?.close();
  });

  test('an issuer at loopback, a private or a metadata address is refused with one message that tells nothing, and never contacted', async () => {
    const owner = await signUp(guarded);
    const issuers = [
      listener.url,
      `http://localhost:${listener.port}/`,
      `http://2130706433:${listener.port}/`,
      `http://[::1]:${listener.port}/`,
      'http://127.0.0.1:9/',
      'http://10.0.0.7:8080/realms/corp',
      'http://192.168.1.20/',
      'http://169.254.169.254/latest/meta-data/',
      'http://metadata.google.internal/',
    ];
    const messages = new Set<string>();
    for (const issuer of issuers) {
      const reply = await kept(owner.client.put('/v1/settings/sso', { ...connectionBody(), issuer }));
      expect(reply).toMatchObject({ status: 400, body: { code: 'validation_failed', message: DISCOVERY_FAILED, request_id: expect.any(String), details: [{ path: 'body.issuer', message: DISCOVERY_FAILED }] } });
      messages.add(JSON.stringify({ message: reply.body.message, details: reply.body.details }));
    }
    expect(messages.size).toBe(1);
    expect(listener.requests).toEqual([]);
    expect(await db().collection('sso_connections').countDocuments({ orgId: new Types.ObjectId(owner.organization.id) })).toBe(0);
    // the real cause is in the server's log
    expect(guarded.logs.text).toContain('is not allowed (loopback)');
    expect(guarded.logs.text).toContain('is not allowed (cloud metadata)');

    // where loopback is allowed, a closed port and an open port that is no provider answer the very same
    const allowed = await signUp(h);
    for (const issuer of ['http://127.0.0.1:9/', h.api.baseUrl]) {
      const reply = await kept(allowed.client.put('/v1/settings/sso', { ...connectionBody(), issuer }));
      expect(reply).toMatchObject({ status: 400, body: { code: 'validation_failed', message: DISCOVERY_FAILED, details: [{ path: 'body.issuer', message: DISCOVERY_FAILED }] } });
    }
  });

  test("a provider whose token, JWKS or userinfo endpoint is a forbidden address: the login fails the same way and that address is never contacted", async () => {
    // 127.0.0.2 is loopback like the allowed 127.0.0.1, but not on OUTBOUND_ALLOWLIST
    const forbidden = await pool.start({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }, { host: '127.0.0.2' });
    const cases: [string, (own: string) => Record<string, string>][] = [
      ['token', () => ({ token_endpoint: `${forbidden.url}/token` })],
      ['jwks', () => ({ jwks_uri: `${forbidden.url}/jwks` })],
      ['userinfo', () => ({ userinfo_endpoint: `${forbidden.url}/userinfo` })],
      ['none (the control: every endpoint its own)', () => ({})],
    ];
    const answers: unknown[] = [];
    for (const [name, route] of cases) {
      const provider = await startSmallProvider(route);
      try {
        const { owner, domain } = await ssoOrganization(provider);
        provider.state.email = `${name.split(' ')[0]}@${domain}`;
        await invite(owner, provider.state.email);
        const start = await startLogin(provider.state.email);
        const authorization = new URL(start.body.authorization_url);
        expect(authorization.origin).toBe(provider.issuer);
        provider.state.nonce = authorization.searchParams.get('nonce')!;
        const back = new URL(`${REDIRECT_URI}?${new URLSearchParams({ code: randomBytes(8).toString('hex'), state: authorization.searchParams.get('state')! })}`);
        const reply = await callback(back, 'json');
        if (name.startsWith('none')) {
          expect(reply).toMatchObject({ status: 302, cookie: expect.stringMatching(/^slk_session=/) });
          // token, JWKS and userinfo were all asked, each once
          expect(provider.target.requests.map((r) => r.path).filter((path) => path !== '/.well-known/openid-configuration').sort()).toEqual(['/jwks', '/token', '/userinfo']);
          continue;
        }
        expect(reply).toMatchObject({ status: 401, cookie: undefined, body: { code: 'unauthenticated', message: refusals.exchange_failed.message } });
        answers.push({ body: { ...reply.body, request_id: undefined }, audit: (await auditOf(owner, 'sso.refused'))[0]!.details.detail });
      } finally {
        await provider.target.close();
      }
    }
    expect(answers).toEqual(Array(3).fill({ body: { code: 'unauthenticated', message: refusals.exchange_failed.message }, audit: EXCHANGE_FAILED }));
    expect(forbidden.requests).toEqual([]);
    expect(h.logs.text).toContain(`address 127.0.0.2 is not allowed (loopback)`);
  });
});
