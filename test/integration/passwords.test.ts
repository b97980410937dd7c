import { PasswordReset, User } from '../../src/shared/features/accounts/model.js';
import { PASSWORD, createApiKey, login, register, signUp, uniqueEmail } from '../support/factories/accounts.js';
import { DASHBOARD_ORIGIN, dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { startMailCatcher, type MailCatcher } from '../support/smtp.js';

let h: Harness;
let noMail: Harness;
let catcher: MailCatcher;
const NEW_PASSWORD = 'a brand new passphrase';

beforeAll(async () => {
  catcher = await startMailCatcher();
  // every account here registers from one address: the registration and login limits are not what these tests are about
  h = await startHarness({ SMTP_URL: catcher.url, RATE_LIMIT_PASSWORD_RESET: '2', RATE_LIMIT_REGISTER: '1000', RATE_LIMIT_LOGIN_ADDRESS: '1000' });
  noMail = await startHarness();
});
afterAll(async () => {
  await h?.close();
  await noMail?.close();
  await catcher?.close();
  await dropTestDatabase();
});

/** The reset link mailed to an address, as its owner finds it. */
async function mailedResetLink(email: string): Promise<string> {
  const [mail] = await catcher.waitFor(1, (m) => m.to.includes(email));
  expect(mail!.subject).toMatch(/reset/i);
  const link = mail!.text.match(/\S+\/reset-password\/[0-9A-Za-z]+/)?.[0];
  expect(link).toBeDefined();
  return link!;
}
const tokenOf = (link: string) => link.split('/reset-password/')[1]!;

describe('password change', () => {
  test('a wrong current password is 401; a right one keeps this session and ends the others', async () => {
    const email = uniqueEmail();
    await register(h, email);
    const here = await login(h, email);
    const elsewhere = await login(h, email);

    const wrong = await here.client.post('/v1/auth/password', { current_password: 'not my password', new_password: NEW_PASSWORD });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ code: 'invalid_credentials', message: expect.any(String), request_id: expect.any(String) });
    expect((await elsewhere.client.get('/v1/me')).status).toBe(200);

    const changed = await here.client.post('/v1/auth/password', { current_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(changed.status).toBe(204);
    expect((await here.client.get('/v1/me')).status).toBe(200);
    const other = await elsewhere.client.get('/v1/me');
    expect(other.status).toBe(401);
    expect(other.body.code).toBe('unauthenticated');
    expect((await h.api.post('/v1/auth/login', { email, password: PASSWORD })).status).toBe(401);
    expect((await h.api.post('/v1/auth/login', { email, password: NEW_PASSWORD })).status).toBe(200);
  });

  test('the new password follows the registration rules, and an API key may not change it', async () => {
    const account = await signUp(h);
    const short = await account.client.post('/v1/auth/password', { current_password: PASSWORD, new_password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.code).toBe('validation_failed');
    const { secret } = await createApiKey(account);
    const byKey = await h.api.with({ bearer: secret }).post('/v1/auth/password', { current_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(byKey.status).toBe(403);
    expect(byKey.body.code).toBe('forbidden');
    expect((await h.api.post('/v1/auth/login', { email: account.email, password: PASSWORD })).status).toBe(200);
  });
});

describe('sign out everywhere', () => {
  test('every session of the user ends, this one included, and the cookie is cleared', async () => {
    const email = uniqueEmail();
    await register(h, email);
    const here = await login(h, email);
    const elsewhere = await login(h, email);
    const bystander = await signUp(h, 'bystander');

    const out = await here.client.post('/v1/auth/logout-all');
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toMatch(/^slk_session=;/);
    for (const session of [here, elsewhere]) {
      const reply = await session.client.get('/v1/me');
      expect(reply.status).toBe(401);
      expect(reply.body.code).toBe('unauthenticated');
    }
    expect((await bystander.client.get('/v1/me')).status).toBe(200);
    expect((await login(h, email)).cookie).toBeDefined();
  });
});

describe('password reset by mailed link', () => {
  test('the mailed link sets the password once and ends every session', async () => {
    const email = uniqueEmail('forgetful');
    await register(h, email);
    const signedIn = await login(h, email);

    const asked = await h.api.post('/v1/auth/password-reset', { email: email.toUpperCase() });
    expect(asked.status).toBe(202);
    const link = await mailedResetLink(email);
    expect(link).toMatch(new RegExp(`^${DASHBOARD_ORIGIN}/reset-password/[0-9A-Za-z]{43,}$`));
    expect(JSON.stringify(await PasswordReset.find().lean())).not.toContain(tokenOf(link));

    const reset = await h.api.post(`/v1/auth/password-reset/${tokenOf(link)}`, { password: NEW_PASSWORD });
    expect(reset.status).toBe(204);
    expect((await signedIn.client.get('/v1/me')).status).toBe(401);
    expect((await h.api.post('/v1/auth/login', { email, password: PASSWORD })).status).toBe(401);
    expect((await h.api.post('/v1/auth/login', { email, password: NEW_PASSWORD })).status).toBe(200);

    const again = await h.api.post(`/v1/auth/password-reset/${tokenOf(link)}`, { password: 'yet another passphrase' });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('not_found');
    expect((await h.api.post('/v1/auth/login', { email, password: NEW_PASSWORD })).status).toBe(200);
  });

  test('an unknown address gets the same answer and no mail', async () => {
    const known = uniqueEmail('known');
    const unknown = uniqueEmail('unknown');
    await register(h, known);
    const forUnknown = await h.api.post('/v1/auth/password-reset', { email: unknown });
    const forKnown = await h.api.post('/v1/auth/password-reset', { email: known });
    expect([forUnknown.status, forKnown.status]).toEqual([202, 202]);
    expect(forUnknown.body).toEqual(forKnown.body);
    await mailedResetLink(known);
    expect(catcher.mails.filter((m) => m.to.includes(unknown))).toEqual([]);
  });

  test('a link expires after an hour', async () => {
    const email = uniqueEmail('slow');
    await register(h, email);
    expect((await h.api.post('/v1/auth/password-reset', { email })).status).toBe(202);
    const link = await mailedResetLink(email);
    const user = await User.findOne({ email }).lean();
    const [stored] = await PasswordReset.find({ userId: user!._id }).lean();
    expect(stored!.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(3_600_000);
    expect(stored!.expiresAt.getTime() - Date.now()).toBeGreaterThan(3_500_000);
    await PasswordReset.updateOne({ _id: stored!._id }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const reply = await h.api.post(`/v1/auth/password-reset/${tokenOf(link)}`, { password: NEW_PASSWORD });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
    expect((await h.api.post('/v1/auth/login', { email, password: PASSWORD })).status).toBe(200);
  });

  test('requests for one address are rate-limited, and other addresses are not held up', async () => {
    const flooded = uniqueEmail('inbox');
    await register(h, flooded);
    expect((await h.api.post('/v1/auth/password-reset', { email: flooded })).status).toBe(202);
    expect((await h.api.post('/v1/auth/password-reset', { email: flooded })).status).toBe(202);
    const third = await h.api.post('/v1/auth/password-reset', { email: flooded });
    expect(third.status).toBe(429);
    expect(third.body.code).toBe('rate_limited');
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await h.api.post('/v1/auth/password-reset', { email: uniqueEmail('other') })).status).toBe(202);
    await catcher.waitFor(2, (m) => m.to.includes(flooded));
    expect(catcher.mails.filter((m) => m.to.includes(flooded))).toHaveLength(2);
  });

  test('without SMTP_URL the request is 501 email_unavailable', async () => {
    const email = uniqueEmail();
    await register(noMail, email);
    const reply = await noMail.api.post('/v1/auth/password-reset', { email });
    expect(reply.status).toBe(501);
    expect(reply.body).toEqual({ code: 'email_unavailable', message: expect.stringMatching(/SMTP_URL/), request_id: expect.any(String) });
  });
});
