import { Types } from 'mongoose';
import { type Harness, useHarness } from '../support/harness.js';
import { addMember, createApiKey, createProject, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import type { Reply } from '../support/http.js';

let h: Harness;
useHarness((started) => (h = started));

describe('roles', () => {
  let owner: Account;
  let admin: Account & { memberId: string };
  let member: Account & { memberId: string };
  let projectId: string;

  beforeAll(async () => {
    owner = await signUp(h);
    admin = await addMember(h, owner, 'admin');
    member = await addMember(h, owner, 'member');
    projectId = (await createProject(owner)).id;
  });

  const reads = () => ['/v1/me', '/v1/members', '/v1/projects', `/v1/projects/${projectId}`, `/v1/projects/${projectId}/dsns`, '/v1/settings'];

  test('every role reads the organisation', async () => {
    for (const account of [owner, admin, member]) {
      for (const path of reads()) expect({ path, status: (await account.client.get(path)).status }).toEqual({ path, status: 200 });
    }
  });

  test('a member may not change the organisation', async () => {
    const attempts: Array<() => Promise<Reply>> = [
      () => member.client.post('/v1/projects', { name: 'nope' }),
      () => member.client.post(`/v1/projects/${projectId}/dsns`, {}),
      () => member.client.put(`/v1/projects/${projectId}/session-replay`, { enabled: true }),
      () => member.client.get('/v1/api-keys'),
      () => member.client.post('/v1/api-keys', { name: 'x' }),
      () => member.client.patch('/v1/settings', { retention_days: 7 }),
      () => member.client.post('/v1/members', { email: uniqueEmail(), role: 'member' }),
      () => member.client.get('/v1/audit-log'),
    ];
    for (const attempt of attempts) {
      const reply = await attempt();
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
  });

  test('an admin manages projects, keys, settings and members, but not owners', async () => {
    expect((await admin.client.post('/v1/projects', { name: 'by admin' })).status).toBe(201);
    expect((await admin.client.patch('/v1/settings', { retention_days: 14 })).status).toBe(200);
    expect((await admin.client.get('/v1/audit-log')).status).toBe(200);
    const invited = await admin.client.post('/v1/members', { email: uniqueEmail(), role: 'admin' });
    expect(invited.status).toBe(201);
    expect((await admin.client.post('/v1/members', { email: uniqueEmail(), role: 'owner' })).status).toBe(403);
    const ownerMembership = (await owner.client.get('/v1/members')).body.data.find((m: { email: string }) => m.email === owner.email);
    expect((await admin.client.patch(`/v1/members/${ownerMembership.id}`, { role: 'member' })).status).toBe(403);
    expect((await admin.client.delete(`/v1/members/${ownerMembership.id}`)).status).toBe(403);
    expect((await admin.client.delete(`/v1/members/${invited.body.id}`)).status).toBe(204);
  });

  test('the last owner cannot be demoted or removed; with a second owner they can', async () => {
    const solo = await signUp(h);
    const mine = (await solo.client.get('/v1/members')).body.data[0];
    const demote = await solo.client.patch(`/v1/members/${mine.id}`, { role: 'admin' });
    expect(demote.status).toBe(409);
    expect(demote.body.code).toBe('conflict');
    expect((await solo.client.delete(`/v1/members/${mine.id}`)).status).toBe(409);
    const second = await addMember(h, solo, 'owner');
    expect((await second.client.patch(`/v1/members/${mine.id}`, { role: 'admin' })).status).toBe(200);
    expect((await solo.client.get('/v1/me')).body.role).toBe('admin');
  });

  test('an invited email joins the inviting organisation with the invited role; removal ends its sessions', async () => {
    const joined = await addMember(h, owner, 'member');
    const me = await joined.client.get('/v1/me');
    expect(me.body).toMatchObject({ organization: { id: owner.organization.id }, role: 'member' });
    const members = (await owner.client.get('/v1/members')).body.data;
    expect(members.find((m: { email: string }) => m.email === joined.email)).toMatchObject({ status: 'active', role: 'member' });
    expect((await owner.client.delete(`/v1/members/${joined.memberId}`)).status).toBe(204);
    expect((await joined.client.get('/v1/me')).status).toBe(401);
  });

  // inviting says nothing about other organisations' members: only the invite's token decides who joins
  test('a member of another organisation can be invited, and joins a second organisation with the token', async () => {
    const other = await signUp(h);
    const reply = await owner.client.post('/v1/members', { email: other.email, role: 'member' });
    expect(reply.status).toBe(201);
    expect((await other.client.get('/v1/me')).body.organization.id).toBe(other.organization.id);
    const accepted = await other.client.post(`/v1/invites/${reply.body.invite_token}/accept`);
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ organization: { id: owner.organization.id }, role: 'member' });
    const theirOwn = (await other.client.get('/v1/members')).body.data.find((m: { email: string }) => m.email === other.email);
    expect(theirOwn).toMatchObject({ status: 'active', role: 'member' });
  });
});

describe('tenant isolation: another organisation’s object answers exactly like a missing one', () => {
  let victim: Account;
  let intruder: Account;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    victim = await signUp(h, 'victim');
    intruder = await signUp(h, 'intruder');
    ids.project = (await createProject(victim)).id;
    ids.dsn = (await victim.client.get(`/v1/projects/${ids.project}/dsns`)).body.data[0].id;
    ids.apiKey = (await createApiKey(victim)).id;
    ids.member = (await addMember(h, victim, 'member')).memberId;
  });

  const missing = () => new Types.ObjectId().toHexString();
  // Every row names its body (undefined for none): Jest reads a callback with more parameters than the row as one taking `done`.
  const routes: Array<[string, string, (id: Record<string, string>) => string, unknown]> = [
    ['GET', 'project', (id) => `/v1/projects/${id.project}`, undefined],
    ['GET', 'project', (id) => `/v1/projects/${id.project}/dsns`, undefined],
    ['POST', 'project', (id) => `/v1/projects/${id.project}/dsns`, {}],
    ['PUT', 'project', (id) => `/v1/projects/${id.project}/session-replay`, { enabled: true }],
    ['DELETE', 'dsn', (id) => `/v1/projects/${id.project}/dsns/${id.dsn}`, undefined],
    ['DELETE', 'apiKey', (id) => `/v1/api-keys/${id.apiKey}`, undefined],
    ['PATCH', 'member', (id) => `/v1/members/${id.member}`, { role: 'admin' }],
    ['DELETE', 'member', (id) => `/v1/members/${id.member}`, undefined],
  ];

  test.each(routes)('%s on another organisation’s %s', async (method, kind, path, body) => {
    const theirs = await intruder.client.request(method, path(ids), body);
    const absent = await intruder.client.request(method, path({ ...ids, [kind]: missing() }), body);
    const garbage = await intruder.client.request(method, path({ ...ids, [kind]: 'not-an-id' }), body);
    expect(theirs.status).toBe(404);
    for (const reply of [absent, garbage]) {
      expect(reply.status).toBe(theirs.status);
      expect({ ...reply.body, request_id: 'x' }).toEqual({ ...theirs.body, request_id: 'x' });
    }
    expect(theirs.body.code).toBe('not_found');
  });

  test('the victim’s objects are untouched and absent from the intruder’s lists', async () => {
    expect((await victim.client.get(`/v1/projects/${ids.project}`)).body.session_replay.enabled).toBe(false);
    expect((await victim.client.get(`/v1/projects/${ids.project}/dsns`)).body.data).toHaveLength(1);
    expect((await victim.client.get('/v1/api-keys')).body.data.map((k: { id: string }) => k.id)).toContain(ids.apiKey);
    const listings = await Promise.all(['/v1/projects', '/v1/members', '/v1/api-keys', '/v1/audit-log'].map((p) => intruder.client.get(p)));
    for (const listing of listings) expect(listing.text).not.toMatch(new RegExp(`${ids.project}|${ids.apiKey}|${ids.member}|${victim.email}`));
  });
});
