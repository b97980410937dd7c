import { Membership } from '../../src/shared/features/accounts/model.js';
import { PASSWORD, addMember, createApiKey, login, register, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { DASHBOARD_ORIGIN, dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { startMailCatcher, type MailCatcher } from '../support/smtp.js';

let h: Harness;
let catcher: MailCatcher;

beforeAll(async () => {
  catcher = await startMailCatcher();
  // every account here registers from one address: the registration and login limits are not what these tests are about
  h = await startHarness({ SMTP_URL: catcher.url, RATE_LIMIT_REGISTER: '1000', RATE_LIMIT_LOGIN_ADDRESS: '1000' });
});
afterAll(async () => {
  await h?.close();
  await catcher?.close();
  await dropTestDatabase();
});

async function invite(owner: Account, email: string, role = 'member') {
  const reply = await owner.client.post('/v1/members', { email, role });
  expect(reply.status).toBe(201);
  return reply.body as { id: string; invite_token: string; invite_url: string; invite_mailed: boolean };
}

/** The invite link mailed to an address, as the person finds it in their inbox. */
async function mailedInviteLink(email: string): Promise<string> {
  const [mail] = await catcher.waitFor(1, (m) => m.to.includes(email) && /invited/i.test(m.subject));
  const link = mail!.text.match(/\S+\/invites\/[0-9A-Za-z]+/)?.[0];
  expect(link).toBeDefined();
  return link!;
}

const tokenOf = (link: string) => link.split('/invites/')[1]!;
const memberOf = async (owner: Account, email: string) => (await owner.client.get('/v1/members')).body.data.find((m: { email: string }) => m.email === email);

describe('account pre-hijacking through invites', () => {
  test('an attacker who registered the address first does not join; the real person, with the mailed token, does', async () => {
    const owner = await signUp(h, 'victim-owner');
    const address = uniqueEmail('newhire');
    // the attacker claims the address before the organisation invites it
    await register(h, address, 'attacker org');
    const attacker = await login(h, address);

    const invited = await invite(owner, address, 'admin');
    expect(invited.invite_url).toBe(`${DASHBOARD_ORIGIN}/invites/${invited.invite_token}`);
    expect(invited.invite_token).toMatch(/^[0-9A-Za-z]{43,}$/);
    expect(invited.invite_mailed).toBe(true);

    // signing in again does not accept the invite
    const again = await login(h, address);
    expect(again.organization.id).toBe(attacker.organization.id);
    expect((await again.client.get('/v1/me')).body.organization.id).not.toBe(owner.organization.id);
    expect(await memberOf(owner, address)).toMatchObject({ status: 'invited', user_id: null });

    // without the token there is nothing to accept with
    for (const guess of ['0'.repeat(43), 'A'.repeat(43)]) {
      const reply = await attacker.client.post(`/v1/invites/${guess}/accept`);
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ code: 'not_found', message: expect.any(String), request_id: expect.any(String) });
    }
    const guessed = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token: 'B'.repeat(43) });
    expect(guessed.status).toBe(404);
    expect(guessed.body.code).toBe('not_found');
    expect(await memberOf(owner, address)).toMatchObject({ status: 'invited', user_id: null });

    // the real person owns the inbox: the reset link takes the account back (ending the attacker's sessions)…
    expect((await h.api.post('/v1/auth/password-reset', { email: address })).status).toBe(202);
    const [resetMail] = await catcher.waitFor(1, (m) => m.to.includes(address) && /reset/i.test(m.subject));
    const resetToken = resetMail!.text.match(/\/reset-password\/([0-9A-Za-z]+)/)![1]!;
    const ownPassword = 'the real newhire chose this';
    expect((await h.api.post(`/v1/auth/password-reset/${resetToken}`, { password: ownPassword })).status).toBe(204);
    expect((await attacker.client.get('/v1/me')).status).toBe(401);

    // …and the mailed invite link joins the organisation with the invited role
    const link = await mailedInviteLink(address);
    expect(link).toBe(invited.invite_url);
    const joined = await h.api.post('/v1/auth/register', { email: address, password: ownPassword, invite_token: tokenOf(link) });
    expect(joined.status).toBe(201);
    expect(joined.body).toMatchObject({ user: { email: address }, organization: { id: owner.organization.id }, role: 'admin' });
    const signedIn = await login(h, address, ownPassword);
    expect(signedIn.organization.id).toBe(owner.organization.id);
    expect((await signedIn.client.get('/v1/me')).body.role).toBe('admin');
    expect(await memberOf(owner, address)).toMatchObject({ status: 'active', role: 'admin', user_id: joined.body.user.id });
  });

  test('registering as an invited address that has an account needs that account’s password', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail('taken');
    await register(h, address);
    const { invite_token } = await invite(owner, address);
    const wrong = await h.api.post('/v1/auth/register', { email: address, password: 'somebody else entirely', invite_token });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('invalid_credentials');
    expect(await memberOf(owner, address)).toMatchObject({ status: 'invited' });
  });

  test('an invited person registers with the token from the invite answer and joins with the role', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail('fresh');
    const { invite_token, id } = await invite(owner, address, 'admin');
    const joined = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, name: 'Grace', invite_token });
    expect(joined.status).toBe(201);
    expect(joined.body).toMatchObject({ user: { email: address, name: 'Grace' }, organization: { id: owner.organization.id }, role: 'admin' });
    expect(await memberOf(owner, address)).toMatchObject({ id, status: 'active', role: 'admin' });
    expect((await login(h, address)).organization.id).toBe(owner.organization.id);
  });

  test('registering with an invited address but without the token creates a new organisation, and the invite stays pending', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail('tokenless');
    await invite(owner, address);
    const reply = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, organization: 'Elsewhere' });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ organization: { name: 'Elsewhere' }, role: 'owner' });
    expect(reply.body.organization.id).not.toBe(owner.organization.id);
    expect(await memberOf(owner, address)).toMatchObject({ status: 'invited', user_id: null });
  });

  test('login never accepts an invite, not even for an account without an organisation', async () => {
    const owner = await signUp(h);
    const removed = await addMember(h, owner, 'member');
    expect((await owner.client.delete(`/v1/members/${removed.memberId}`)).status).toBe(204);
    const { invite_token } = await invite(owner, removed.email);
    const reply = await h.api.post('/v1/auth/login', { email: removed.email, password: PASSWORD });
    expect(reply.status).toBe(403);
    expect(reply.body.code).toBe('forbidden');
    expect(await memberOf(owner, removed.email)).toMatchObject({ status: 'invited' });
    // the token (with the account's password) brings them back
    const back = await h.api.post('/v1/auth/register', { email: removed.email, password: PASSWORD, invite_token });
    expect(back.status).toBe(201);
    expect(back.body).toMatchObject({ user: { id: removed.user.id }, organization: { id: owner.organization.id }, role: 'member' });
  });
});

describe('invite tokens', () => {
  test('the member list never shows a token again; only its hash is stored', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail();
    const { invite_token, id } = await invite(owner, address);
    const list = await owner.client.get('/v1/members');
    expect(list.text).not.toContain(invite_token);
    expect(Object.keys(list.body.data.find((m: { id: string }) => m.id === id)).sort()).toEqual(['created_at', 'email', 'id', 'name', 'role', 'status', 'user_id']);
    const stored = await Membership.findById(id).lean();
    expect(JSON.stringify(stored)).not.toContain(invite_token);
    expect(stored!.inviteExpiresAt!.getTime() - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(stored!.inviteExpiresAt!.getTime() - Date.now()).toBeLessThanOrEqual(7 * 86_400_000);
  });

  test('a token is single-use', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail();
    const { invite_token } = await invite(owner, address);
    expect((await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token })).status).toBe(201);
    const replay = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token });
    expect(replay.status).toBe(404);
    expect(replay.body.code).toBe('not_found');
    const signedIn = await login(h, address);
    expect((await signedIn.client.post(`/v1/invites/${invite_token}/accept`)).status).toBe(404);
  });

  test('a token expires after 7 days', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail();
    const { invite_token, id } = await invite(owner, address);
    await Membership.updateOne({ _id: id }, { $set: { inviteExpiresAt: new Date(Date.now() - 1000) } });
    const reply = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
    expect(await memberOf(owner, address)).toMatchObject({ status: 'invited' });
  });

  test('a withdrawn invite’s token names nothing', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail();
    const { invite_token, id } = await invite(owner, address);
    expect((await owner.client.delete(`/v1/members/${id}`)).status).toBe(204);
    const reply = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token });
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
  });

  test('a token works only for its own address, and stays usable by it', async () => {
    const owner = await signUp(h);
    const address = uniqueEmail('invited');
    const { invite_token } = await invite(owner, address, 'admin');
    const forwarded = await h.api.post('/v1/auth/register', { email: uniqueEmail('forwarded'), password: PASSWORD, invite_token });
    expect(forwarded.status).toBe(404);
    expect(forwarded.body.code).toBe('not_found');
    const stranger = await signUp(h, 'stranger');
    expect((await stranger.client.post(`/v1/invites/${invite_token}/accept`)).status).toBe(404);
    expect((await stranger.client.get('/v1/me')).body.organization.id).toBe(stranger.organization.id);
    const rightful = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token });
    expect(rightful.status).toBe(201);
    expect(rightful.body.role).toBe('admin');
  });
});

describe('an existing account accepts while signed in', () => {
  test('the session moves to the joined organisation, and login lands there afterwards', async () => {
    const owner = await signUp(h);
    const person = await signUp(h, 'has-org');
    const { invite_token } = await invite(owner, person.email, 'admin');
    const accepted = await person.client.post(`/v1/invites/${invite_token}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ user: { id: person.user.id }, organization: { id: owner.organization.id }, role: 'admin' });
    expect((await person.client.get('/v1/me')).body).toMatchObject({ organization: { id: owner.organization.id }, role: 'admin' });
    expect((await login(h, person.email)).organization.id).toBe(owner.organization.id);
    expect(await memberOf(owner, person.email)).toMatchObject({ status: 'active', user_id: person.user.id });
  });

  test('with an API key, accepting is refused (it is the person’s own act)', async () => {
    const owner = await signUp(h);
    const person = await signUp(h, 'scripted');
    const { secret } = await createApiKey(person);
    const { invite_token } = await invite(owner, person.email);
    const reply = await h.api.with({ bearer: secret }).post(`/v1/invites/${invite_token}/accept`);
    expect(reply.status).toBe(403);
    expect(reply.body.code).toBe('forbidden');
    expect(await memberOf(owner, person.email)).toMatchObject({ status: 'invited' });
  });

  test('without a credential, accepting is 401', async () => {
    const owner = await signUp(h);
    const { invite_token } = await invite(owner, uniqueEmail());
    const reply = await h.api.post(`/v1/invites/${invite_token}/accept`);
    expect(reply.status).toBe(401);
    expect(reply.body.code).toBe('unauthenticated');
  });
});

describe('tenant isolation', () => {
  test('an invite is seen, withdrawn and joined only in the organisation that made it', async () => {
    const first = await signUp(h, 'first');
    const second = await signUp(h, 'second');
    const address = uniqueEmail('shared');
    const mine = await invite(first, address, 'member');
    expect(await memberOf(second, address)).toBeUndefined();
    const theirs = await second.client.delete(`/v1/members/${mine.id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('not_found');
    const joined = await h.api.post('/v1/auth/register', { email: address, password: PASSWORD, invite_token: mine.invite_token });
    expect(joined.body.organization.id).toBe(first.organization.id);
    expect(await memberOf(second, address)).toBeUndefined();
  });
});
