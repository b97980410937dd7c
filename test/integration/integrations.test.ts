/**
 * VCS integrations: a project connected to its repository on GitHub or GitLab, verified against a
 * local HTTP server speaking the two REST APIs (GITHUB_API_URL, GITLAB_API_URL point at it), the
 * token sealed at rest and never answered, and the commit links deployments and releases get.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose, { Types } from 'mongoose';
import { createSecretBox } from '../../src/shared/clients/secret-box.js';
import { ingestErrorEvents } from '../../src/shared/features/issues/store.js';
import { addMember, createProject, signUp, type Account } from '../support/factories/accounts.js';
import { type Harness, useHarness } from '../support/harness.js';
import { answerRecorder } from '../support/http.js';

// ---------------------------------------------------------------------------------------------------------
// The code hosts: GitHub under /github (GET /repos/{owner}/{name}, GET /user), GitLab under /api/v4
// (GET /projects/{url-encoded path}); a wrong token is 401, a repository they do not have 404.

const GITHUB_TOKEN = 'ghp_valid_token_GH12';
const GITLAB_TOKEN = 'glpat-valid-token-GL34';
const GITHUB_WEB = 'https://github.example.test';
const GITLAB_WEB = 'https://gitlab.example.test';

interface HostRequest {
  method: string;
  url: string;
  authorization?: string;
  privateToken?: string;
}
const hostRequests: HostRequest[] = [];

function answer(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function codeHost(req: IncomingMessage, res: ServerResponse) {
  const url = req.url ?? '';
  hostRequests.push({ method: req.method ?? '', url, authorization: req.headers.authorization, privateToken: req.headers['private-token'] as string | undefined });
  if (url.startsWith('/github/')) {
    if (req.headers.authorization !== `Bearer ${GITHUB_TOKEN}`) return answer(res, 401, { message: 'Bad credentials' });
    const path = url.slice('/github'.length);
    if (path === '/repos/acme/shop') return answer(res, 200, { full_name: 'acme/shop', html_url: `${GITHUB_WEB}/acme/shop`, default_branch: 'trunk', private: true });
    if (path === '/repos/acme/flaky') return answer(res, 502, { message: 'Server Error' });
    if (path === '/repos/acme/scripted') return answer(res, 200, { full_name: 'acme/scripted', html_url: 'javascript:alert(document.cookie)', default_branch: 'main' });
    // a proxy or a wrong GITHUB_API_URL: a web page where the API should be
    if (path === '/repos/acme/portal') return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Sign in</title>');
    // what GitHub answers on the paths a malformed "repository" could reach
    if (path === '/repos/acme/shop/issues') return answer(res, 200, []);
    if (path === '/user') return answer(res, 200, { login: 'octocat', html_url: `${GITHUB_WEB}/octocat` });
    return answer(res, 404, { message: 'Not Found' });
  }
  if (url.startsWith('/api/v4/')) {
    if (req.headers['private-token'] !== GITLAB_TOKEN) return answer(res, 401, { message: '401 Unauthorized' });
    if (url === '/api/v4/projects/group%2Fsub%2Fshop') return answer(res, 200, { path_with_namespace: 'group/sub/shop', web_url: `${GITLAB_WEB}/group/sub/shop`, default_branch: 'develop' });
    // a renamed project redirects within the API; a hostile or misconfigured one to another origin
    if (url === '/api/v4/projects/group%2Frenamed') return res.writeHead(301, { location: '/api/v4/projects/group%2Fsub%2Fshop' }).end();
    if (url === '/api/v4/projects/group%2Fmoved') return res.writeHead(302, { location: `http://localhost:${hostPort}/api/v4/projects/group%2Fsub%2Fshop` }).end();
    return answer(res, 404, { message: '404 Project Not Found' });
  }
  return answer(res, 404, { message: 'Not Found' });
}

let host: Server;
let hostPort: number;
const listenHost = (port = 0) =>
  new Promise<void>((resolve) => {
    host = createServer(codeHost);
    host.listen(port, '127.0.0.1', () => {
      hostPort = (host.address() as AddressInfo).port;
      resolve();
    });
  });
const closeHost = () =>
  new Promise<void>((resolve) => {
    host.close(() => resolve());
    host.closeAllConnections();
  });

const dataDir = mkdtempSync(join(tmpdir(), 'sluice-integrations-'));
/** Filled in before the harness starts (hooks run in order): the code hosts' port is known only then. */
const env: Record<string, string> = { DATA_DIR: dataDir };
beforeAll(async () => {
  await listenHost();
  env.GITHUB_API_URL = `http://127.0.0.1:${hostPort}/github`;
  env.GITLAB_API_URL = `http://127.0.0.1:${hostPort}/api/v4`;
});
afterAll(async () => {
  if (host.listening) await closeHost();
  rmSync(dataDir, { recursive: true, force: true });
});

let h: Harness;
let owner: Account;
let stranger: Account;
useHarness((started) => (h = started), env);

/** Every answer the API gave in this file, to show no token is ever in one. */
const { answers, kept } = answerRecorder();
const put = (account: Account, projectId: string, provider: string, body: Record<string, unknown>) => kept(account.client.put(`/v1/projects/${projectId}/integrations/${provider}`, body));
const list = async (account: Account, projectId: string) => (await kept(account.client.get(`/v1/projects/${projectId}/integrations`))).body.data;
const storedFor = (projectId: string) => mongoose.connection.collection('integrations').find({ projectId: new Types.ObjectId(projectId) }).toArray();

beforeAll(async () => {
  owner = await signUp(h);
  stranger = await signUp(h, 'stranger');
});

afterAll(() => {
  // whatever happened above: no answer, no audit entry and no log line carries a token
  for (const token of [GITHUB_TOKEN, GITLAB_TOKEN, 'ghp_wrong_token_0000', 'ghp_second_token_9876']) {
    expect(answers.join('\n')).not.toContain(token);
    expect(h.logs.text).not.toContain(token);
  }
});

describe('GitHub', () => {
  test('PUT verifies the token and repository with the host, keeps the default branch it reports, and never answers the token', async () => {
    const project = await createProject(owner);
    const seen = hostRequests.length;
    const reply = await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      provider: 'github',
      repository: 'acme/shop',
      default_branch: 'trunk',
      repository_url: `${GITHUB_WEB}/acme/shop`,
      token_set: true,
      token_last4: 'GH12',
      verified_at: expect.any(String),
      created_at: reply.body.verified_at,
      updated_at: reply.body.verified_at,
    });
    // one REST call, as GitHub's API wants it
    expect(hostRequests.slice(seen)).toEqual([{ method: 'GET', url: '/github/repos/acme/shop', authorization: `Bearer ${GITHUB_TOKEN}`, privateToken: undefined }]);
    expect(await list(owner, project.id)).toEqual([reply.body]);

    const audit = await kept(owner.client.get('/v1/audit-log'));
    expect(audit.body.data.find((entry: { action: string }) => entry.action === 'integration.set')).toMatchObject({ target: { type: 'project', id: project.id }, details: { provider: 'github', repository: 'acme/shop' } });
    expect(audit.text).not.toContain(GITHUB_TOKEN);
    expect(h.logs.text).not.toContain(GITHUB_TOKEN);
  });

  test('the stored token is sealed with AES-256-GCM under the key generated into DATA_DIR', async () => {
    const project = await createProject(owner);
    expect((await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(200);
    const [stored] = await storedFor(project.id);
    expect(JSON.stringify(stored)).not.toContain(GITHUB_TOKEN);
    expect(stored!.tokenSealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(createSecretBox(h.config).open(stored!.tokenSealed)).toBe(GITHUB_TOKEN);
    // the generated key is the owner's alone
    expect(statSync(join(dataDir, 'encryption.key')).mode & 0o777).toBe(0o600);
    // sealing twice gives two different ciphertexts (a fresh IV each time)
    const box = createSecretBox(h.config);
    expect(box.seal(GITHUB_TOKEN)).not.toBe(box.seal(GITHUB_TOKEN));
    // the first character of the ciphertext carries six whole bits (the last may be only padding)
    const [version, iv, tag, body] = String(stored!.tokenSealed).split('.') as [string, string, string, string];
    const tampered = [version, iv, tag, (body[0] === 'A' ? 'B' : 'A') + body.slice(1)].join('.');
    expect(() => box.open(tampered)).toThrow();
    // the key file was made once, whole, with no draft left beside it
    expect(readdirSync(dataDir).filter((name) => name.startsWith('encryption.key'))).toEqual(['encryption.key']);
    // a configured ENCRYPTION_KEY is used instead, and the generated key cannot open what it sealed
    const configured = createSecretBox({ ...h.config, ENCRYPTION_KEY: 'ab'.repeat(32) });
    expect(configured.open(configured.seal(GITHUB_TOKEN))).toBe(GITHUB_TOKEN);
    expect(() => configured.open(stored!.tokenSealed)).toThrow();
  });

  test('a second PUT replaces the token and branch of the same integration', async () => {
    const project = await createProject(owner);
    const first = await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    const second = await put(owner, project.id, 'github', { repository: 'acme/shop', default_branch: 'release', access_token: GITHUB_TOKEN });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ default_branch: 'release', token_last4: 'GH12', created_at: first.body.created_at });
    expect(Date.parse(second.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.body.updated_at));
    expect(await list(owner, project.id)).toEqual([second.body]);
    expect(await storedFor(project.id)).toHaveLength(1);
  });

  test('a wrong token, an unknown repository or a failing host is 400 validation_failed saying so, and nothing is stored', async () => {
    const project = await createProject(owner);
    const refusals: [Record<string, unknown>, string][] = [
      [{ repository: 'acme/shop', access_token: 'ghp_wrong_token_0000' }, 'GitHub refused the access token (401)'],
      [{ repository: 'acme/unknown', access_token: GITHUB_TOKEN }, 'GitHub knows no repository of that name that this token can see (404)'],
      [{ repository: 'acme/flaky', access_token: GITHUB_TOKEN }, 'GitHub answered 502'],
      [{ repository: 'acme/portal', access_token: GITHUB_TOKEN }, 'GitHub did not answer as its REST API does'],
    ];
    for (const [body, message] of refusals) {
      const reply = await put(owner, project.id, 'github', body);
      expect({ repository: body.repository, status: reply.status, code: reply.body.code }).toEqual({ repository: body.repository, status: 400, code: 'validation_failed' });
      expect(reply.body.message).toContain(message);
    }
    // the previous integration of another project is untouched, this project has none
    expect(await list(owner, project.id)).toEqual([]);
    expect(await storedFor(project.id)).toEqual([]);
  });

  test('the host being down is 400 with a clear message', async () => {
    const project = await createProject(owner);
    const port = hostPort;
    await closeHost();
    try {
      const reply = await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: 'validation_failed' });
      expect(reply.body.message).toContain('GitHub could not be reached');
    } finally {
      await listenHost(port);
    }
    expect(await list(owner, project.id)).toEqual([]);
  });

  test('a GitHub repository is owner/name: other paths on its API are never taken for a repository', async () => {
    const project = await createProject(owner);
    const seen = hostRequests.length;
    // `acme/shop/issues` is GitHub's issue list (200); `acme/../../user` resolves to /user (200, the token's owner)
    for (const repository of ['acme/shop/issues', 'acme/../../user', 'acme/..', 'shop']) {
      const reply = await put(owner, project.id, 'github', { repository, access_token: GITHUB_TOKEN });
      expect({ repository, status: reply.status, code: reply.body.code }).toEqual({ repository, status: 400, code: 'validation_failed' });
    }
    const gitlab = await put(owner, project.id, 'gitlab', { repository: 'group/../sub/shop', access_token: GITLAB_TOKEN });
    expect({ status: gitlab.status, code: gitlab.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(hostRequests.slice(seen)).toEqual([]);
    expect(await list(owner, project.id)).toEqual([]);
  });

  test('bad bodies are refused: a short token, an unknown field', async () => {
    const project = await createProject(owner);
    for (const body of [{ repository: 'acme/shop', access_token: 'short' }, { repository: 'acme/shop', access_token: GITHUB_TOKEN, token_type: 'pat' }, { access_token: GITHUB_TOKEN }]) {
      const reply = await put(owner, project.id, 'github', body);
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    }
  });
});

describe('GitLab', () => {
  test('a project path with subgroups is verified URL-encoded with PRIVATE-TOKEN; its web URL and default branch are kept', async () => {
    const project = await createProject(owner);
    const seen = hostRequests.length;
    const reply = await put(owner, project.id, 'gitlab', { repository: 'group/sub/shop', access_token: GITLAB_TOKEN });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ provider: 'gitlab', repository: 'group/sub/shop', default_branch: 'develop', repository_url: `${GITLAB_WEB}/group/sub/shop`, token_set: true, token_last4: 'GL34' });
    expect(hostRequests.slice(seen)).toEqual([{ method: 'GET', url: '/api/v4/projects/group%2Fsub%2Fshop', authorization: undefined, privateToken: GITLAB_TOKEN }]);
    const [stored] = await storedFor(project.id);
    expect(createSecretBox(h.config).open(stored!.tokenSealed)).toBe(GITLAB_TOKEN);
  });

  test('a wrong token or an unknown project path is refused with the host named', async () => {
    const project = await createProject(owner);
    const wrong = await put(owner, project.id, 'gitlab', { repository: 'group/sub/shop', access_token: 'glpat-wrong-token' });
    expect({ status: wrong.status, code: wrong.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(wrong.body.message).toContain('GitLab refused the access token');
    const unknown = await put(owner, project.id, 'gitlab', { repository: 'group/other', access_token: GITLAB_TOKEN });
    expect({ status: unknown.status, code: unknown.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(unknown.body.message).toContain('GitLab knows no repository');
    expect(await list(owner, project.id)).toEqual([]);
  });
});

describe('what a code host answers is not trusted', () => {
  test('a redirect within the API is followed; one to another origin is refused and the token never goes there', async () => {
    const project = await createProject(owner);
    const renamed = await put(owner, project.id, 'gitlab', { repository: 'group/renamed', access_token: GITLAB_TOKEN });
    expect(renamed.status).toBe(200);
    expect(renamed.body.repository_url).toBe(`${GITLAB_WEB}/group/sub/shop`);

    const seen = hostRequests.length;
    const moved = await put(owner, project.id, 'gitlab', { repository: 'group/moved', access_token: GITLAB_TOKEN });
    expect({ status: moved.status, code: moved.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(moved.body.message).toContain('GitLab redirected to another origin');
    // only the redirecting request reached a server: the other origin never saw PRIVATE-TOKEN
    expect(hostRequests.slice(seen)).toEqual([{ method: 'GET', url: '/api/v4/projects/group%2Fmoved', authorization: undefined, privateToken: GITLAB_TOKEN }]);
  });

  test("a repository page that is not an http(s) URL is not kept: links fall back to the host's own", async () => {
    const project = await createProject(owner);
    const reply = await put(owner, project.id, 'github', { repository: 'acme/scripted', access_token: GITHUB_TOKEN });
    expect(reply.status).toBe(200);
    expect(reply.body.repository_url).toBe('https://github.com/acme/scripted');
  });
});

describe('access', () => {
  test('any provider but github and gitlab is 404 on PUT and DELETE', async () => {
    const project = await createProject(owner);
    expect((await put(owner, project.id, 'bitbucket', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(404);
    expect((await owner.client.delete(`/v1/projects/${project.id}/integrations/bitbucket`)).status).toBe(404);
  });

  test('DELETE removes the integration and its token: 204, then the list is empty and a second DELETE is 404', async () => {
    const project = await createProject(owner);
    expect((await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(200);
    expect((await owner.client.delete(`/v1/projects/${project.id}/integrations/github`)).status).toBe(204);
    expect(await list(owner, project.id)).toEqual([]);
    expect(await storedFor(project.id)).toEqual([]);
    expect((await owner.client.delete(`/v1/projects/${project.id}/integrations/github`)).status).toBe(404);
  });

  test('admins manage integrations; members are refused with 403', async () => {
    const project = await createProject(owner);
    const admin = await addMember(h, owner, 'admin');
    const member = await addMember(h, owner, 'member');
    expect((await put(admin, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(200);
    for (const reply of [
      await kept(member.client.get(`/v1/projects/${project.id}/integrations`)),
      await put(member, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN }),
      await kept(member.client.delete(`/v1/projects/${project.id}/integrations/github`)),
    ]) {
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: 'forbidden' });
    }
    expect(await list(admin, project.id)).toHaveLength(1);
  });

  test("another organisation's project is 404 on every route", async () => {
    const project = await createProject(owner);
    expect((await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(200);
    const seen = hostRequests.length;
    expect((await kept(stranger.client.get(`/v1/projects/${project.id}/integrations`))).status).toBe(404);
    expect((await put(stranger, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN })).status).toBe(404);
    expect((await stranger.client.delete(`/v1/projects/${project.id}/integrations/github`)).status).toBe(404);
    // refused before the host was asked anything
    expect(hostRequests.length).toBe(seen);
    expect(await list(owner, project.id)).toHaveLength(1);
  });
});

describe('commit links', () => {
  const SHA = '0123456789abcdef0123456789abcdef01234567';
  const deploy = async (projectId: string, more: Record<string, unknown> = {}) => {
    const reply = await kept(owner.client.post('/v1/deployments', { project_id: projectId, version: `v-${new Types.ObjectId().toHexString()}`, commit_sha: SHA, ...more }));
    expect(reply.status).toBe(201);
    return reply.body as { id: string; version: string; commit_url: string | null };
  };

  test("a deployment's commit_url is built on the host's web URL: /commit on GitHub, /-/commit on GitLab, null without an integration", async () => {
    const github = await createProject(owner);
    const gitlab = await createProject(owner);
    const none = await createProject(owner);
    await put(owner, github.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    await put(owner, gitlab.id, 'gitlab', { repository: 'group/sub/shop', access_token: GITLAB_TOKEN });

    const onGithub = await deploy(github.id);
    expect(onGithub.commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    expect((await owner.client.get(`/v1/deployments/${onGithub.id}`)).body.commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    expect((await owner.client.get(`/v1/deployments?project=${github.id}`)).body.data[0].commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    expect((await deploy(gitlab.id)).commit_url).toBe(`${GITLAB_WEB}/group/sub/shop/-/commit/${SHA}`);
    expect((await deploy(none.id)).commit_url).toBeNull();
    // no sha, no link
    expect((await kept(owner.client.post('/v1/deployments', { project_id: github.id, version: 'no-sha' }))).body.commit_url).toBeNull();

    const releases = (await owner.client.get(`/v1/releases?project=${github.id}`)).body.data;
    expect(releases.find((r: { version: string }) => r.version === onGithub.version).latest_commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);

    // the link goes when the integration does
    expect((await owner.client.delete(`/v1/projects/${github.id}/integrations/github`)).status).toBe(204);
    expect((await owner.client.get(`/v1/deployments/${onGithub.id}`)).body.commit_url).toBeNull();
  });

  test("in-app frames of issue events link to their line at the deployed commit of the event's release, else at the default branch", async () => {
    const project = await createProject(owner);
    await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    await deploy(project.id, { version: 'shop@3.0.0' });
    const event = (release: string) => ({
      orgId: owner.organization.id,
      projectId: project.id,
      record: {
        eventId: new Types.ObjectId().toHexString().padEnd(32, '0'),
        timeMs: Date.now(),
        event: {
          platform: 'node',
          release,
          exception: { values: [{ type: 'TypeError', value: 'items is undefined', stacktrace: { frames: [
            { filename: 'node_modules/express/lib/router.js', function: 'handle', lineno: 3, in_app: false },
            { filename: 'app:///src/cart.js', function: 'total', lineno: 42, colno: 7, in_app: true },
          ] } }] },
        },
      },
    });
    await ingestErrorEvents([event('shop@3.0.0')], `links-${project.id}-1`);
    await ingestErrorEvents([event('shop@4.0.0-never-deployed')], `links-${project.id}-2`);
    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
    const events = (await owner.client.get(`/v1/issues/${issue.id}/events`)).body.data as { release: string; exception: { frames: { function: string; source_url: string | null }[] }[] }[];
    const linksOf = (release: string) => events.find((e) => e.release === release)!.exception[0]!.frames.map((frame) => [frame.function, frame.source_url]);
    expect(linksOf('shop@3.0.0')).toEqual([['handle', null], ['total', `${GITHUB_WEB}/acme/shop/blob/${SHA}/src/cart.js#L42`]]);
    expect(linksOf('shop@4.0.0-never-deployed')).toEqual([['handle', null], ['total', `${GITHUB_WEB}/acme/shop/blob/trunk/src/cart.js#L42`]]);
  });

  test('a deployment naming a repository links into the integration of that repository, never another', async () => {
    const project = await createProject(owner);
    await put(owner, project.id, 'github', { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    await put(owner, project.id, 'gitlab', { repository: 'group/sub/shop', access_token: GITLAB_TOKEN });
    expect((await deploy(project.id)).commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    expect((await deploy(project.id, { repository: 'acme/shop' })).commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    // repository names are case-insensitive on both hosts
    expect((await deploy(project.id, { repository: 'Acme/Shop' })).commit_url).toBe(`${GITHUB_WEB}/acme/shop/commit/${SHA}`);
    const onGitlab = await deploy(project.id, { repository: 'group/sub/shop' });
    expect(onGitlab.commit_url).toBe(`${GITLAB_WEB}/group/sub/shop/-/commit/${SHA}`);
    const elsewhere = await deploy(project.id, { repository: 'someone/else' });
    expect(elsewhere.commit_url).toBeNull();
    // the release list agrees with the deployment
    const releases = (await owner.client.get(`/v1/releases?project=${project.id}&limit=200`)).body.data as { version: string; latest_commit_url: string | null }[];
    expect(releases.find((r) => r.version === onGitlab.version)!.latest_commit_url).toBe(onGitlab.commit_url);
    expect(releases.find((r) => r.version === elsewhere.version)!.latest_commit_url).toBeNull();
  });
});
