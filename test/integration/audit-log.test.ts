import { type Harness, useHarness } from '../support/harness.js';
import { PASSWORD, addMember, createProject, login, signUp, uniqueEmail } from '../support/factories/accounts.js';

let h: Harness;
useHarness((started) => (h = started));

test('each audited action leaves an entry with actor, action, target, time and the request id', async () => {
  const started = Date.now();
  const owner = await signUp(h);
  const requestIdOf = async (reply: Promise<{ headers: Headers; status: number }>) => {
    const r = await reply;
    expect(r.status).toBeLessThan(300);
    return r.headers.get('x-request-id')!;
  };
  const project = await createProject(owner);
  const dsn = await owner.client.post(`/v1/projects/${project.id}/dsns`, { label: 'second' });
  const expected: Array<{ action: string; target: { type: string; id: string }; request_id?: string }> = [
    { action: 'project.create', target: { type: 'project', id: project.id } },
    { action: 'dsn.issue', target: { type: 'dsn', id: dsn.body.id }, request_id: dsn.headers.get('x-request-id')! },
  ];
  expected.push({ action: 'dsn.revoke', target: { type: 'dsn', id: dsn.body.id }, request_id: await requestIdOf(owner.client.delete(`/v1/projects/${project.id}/dsns/${dsn.body.id}`)) });
  expected.push({ action: 'project.session_replay', target: { type: 'project', id: project.id }, request_id: await requestIdOf(owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: true })) });
  const key = await owner.client.post('/v1/api-keys', { name: 'audited' });
  expected.push({ action: 'api_key.create', target: { type: 'api_key', id: key.body.id }, request_id: key.headers.get('x-request-id')! });
  expected.push({ action: 'api_key.revoke', target: { type: 'api_key', id: key.body.id }, request_id: await requestIdOf(owner.client.delete(`/v1/api-keys/${key.body.id}`)) });
  expected.push({ action: 'settings.update', target: { type: 'organization', id: owner.organization.id }, request_id: await requestIdOf(owner.client.patch('/v1/settings', { retention_days: 90 })) });
  const invite = await owner.client.post('/v1/members', { email: uniqueEmail(), role: 'member' });
  expected.push({ action: 'member.invite', target: { type: 'member', id: invite.body.id }, request_id: invite.headers.get('x-request-id')! });
  expected.push({ action: 'member.role_change', target: { type: 'member', id: invite.body.id }, request_id: await requestIdOf(owner.client.patch(`/v1/members/${invite.body.id}`, { role: 'admin' })) });
  expected.push({ action: 'member.remove', target: { type: 'member', id: invite.body.id }, request_id: await requestIdOf(owner.client.delete(`/v1/members/${invite.body.id}`)) });
  const second = await login(h, owner.email);
  expected.push({ action: 'session.logout', target: { type: 'session', id: expect.any(String) }, request_id: await requestIdOf(second.client.post('/v1/auth/logout')) });

  const entries: any[] = [];
  let cursor: string | null = null;
  do {
    const page: any = await owner.client.get(`/v1/audit-log?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
    expect(page.status).toBe(200);
    entries.push(...page.body.data);
    cursor = page.body.next_cursor;
  } while (cursor);

  for (const want of expected) {
    const entry = entries.find((e) => e.action === want.action && (want.target.id === undefined || e.target.type === want.target.type));
    expect(entry).toMatchObject({ action: want.action, target: want.target, actor: { type: 'user', id: owner.user.id }, ...(want.request_id && { request_id: want.request_id }) });
    expect(Date.parse(entry.at)).toBeGreaterThanOrEqual(started - 1000);
  }
  expect(entries.filter((e) => e.action === 'session.login')).toHaveLength(2);
  expect(entries.find((e) => e.action === 'settings.update').details).toEqual({ retention_days: { from: 30, to: 90 } });
  const times = entries.map((e) => Date.parse(e.at));
  expect([...times].sort((a, b) => b - a)).toEqual(times);
});

test('an invite accepted with its token, at registration or by an account coming back, is recorded as a join', async () => {
  const owner = await signUp(h);
  const joined = await addMember(h, owner, 'member');
  const removedEarlier = await addMember(h, owner, 'member');
  expect((await owner.client.delete(`/v1/members/${removedEarlier.memberId}`)).status).toBe(204);
  const again = await owner.client.post('/v1/members', { email: removedEarlier.email, role: 'member' });
  const back = await h.api.post('/v1/auth/register', { email: removedEarlier.email, password: PASSWORD, invite_token: again.body.invite_token });
  expect(back.status).toBe(201);
  const joins = (await owner.client.get('/v1/audit-log?action=member.join')).body.data;
  expect(joins).toEqual([
    expect.objectContaining({ actor: { type: 'user', id: removedEarlier.user.id }, target: { type: 'member', id: again.body.id } }),
    expect.objectContaining({ actor: { type: 'user', id: removedEarlier.user.id }, target: { type: 'member', id: removedEarlier.memberId } }),
    expect.objectContaining({ actor: { type: 'user', id: joined.user.id }, target: { type: 'member', id: joined.memberId } }),
  ]);
});

test('the trail is read-only, admin-only and records an API key as the actor when one was used', async () => {
  const owner = await signUp(h);
  const member = await addMember(h, owner, 'member');
  expect((await member.client.get('/v1/audit-log')).status).toBe(403);
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) expect((await owner.client.request(method, '/v1/audit-log', {})).status).toBe(404);
  const key = await owner.client.post('/v1/api-keys', { name: 'scripted' });
  const project = await h.api.with({ bearer: key.body.secret }).post('/v1/projects', { name: 'from a script' });
  expect(project.status).toBe(201);
  const entries = (await owner.client.get('/v1/audit-log?action=project.create')).body.data;
  expect(entries).toEqual([expect.objectContaining({ actor: { type: 'api_key', id: key.body.id }, target: { type: 'project', id: project.body.id } })]);
});
