import { randomBytes } from 'node:crypto';
import { DASHBOARD_ORIGIN, type Harness } from '../harness.js';
import { sessionCookieOf, type Client } from '../http.js';

export const uniqueEmail = (label = 'user') => `${label}-${randomBytes(5).toString('hex')}@example.test`;
export const PASSWORD = 'correct horse battery staple';

export interface Account {
  email: string;
  password: string;
  /** Signed in with the session cookie and the dashboard Origin. */
  client: Client;
  cookie: string;
  user: { id: string };
  organization: { id: string; name: string };
}

export async function register(h: Harness, email = uniqueEmail(), organization?: string) {
  const reply = await h.api.post('/v1/auth/register', { email, password: PASSWORD, name: 'Test User', ...(organization && { organization }) });
  if (reply.status !== 201) throw new Error(`register failed: ${reply.status} ${reply.text}`);
  return reply.body;
}

export async function login(h: Harness, email: string, password = PASSWORD): Promise<Account> {
  const reply = await h.api.post('/v1/auth/login', { email, password });
  if (reply.status !== 200) throw new Error(`login failed: ${reply.status} ${reply.text}`);
  const cookie = sessionCookieOf(reply.headers)!;
  return { email, password, cookie, client: h.api.with({ cookie, origin: DASHBOARD_ORIGIN }), user: reply.body.user, organization: reply.body.organization };
}

/** A new organisation with its owner signed in. */
export async function signUp(h: Harness, label = 'owner'): Promise<Account> {
  const email = uniqueEmail(label);
  await register(h, email);
  return login(h, email);
}

/** Invites an email into the owner's organisation with a role, registers it with the invite's token and signs it in. */
export async function addMember(h: Harness, owner: Account, role: 'owner' | 'admin' | 'member'): Promise<Account & { memberId: string }> {
  const email = uniqueEmail(role);
  const invite = await owner.client.post('/v1/members', { email, role });
  if (invite.status !== 201) throw new Error(`invite failed: ${invite.status} ${invite.text}`);
  const joined = await h.api.post('/v1/auth/register', { email, password: PASSWORD, name: 'Test User', invite_token: invite.body.invite_token });
  if (joined.status !== 201) throw new Error(`register with invite failed: ${joined.status} ${joined.text}`);
  return { ...(await login(h, email)), memberId: invite.body.id };
}

export async function createProject(account: Account, name = `project-${randomBytes(3).toString('hex')}`) {
  const reply = await account.client.post('/v1/projects', { name });
  if (reply.status !== 201) throw new Error(`project failed: ${reply.status} ${reply.text}`);
  return reply.body as { id: string; number: number; name: string };
}

export async function createApiKey(account: Account, role?: 'owner' | 'admin' | 'member') {
  const reply = await account.client.post('/v1/api-keys', { name: 'ci', ...(role && { role }) });
  if (reply.status !== 201) throw new Error(`api key failed: ${reply.status} ${reply.text}`);
  return reply.body as { id: string; secret: string; role: string };
}
