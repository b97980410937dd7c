/**
 * The Sentry-compatible routes under /api/0 as release tooling calls them (the shapes sentry-cli reads;
 * the real tool runs in sentry-cli.test.ts): Sluice API keys as Bearer tokens, organisations by slug,
 * Sentry's `{"detail"}` errors, releases declared, given commits, finalized, deployed and deleted.
 */
import { useGitHub } from '../support/code-host.js';
import { createApiKey, createProject, signUp, type Account } from '../support/factories/accounts.js';
import { type Harness, useHarness } from '../support/harness.js';

const GITHUB_TOKEN = 'ghp_sentry_api_token_0001';
const SHA = '0123456789abcdef0123456789abcdef01234567';

const env: Record<string, string> = {};
useGitHub(GITHUB_TOKEN, ['acme/shop'], env);

let h: Harness;
useHarness((started) => (h = started), env);

interface Org {
  owner: Account;
  key: string;
  slug: string;
  project: { id: string; slug: string };
}

async function organization(): Promise<Org> {
  const owner = await signUp(h);
  const key = (await createApiKey(owner, 'owner')).secret;
  const slug = (await owner.client.get('/v1/me')).body.organization.slug;
  const created = await createProject(owner);
  const project = (await owner.client.get(`/v1/projects/${created.id}`)).body;
  return { owner, key, slug, project: { id: project.id, slug: project.slug } };
}

/** A request as sentry-cli makes it: Bearer key, JSON body, paths ending in a slash. */
async function sentry(key: string | undefined, method: string, path: string, body?: unknown) {
  const response = await fetch(`${h.api.baseUrl}/api/0${path}`, {
    method,
    headers: { ...(key && { authorization: `Bearer ${key}` }), ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), body: text ? JSON.parse(text) : undefined };
}

let acme: Org;
let other: Org;
beforeAll(async () => {
  [acme, other] = await Promise.all([organization(), organization()]);
});

describe('who is asking', () => {
  test('GET /api/0/ answers the key’s user and scopes; a bad or missing key is a 401 with a detail', async () => {
    const info = await sentry(acme.key, 'GET', '/');
    expect(info.status).toBe(200);
    expect(info.body.user).toEqual({ id: expect.any(String), email: acme.owner.email, name: expect.any(String) });
    expect(info.body.auth.scopes).toEqual(expect.arrayContaining(['org:read', 'project:releases', 'org:admin']));

    const bad = await sentry('slk_not_a_key', 'GET', '/');
    expect(bad).toMatchObject({ status: 401, body: { detail: 'API key is invalid or revoked' } });
    expect(bad.contentType).toMatch(/^application\/json/);
    expect(await sentry(undefined, 'GET', `/organizations/${acme.slug}/projects/`)).toMatchObject({ status: 401, body: { detail: 'authentication required' } });
  });

  test('the organisation and its projects by slug; another organisation’s slug answers 404 like an unknown one', async () => {
    const org = await sentry(acme.key, 'GET', `/organizations/${acme.slug}/`);
    expect(org).toMatchObject({ status: 200, body: { slug: acme.slug, id: expect.any(String), name: expect.any(String) } });
    const projects = await sentry(acme.key, 'GET', `/organizations/${acme.slug}/projects/?cursor=`);
    expect(projects.status).toBe(200);
    expect(projects.body).toEqual([expect.objectContaining({ id: acme.project.id, slug: acme.project.slug, name: expect.any(String) })]);

    const theirs = await sentry(acme.key, 'GET', `/organizations/${other.slug}/projects/`);
    const unknown = await sentry(acme.key, 'GET', '/organizations/no-such-org/projects/');
    expect(theirs).toEqual(unknown);
    expect(theirs).toMatchObject({ status: 404, body: { detail: expect.any(String) } });
  });

  test('a route Sluice does not support answers 404 in Sentry’s shape, naming it', async () => {
    const reply = await sentry(acme.key, 'GET', `/organizations/${acme.slug}/issues/`);
    expect(reply.status).toBe(404);
    expect(reply.contentType).toMatch(/^application\/json/);
    expect(reply.body).toEqual({ detail: `Sluice does not support GET /api/0/organizations/${acme.slug}/issues/ (see docs/api.md, "Sentry-compatible")` });
  });
});

describe('releases', () => {
  test('declared, declared again (208), listed per project, read by version; unknown projects are named in the refusal', async () => {
    const created = await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version: 'shop@1.0.0', projects: [acme.project.slug], dateStarted: new Date().toISOString() });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ version: 'shop@1.0.0', dateCreated: expect.any(String), dateReleased: null, newGroups: 0, projects: [{ slug: acme.project.slug, name: expect.any(String) }] });

    // sentry-cli 2 declares through the project's path; a second declaration is 208 with the same release
    const again = await sentry(acme.key, 'POST', `/projects/${acme.slug}/${acme.project.slug}/releases/`, { version: 'shop@1.0.0' });
    expect(again.status).toBe(208);
    expect(again.body.dateCreated).toBe(created.body.dateCreated);

    const listed = await sentry(acme.key, 'GET', `/projects/${acme.slug}/${acme.project.slug}/releases/`);
    expect(listed.body.map((release: { version: string }) => release.version)).toContain('shop@1.0.0');
    expect((await sentry(acme.key, 'GET', `/organizations/${acme.slug}/releases/shop@1.0.0/`)).body.version).toBe('shop@1.0.0');

    const unknownProject = await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version: 'shop@1.0.1', projects: ['nope'] });
    expect(unknownProject).toMatchObject({ status: 400, body: { detail: 'no project with the slug "nope" in this organization' } });
    const badVersion = await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version: 'a/b', projects: [acme.project.slug] });
    expect(badVersion.status).toBe(400);
    expect(badVersion.body.detail).toMatch(/^request body failed validation: body\.version /);

    // another organisation's key, at its own slug, finds nothing of ours
    expect((await sentry(other.key, 'GET', `/organizations/${other.slug}/releases/shop@1.0.0/`)).status).toBe(404);
  });

  test('commits need a connected repository; finalize sets dateReleased; a deploy becomes a Sluice deployment with the commit', async () => {
    const version = 'shop@2.0.0';
    await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version, projects: [acme.project.slug] });
    const refs = [{ repository: 'acme/shop', commit: SHA, previousCommit: null }];
    const unconnected = await sentry(acme.key, 'PUT', `/organizations/${acme.slug}/releases/${version}/`, { refs });
    expect(unconnected).toMatchObject({ status: 400, body: { detail: 'unknown repository acme/shop: connect it to a project under Integrations first' } });
    expect((await sentry(acme.key, 'GET', `/organizations/${acme.slug}/repos/`)).body).toEqual([]);

    const connected = await acme.owner.client.put(`/v1/projects/${acme.project.id}/integrations/github`, { repository: 'acme/shop', access_token: GITHUB_TOKEN });
    expect(connected.status).toBe(200);
    const repos = await sentry(acme.key, 'GET', `/organizations/${acme.slug}/repos/?cursor=`);
    expect(repos.body).toEqual([{ id: expect.any(String), name: 'acme/shop', url: 'https://github.example.test/acme/shop', provider: { id: 'integrations:github', name: 'GitHub' }, status: 'active', dateCreated: expect.any(String) }]);

    const withCommits = await sentry(acme.key, 'PUT', `/organizations/${acme.slug}/releases/${version}/`, { refs });
    expect(withCommits).toMatchObject({ status: 200, body: { commitCount: 1, lastCommit: { id: SHA } } });
    const finishedAt = '2026-11-20T10:00:00.000Z';
    const finalized = await sentry(acme.key, 'PUT', `/projects/${acme.slug}/${acme.project.slug}/releases/${version}/`, { projects: [acme.project.slug], dateReleased: finishedAt });
    expect(finalized).toMatchObject({ status: 200, body: { dateReleased: finishedAt, commitCount: 1 } });

    const deploy = await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/${version}/deploys/`, { environment: 'production', name: 'first', url: null, dateStarted: null, dateFinished: finishedAt });
    expect(deploy).toMatchObject({ status: 201, body: { environment: 'production', name: 'first', dateFinished: finishedAt } });
    const deployments = await acme.owner.client.get(`/v1/deployments?version=${encodeURIComponent(version)}&from=2026-11-19T00:00:00Z`);
    expect(deployments.body.data).toEqual([
      expect.objectContaining({ project_id: acme.project.id, version, environment: 'production', commit_sha: SHA, repository: 'acme/shop', commit_url: `https://github.example.test/acme/shop/commit/${SHA}`, deployed_at: finishedAt }),
    ]);
    // the dashboard's release list shows what the tooling declared
    const releases = await acme.owner.client.get(`/v1/releases?project=${acme.project.id}`);
    expect(releases.body.data.find((release: { version: string }) => release.version === version)).toMatchObject({
      projects: [acme.project.id],
      finalized_at: finishedAt,
      commits: [{ repository: 'acme/shop', commit: SHA }],
      deployment_count: 1,
    });
    const declaredOnly = releases.body.data.find((release: { version: string }) => release.version === 'shop@1.0.0');
    expect(declaredOnly).toMatchObject({ projects: [acme.project.id], deployment_count: 0, finalized_at: null, first_seen: null });
    const listed = await sentry(acme.key, 'GET', `/organizations/${acme.slug}/releases/${version}/deploys/`);
    expect(listed.body).toEqual([expect.objectContaining({ environment: 'production', dateFinished: finishedAt })]);
  });

  test('deleting is for admins; a deployed release is kept; a declared-only one goes', async () => {
    const memberKey = (await createApiKey(acme.owner, 'member')).secret;
    await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version: 'shop@3.0.0', projects: [acme.project.slug] });

    const refused = await sentry(memberKey, 'DELETE', `/organizations/${acme.slug}/releases/shop@3.0.0/`);
    expect(refused).toMatchObject({ status: 403, body: { detail: 'this needs the admin role or higher' } });
    await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/shop@3.0.0/deploys/`, { environment: 'staging' });
    const deployed = await sentry(acme.key, 'DELETE', `/organizations/${acme.slug}/releases/shop@3.0.0/`);
    expect(deployed).toMatchObject({ status: 403, body: { detail: 'release shop@3.0.0 is named by stored telemetry or deployments, which only retention removes' } });

    await sentry(acme.key, 'POST', `/organizations/${acme.slug}/releases/`, { version: 'shop@3.0.1', projects: [acme.project.slug] });
    expect((await sentry(acme.key, 'DELETE', `/projects/${acme.slug}/${acme.project.slug}/releases/shop@3.0.1/`)).status).toBe(204);
    expect((await sentry(acme.key, 'GET', `/organizations/${acme.slug}/releases/shop@3.0.1/`)).status).toBe(404);
  });
});
