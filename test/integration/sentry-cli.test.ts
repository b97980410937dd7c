/**
 * The release tooling teams already run in CI, pointed at Sluice unchanged: the real sentry-cli 3.8.0
 * binary, and @sentry/vite-plugin 5.4.1 (which runs its own sentry-cli 2.58.6) in a real Vite build of
 * test/fixtures/sentry-vite-app, both talking to the API's Sentry-compatible `/api/0` routes with a Sluice
 * API key. The source maps they upload must symbolicate errors the stock @sentry/node SDK then sends from
 * the built bundles, and `deploys new` must record a Sluice deployment.
 *
 * The tools stay on loopback: the update check is off, the plugin's usage telemetry is off, HOME is an
 * empty directory (no ~/.sentryclirc) and the code host that verifies the connected repository is a local
 * stand-in (GITHUB_API_URL).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { useGitHub } from '../support/code-host.js';
import { createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

const CLI = resolve('node_modules/@sentry/cli-linux-x64/bin/sentry-cli');
/** The 2.x binary @sentry/vite-plugin runs; it sends the release calls to the project-scoped routes. */
const CLI_2 = resolve('node_modules/@sentry/vite-plugin/node_modules/@sentry/cli-linux-x64/bin/sentry-cli');
const VITE = resolve('node_modules/vite/bin/vite.js');
const APP = resolve('test/fixtures/sentry-vite-app');
const REPORT_ERROR = join(APP, 'report-error.mjs');

const GITHUB_TOKEN = 'ghp_sentry_cli_test_0042';
const SHA = 'f3b5c1d2e4a6978812345678909abcdefabcdef0';

// ---------------------------------------------------------------------------------------------------------
// The code host a project's repository is connected on: enough of GitHub's REST API for the integration
// to verify acme/shop.

const env: Record<string, string> = {};
useGitHub(GITHUB_TOKEN, ['acme/shop'], env);

let h: Harness;
useHarness((started) => (h = started), env, { workers: true });

// ---------------------------------------------------------------------------------------------------------
// Running the tools

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a program to completion, never rejecting: the exit code is part of what the test asserts. */
function runProgram(file: string, args: string[], options: { env: Record<string, string>; cwd: string; timeout?: number }): Promise<Run> {
  return new Promise((done) => {
    execFile(file, args, { env: options.env, cwd: options.cwd, timeout: options.timeout ?? 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

let work: string;
let home: string;

/** What CI sets for sentry-cli, and nothing of this process's own environment beyond PATH. */
function toolEnv(token: string, org: string, project: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    SENTRY_URL: h.api.baseUrl,
    SENTRY_AUTH_TOKEN: token,
    SENTRY_ORG: org,
    SENTRY_PROJECT: project,
    SENTRY_DISABLE_UPDATE_CHECK: 'true',
    SENTRY_LOAD_DOTENV: '0',
    ...extra,
  };
}

interface Ci {
  token: string;
  org: string;
  project: string;
}

const sentryCli = (ci: Ci, args: string[]) => runProgram(CLI, args, { env: toolEnv(ci.token, ci.org, ci.project), cwd: work });
const sentryCli2 = (ci: Ci, args: string[]) => runProgram(CLI_2, args, { env: toolEnv(ci.token, ci.org, ci.project), cwd: work });

/** `--log-level` would show the requests; the plain output is what a CI log shows, so a failure prints it. */
const shown = (run: Run) => `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;

function expectSuccess(run: Run): Run {
  if (run.code !== 0) throw new Error(`sentry-cli failed:\n${shown(run)}`);
  return run;
}

/** Runs a built bundle of the fixture app with @sentry/node, which reports checkout()'s error; returns the event id. */
async function reportError(project: ProjectWithDsn, bundleFile: string, release: string, framesRoot?: string): Promise<string> {
  const run = await runProgram(process.execPath, [REPORT_ERROR, bundleFile], {
    env: { PATH: process.env.PATH ?? '', HOME: home, SENTRY_DSN: project.dsn, SENTRY_RELEASE: release, ...(framesRoot && { FRAMES_ROOT: framesRoot }) },
    cwd: work,
    timeout: 20_000,
  });
  if (run.code !== 0) throw new Error(`the app did not report its error:\n${shown(run)}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!).eventId;
}

/** The event as the API serves it once the workers stored it, found through the project's issues. */
async function storedEvent(owner: Account, projectId: string, id: string) {
  return eventually(
    async () => {
      const issues = (await owner.client.get(`/v1/issues?project=${projectId}`)).body.data as Array<{ id: string }>;
      for (const issue of issues) {
        const events = (await owner.client.get(`/v1/issues/${issue.id}/events?limit=200`)).body.data as Array<{ event_id: string }>;
        const event = events.find((candidate) => candidate.event_id === id);
        if (event) return event as any;
      }
      return undefined;
    },
    `event ${id} stored`,
    20_000,
  );
}

/** The innermost in-app frame of the event's exception: where checkout()'s error was thrown. */
const thrownAt = (event: any) => (event.exception.at(-1).frames as Array<{ in_app: boolean }>).filter((frame) => frame.in_app).at(-1) as any;

/**
 * Where src/checkout.js throws: `throw new RangeError(...)` on line 11, inside applyCoupon, at `new` (column
 * 11). Vite's minifier drops the `new` (RangeError(...) constructs the same), so in its build the call is the
 * `RangeError` token, which its map places at column 15.
 */
const ORIGINAL_THROW = { function: 'applyCoupon', lineno: 11, colno: 11 };
const ORIGINAL_THROW_AFTER_VITE = { ...ORIGINAL_THROW, colno: 15 };

/**
 * The thrown frame resolved through an uploaded map, with the minified position kept beside it. With frames
 * as the SDK names them (paths on disk), the event as a whole reads as symbolicated: report-error.mjs, run as
 * it is, needs no map. Rewritten to app:/// for '~/' uploads, that file looks like one whose map is missing.
 */
function expectSymbolicated(event: any, bundleFile: string, original = ORIGINAL_THROW, framesOnDisk = true) {
  if (framesOnDisk) expect({ symbolicated: event.symbolicated, errors: event.symbolication_errors }).toEqual({ symbolicated: true, errors: [] });
  const frame = thrownAt(event);
  expect(frame).toMatchObject({ ...original, filename: expect.stringMatching(/(^|\/)test\/fixtures\/sentry-vite-app\/src\/checkout\.js$/), symbolicated: true });
  expect(frame.context_line).toContain('throw new RangeError(`coupon ${code} expired on ${coupon.expires}`);');
  expect(frame.minified.abs_path ?? frame.minified.filename).toContain(bundleFile.split('/').at(-1));
  expect([frame.minified.function, frame.minified.lineno, frame.minified.colno]).not.toEqual([original.function, original.lineno, original.colno]);
}

// ---------------------------------------------------------------------------------------------------------
// The organisation, its project and the bundles

let owner: Account;
let project: ProjectWithDsn;
let ci: Ci;

/** A minified ES module of the fixture app with its source map, as a CI build would leave in ./dist. */
async function buildBundle(outDir: string): Promise<string> {
  const file = join(outDir, 'static', 'checkout.min.mjs');
  await build({ entryPoints: [join(APP, 'src', 'checkout.js')], bundle: true, minify: true, sourcemap: 'external', format: 'esm', outfile: file, logLevel: 'silent' });
  return file;
}

let debugIdDist: string;
let legacyDist: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'sluice-sentry-cli-'));
  home = join(work, 'home');
  await mkdir(home);
  debugIdDist = join(work, 'debug-ids', 'dist');
  legacyDist = join(work, 'legacy', 'dist');
  await Promise.all([buildBundle(debugIdDist), buildBundle(legacyDist)]);

  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  const me = await owner.client.get('/v1/me');
  const slug = (await owner.client.get(`/v1/projects/${project.id}`)).body.slug;
  if (!me.body.organization?.slug || !slug) throw new Error(`no slugs: ${me.text}`);
  ci = { token: (await createApiKey(owner)).secret, org: me.body.organization.slug, project: slug };
  // set-commits names the repository as the organisation has it connected
  const connected = await owner.client.put(`/v1/projects/${project.id}/integrations/github`, { repository: 'acme/shop', access_token: GITHUB_TOKEN });
  if (connected.status !== 200) throw new Error(`connecting the repository failed: ${connected.status} ${connected.text}`);
}, 60_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------

describe('sentry-cli 3.8.0', () => {
  test('info and projects list succeed with a Sluice API key; the list shows the project by its slug', async () => {
    const info = expectSuccess(await sentryCli(ci, ['info']));
    expect(info.stdout).toContain(`Sentry Server: ${h.api.baseUrl}`);
    expect(info.stdout).toContain(`Default Organization: ${ci.org}`);
    expect(info.stdout).toContain('Method: Auth Token');

    const projects = expectSuccess(await sentryCli(ci, ['projects', 'list']));
    const row = projects.stdout.split('\n').find((line) => line.includes(` ${ci.project} `));
    expect(row).toBeDefined();
  });

  test('sourcemaps inject then upload (debug ids): an error from the bundle comes back with the original file, line, column and function', async () => {
    const injected = expectSuccess(await sentryCli(ci, ['sourcemaps', 'inject', debugIdDist]));
    const debugId = /([0-9a-f-]{36}) - .*checkout\.min\.mjs$/m.exec(injected.stdout)?.[1];
    expect(debugId).toBeDefined();

    const uploaded = expectSuccess(await sentryCli(ci, ['sourcemaps', 'upload', debugIdDist]));
    expect(uploaded.stdout).toContain('File processing complete');
    expect(uploaded.stdout).toContain(`~/static/checkout.min.mjs.map (debug id ${debugId})`);

    // no release on the event: the debug id alone finds the map
    const bundle = join(debugIdDist, 'static', 'checkout.min.mjs');
    const eventId = await reportError(project, bundle, '');
    expectSymbolicated(await storedEvent(owner, project.id, eventId), bundle);
  });

  test("the legacy upload by release with --url-prefix '~/' symbolicates that release's events", async () => {
    const release = 'shop@3.0.0';
    const uploaded = expectSuccess(await sentryCli(ci, ['sourcemaps', 'upload', '--release', release, '--url-prefix', '~/', legacyDist]));
    expect(uploaded.stdout).toContain('File processing complete');
    expect(uploaded.stdout).toContain(`Release: ${release}`);
    expect(uploaded.stdout).toContain('~/static/checkout.min.mjs.map');

    // frames named app:///static/checkout.min.mjs, the SDK setup that goes with '~/' uploads
    const bundle = join(legacyDist, 'static', 'checkout.min.mjs');
    const eventId = await reportError(project, bundle, release, legacyDist);
    const event = await storedEvent(owner, project.id, eventId);
    expect(event.release).toBe(release);
    expectSymbolicated(event, bundle, ORIGINAL_THROW, false);
  });

  test('releases new, set-commits, finalize, list and deploys new: the deployment is a Sluice deployment of the project', async () => {
    const release = 'shop@4.0.0';
    expect(expectSuccess(await sentryCli(ci, ['releases', 'new', release])).stdout).toContain(`Created release ${release}`);

    const commits = expectSuccess(await sentryCli(ci, ['releases', 'set-commits', release, '--commit', `acme/shop@${SHA}`]));
    expect(commits.stdout).toMatch(new RegExp(`acme/shop\\s*\\|\\s*${SHA.slice(0, 12)}`));

    expect(expectSuccess(await sentryCli(ci, ['releases', 'finalize', release])).stdout).toContain(`Finalized release ${release}`);

    const listed = expectSuccess(await sentryCli(ci, ['releases', 'list']));
    const row = listed.stdout.split('\n').find((line) => line.includes(` ${release} `));
    // finalized: the Released column says when, not "(unreleased)"
    expect(row).toMatch(/ago/);

    const info = expectSuccess(await sentryCli(ci, ['releases', 'info', release]));
    expect(info.stdout).toContain(release);

    const deployed = expectSuccess(await sentryCli(ci, ['releases', 'deploys', release, 'new', '-e', 'production']));
    expect(deployed.stdout).toMatch(/Created new deploy .* for 'production'/);
    const deploys = expectSuccess(await sentryCli(ci, ['releases', 'deploys', release, 'list']));
    expect(deploys.stdout).toMatch(/production/);

    const deployments = await owner.client.get(`/v1/deployments?project=${project.id}&version=${encodeURIComponent(release)}`);
    expect(deployments.status).toBe(200);
    expect(deployments.body.data).toEqual([
      expect.objectContaining({ project_id: project.id, version: release, environment: 'production', repository: 'acme/shop', commit_sha: SHA }),
    ]);
  });
});

describe('@sentry/vite-plugin 5.4.1 in a real Vite build of the fixture app', () => {
  test('the build creates and finalizes the release, sets its commit, uploads the maps and records the deployment; its errors come back symbolicated', async () => {
    const release = 'shop@5.0.0';
    const outDir = join(work, 'vite-dist');
    const built = await runProgram(process.execPath, [VITE, 'build', '--configLoader', 'native', '--config', join(APP, 'vite.config.mjs'), '--outDir', outDir], {
      env: toolEnv(ci.token, ci.org, ci.project, { APP_RELEASE: release, APP_REPOSITORY: 'acme/shop', APP_COMMIT: SHA }),
      cwd: work,
      timeout: 90_000,
    });
    if (built.code !== 0) throw new Error(`vite build failed:\n${shown(built)}`);
    expect(`${built.stdout}${built.stderr}`).not.toContain('[sentry-vite-plugin] Error');
    expect(built.stdout).toContain('Successfully uploaded source maps');

    const bundle = join(outDir, 'checkout.mjs');
    const eventId = await reportError(project, bundle, release);
    expectSymbolicated(await storedEvent(owner, project.id, eventId), bundle, ORIGINAL_THROW_AFTER_VITE);

    const deployments = await owner.client.get(`/v1/deployments?project=${project.id}&version=${encodeURIComponent(release)}`);
    expect(deployments.body.data).toEqual([expect.objectContaining({ project_id: project.id, version: release, environment: 'production', commit_sha: SHA })]);
    const listed = expectSuccess(await sentryCli(ci, ['releases', 'list', '--raw']));
    expect(listed.stdout.split('\n')).toContain(release);
  }, 120_000);
});

describe('sentry-cli 2.58.6, as CI pinned to 2.x runs it', () => {
  test('releases new, info, finalize, list and delete work through the project-scoped routes; a member key is refused the delete there too', async () => {
    const release = 'shop@7.0.0';
    expect(expectSuccess(await sentryCli2(ci, ['releases', 'new', release])).stdout).toContain(`Created release ${release}`);
    expect(expectSuccess(await sentryCli2(ci, ['releases', 'info', release])).stdout).toContain(release);
    expect(expectSuccess(await sentryCli2(ci, ['releases', 'finalize', release])).stdout).toContain(`Finalized release ${release}`);
    expect(expectSuccess(await sentryCli2(ci, ['releases', 'list', '--raw'])).stdout.split('\n')).toContain(release);

    const member = { ...ci, token: (await createApiKey(owner, 'member')).secret };
    const refused = await sentryCli2(member, ['releases', 'delete', release]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('(http status: 403)');

    expect(expectSuccess(await sentryCli2(ci, ['releases', 'delete', release])).stdout).toContain(`Deleted release ${release}!`);
    // gone: info exits 1 without output, and the list no longer has it
    expect((await sentryCli2(ci, ['releases', 'info', release])).code).toBe(1);
    expect(expectSuccess(await sentryCli2(ci, ['releases', 'list', '--raw'])).stdout.split('\n')).not.toContain(release);
  });
});

describe('auth: a Sluice API key, scoped like the /v1 routes', () => {
  test("another organisation's slug is not found, to the tool and over HTTP", async () => {
    const stranger = await signUp(h, 'stranger');
    const strangerOrg = (await stranger.client.get('/v1/me')).body.organization.slug as string;
    expect(strangerOrg).not.toBe(ci.org);

    const run = await sentryCli({ ...ci, org: strangerOrg }, ['projects', 'list']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('organization not found');

    const reply = await h.api.with({ bearer: ci.token }).get(`/api/0/organizations/${strangerOrg}/projects/`);
    expect(reply.status).toBe(404);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.body).toEqual({ detail: expect.any(String) });
    const created = await h.api.with({ bearer: ci.token }).post(`/api/0/organizations/${strangerOrg}/releases/`, { version: 'x@1', projects: [ci.project] });
    expect(created.status).toBe(404);
    expect(created.body).toEqual({ detail: expect.any(String) });
  });

  test('a member-role key cannot delete a release: 403 with the reason, and the tool fails instead of reporting success', async () => {
    const release = 'shop@6.0.0';
    expectSuccess(await sentryCli(ci, ['releases', 'new', release]));
    const member = { ...ci, token: (await createApiKey(owner, 'member')).secret };

    const run = await sentryCli(member, ['releases', 'delete', release]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('(http status: 403)');
    expect(run.stdout).not.toContain('Deleted release');

    const reply = await h.api.with({ bearer: member.token }).delete(`/api/0/organizations/${ci.org}/releases/${encodeURIComponent(release)}/`);
    expect(reply.status).toBe(403);
    expect(reply.body).toEqual({ detail: expect.any(String) });
    // still there for everyone
    expectSuccess(await sentryCli(ci, ['releases', 'info', release]));
  });

  test('an unknown token is 401 and an unsupported Sentry route is 404, both in Sentry\'s error shape', async () => {
    const info = await sentryCli({ ...ci, token: 'slk_not_a_key' }, ['info']);
    expect(info.code).not.toBe(0);
    expect(info.stderr).toContain('(http status: 401)');
    const unauthorized = await h.api.with({ bearer: 'slk_not_a_key' }).get('/api/0/');
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.body).toEqual({ detail: expect.any(String) });

    for (const path of [`/api/0/organizations/${ci.org}/monitors/`, `/api/0/projects/${ci.org}/${ci.project}/events/`, '/api/0/no-such-thing/']) {
      const reply = await h.api.with({ bearer: ci.token }).get(path);
      expect([path, reply.status]).toEqual([path, 404]);
      expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      expect(reply.body).toEqual({ detail: expect.any(String) });
    }
  });
});
