import mongoose from 'mongoose';
import { type Harness, useHarness } from '../support/harness.js';
import { addMember, createApiKey, createProject, login, PASSWORD, signUp } from '../support/factories/accounts.js';

let h: Harness;
useHarness((started) => (h = started));

describe('API keys', () => {
  test('the secret is shown once, works as Bearer without Origin, and is stored only as a hash', async () => {
    const owner = await signUp(h);
    const created = await owner.client.post('/v1/api-keys', { name: 'deploy script', role: 'member' });
    expect(created.status).toBe(201);
    const { secret, id, prefix } = created.body;
    expect(secret).toMatch(/^slk_[0-9A-Za-z]{43,}$/);
    expect(secret.startsWith(prefix)).toBe(true);

    const listed = await owner.client.get('/v1/api-keys');
    expect(listed.body.data).toEqual([expect.objectContaining({ id, name: 'deploy script', role: 'member', prefix })]);
    expect(listed.text).not.toContain(secret);

    const me = await h.api.with({ bearer: secret }).get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { id: owner.user.id }, role: 'member' });

    const stored = await mongoose.connection.db!.collection('apikeys').find({}).toArray();
    const dump = JSON.stringify(stored);
    expect(dump).not.toContain(secret);
    expect(dump).not.toContain(secret.slice(12));
    expect(h.logs.text).not.toContain(secret);
    expect(h.logs.text).not.toContain(secret.slice(12));

    const later = await h.api.with({ bearer: secret }).get('/v1/api-keys');
    expect(later.status).toBe(403);
    const listedAgain = await owner.client.get('/v1/api-keys');
    expect(listedAgain.body.data[0].last_used_at).not.toBeNull();
  });

  test('a revoked key answers 401 at once, and an unknown one too', async () => {
    const owner = await signUp(h);
    const key = await createApiKey(owner);
    const client = h.api.with({ bearer: key.secret });
    expect((await client.get('/v1/projects')).status).toBe(200);
    expect((await owner.client.delete(`/v1/api-keys/${key.id}`)).status).toBe(204);
    const after = await client.get('/v1/projects');
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('unauthenticated');
    expect((await owner.client.delete(`/v1/api-keys/${key.id}`)).status).toBe(404);
    expect((await h.api.with({ bearer: 'slk_notakey' }).get('/v1/projects')).status).toBe(401);
    expect((await h.api.with({ authorization: 'Basic Zm9vOmJhcg==' }).get('/v1/projects')).status).toBe(401);
  });

  test('a key never outranks its creator, and loses power when the creator is demoted', async () => {
    const owner = await signUp(h);
    const admin = await addMember(h, owner, 'admin');
    const refused = await admin.client.post('/v1/api-keys', { name: 'too strong', role: 'owner' });
    expect(refused.status).toBe(403);
    const key = await createApiKey(admin, 'admin');
    const client = h.api.with({ bearer: key.secret });
    expect((await client.get('/v1/api-keys')).status).toBe(200);
    expect((await owner.client.patch(`/v1/members/${admin.memberId}`, { role: 'member' })).status).toBe(200);
    expect((await client.get('/v1/api-keys')).status).toBe(403);
    expect((await client.get('/v1/projects')).status).toBe(200);
    expect((await owner.client.delete(`/v1/members/${admin.memberId}`)).status).toBe(204);
    expect((await client.get('/v1/projects')).status).toBe(401);
    expect((await owner.client.get('/v1/api-keys')).body.data.map((k: { id: string }) => k.id)).not.toContain(key.id);

    // Inviting the same person back (who rejoins with the invite's token and their password) does not bring the old key back.
    const invite = await owner.client.post('/v1/members', { email: admin.email, role: 'admin' });
    expect(invite.status).toBe(201);
    expect((await h.api.post('/v1/auth/register', { email: admin.email, password: PASSWORD, invite_token: invite.body.invite_token })).status).toBe(201);
    await login(h, admin.email);
    expect((await client.get('/v1/projects')).status).toBe(401);
  });
});

describe('DSNs', () => {
  test('a project comes with a DSN whose string carries the public key, the ingest host and the numeric project number', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner);
    expect(project.number).toEqual(expect.any(Number));
    const dsns = await owner.client.get(`/v1/projects/${project.id}/dsns`);
    expect(dsns.status).toBe(200);
    expect(dsns.body.data).toHaveLength(1);
    const [dsn] = dsns.body.data;
    expect(dsn.public_key).toMatch(/^[0-9a-f]{32}$/);
    expect(dsn.dsn).toBe(`http://${dsn.public_key}@localhost:8081/${project.number}`);
    expect(dsn.otlp).toEqual({ endpoint: 'http://localhost:8081', headers: { Authorization: `Bearer ${dsn.public_key}` } });
  });

  test('issue and revoke; the revoked DSN leaves the list and stops authenticating', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner);
    const issued = await owner.client.post(`/v1/projects/${project.id}/dsns`, { label: 'browser' });
    expect(issued.status).toBe(201);
    expect(issued.body.label).toBe('browser');
    const dsnClient = h.api.with({ authorization: `DSN ${issued.body.public_key}` });
    expect((await dsnClient.get('/v1/projects')).status).toBe(403);

    expect((await owner.client.delete(`/v1/projects/${project.id}/dsns/${issued.body.id}`)).status).toBe(204);
    const listed = await owner.client.get(`/v1/projects/${project.id}/dsns`);
    expect(listed.body.data.map((d: { id: string }) => d.id)).not.toContain(issued.body.id);
    const revoked = await dsnClient.get('/v1/projects');
    expect(revoked.status).toBe(401);
    expect((await owner.client.delete(`/v1/projects/${project.id}/dsns/${issued.body.id}`)).status).toBe(404);
  });

  test('a DSN is refused on every read route with 403 forbidden', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner);
    const [dsn] = (await owner.client.get(`/v1/projects/${project.id}/dsns`)).body.data;
    const client = h.api.with({ authorization: `DSN ${dsn.public_key}` });
    for (const path of ['/v1/me', '/v1/members', '/v1/projects', `/v1/projects/${project.id}`, `/v1/projects/${project.id}/dsns`, '/v1/api-keys', '/v1/settings', '/v1/audit-log']) {
      const reply = await client.get(path);
      expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 403, code: 'forbidden' });
    }
  });
});

describe('session-replay switch', () => {
  test('turns capture on and off and shows in the project', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner);
    expect((await owner.client.get(`/v1/projects/${project.id}`)).body.session_replay).toEqual({ enabled: false });
    const on = await owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: true });
    expect(on.status).toBe(200);
    expect(on.body.session_replay).toEqual({ enabled: true });
    expect((await owner.client.get(`/v1/projects/${project.id}`)).body.session_replay).toEqual({ enabled: true });
    const bad = await owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
  });
});
