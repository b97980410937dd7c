/**
 * Releases, deployment health and the issue page's AI investigation in a real browser. Traffic is planted
 * through the ingest port around a deployment time T (a whole minute three hours back), as the
 * deployment API's own tests plant it: production requests 4 a minute (OTLP spans) in minutes −50…−1
 * (shop@1.0.0) and 0…49 (shop@2.0.0), slower after; 4 errors before and 30 after; session aggregates,
 * 2 a minute, 1 crash before and 2 after. The deployment is recorded with the page's form, and every
 * figure the health page shows is compared with the API's answer for the same deployment.
 *
 * Investigations need a model: a second service, after the first has stopped, runs with the local model
 * server (test/support/ollama-server.ts). The first has none, and its issue page offers no investigation.
 */
import type { Locator, Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, otlpTraces, type OtlpSpan } from '../support/factories/telemetry.js';
import { startFakeOllama, type FakeOllama } from '../support/ollama-server.js';
import { startTarget, type Target } from '../support/targets.js';
import { eventually } from '../support/wait.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const T = Math.floor(Date.now() / MINUTE) * MINUTE - 3 * HOUR;
const at = (minute: number, second = 0) => T + minute * MINUTE + second * 1000;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const COMMIT = 'abcdef1234567';
const GITHUB_TOKEN = 'ghp_releases_test_token';
const REPOSITORY_PAGE = 'https://github.example.test/acme/shop';
const TELEMETRY_WAIT = 30_000;

/** A number as the page shows the API's figures: as answered, grouped, tiny ones in exponent form. */
const exact = (value: number) => (value !== 0 && Math.abs(value) < 1e-4 ? value.toExponential() : value.toLocaleString('en-US', { maximumFractionDigits: 20 }));

/** The API, asked with the browser's session (the dashboard's Origin, as the app sends it). */
async function apiGet<T = any>(dashboard: Dashboard, page: Page, path: string): Promise<T> {
  const answer = await page.request.get(`${dashboard.apiUrl}${path}`, { headers: { Origin: dashboard.webUrl } });
  expect(answer.status()).toBe(200);
  return (await answer.json()) as T;
}

/** The cells of the row whose header is `label` in a health table. */
const rowCells = (table: Locator, label: string) => table.getByRole('row').filter({ has: table.page().getByRole('rowheader', { name: label, exact: true }) }).getByRole('cell');

async function cellTexts(table: Locator, label: string): Promise<string[]> {
  const cells = rowCells(table, label);
  await cells.first().waitFor();
  return (await cells.allTextContents()).map((text) => text.trim());
}

describe('releases and deployment health', () => {
  let dashboard: Dashboard;
  let codeHost: Target;
  let page: Page;
  let projectId: string;
  let publicKey: string;
  let ingestNumber: string;
  let deploymentId: string;

  async function ingest(path: string, body: string, headers: Record<string, string> = {}) {
    const answer = await fetch(`${dashboard.ingestUrl}${path}`, { method: 'POST', headers, body });
    expect(answer.status).toBe(200);
  }

  /** `perMinute` production requests in each minute, each the entry span of a trace of its own; `durationOf` the n-th's. */
  async function sendRequests(release: string, minutes: number[], perMinute: number, durationOf: (n: number) => number) {
    const spans: OtlpSpan[] = minutes.flatMap((minute, m) =>
      Array.from({ length: perMinute }, (_, i) => ({
        traceId: hex(16),
        id: hex(8),
        name: 'GET /cart',
        kind: 'server' as const,
        startMs: at(minute, i * 5),
        durationMs: durationOf(m * perMinute + i),
        attributes: { 'deployment.environment': 'production', 'sentry.release': release, 'http.request.method': 'GET', 'http.route': '/cart', 'http.response.status_code': 200 },
      })),
    );
    for (let i = 0; i < spans.length; i += 200) {
      await ingest('/v1/traces', JSON.stringify(otlpTraces({ shop: spans.slice(i, i + 200) })), { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` });
    }
  }

  /** One error event in each minute (at second 30), all of one exception type: one issue. */
  async function sendErrors(release: string, minutes: number[], type: string, value: string) {
    for (const minute of minutes) {
      const event = errorEvent({ timestamp: at(minute, 30) / 1000, environment: 'production', release }, { type, value });
      await ingest(`/api/${ingestNumber}/envelope/?sentry_key=${publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    }
  }

  /** Request-mode session aggregates: `perMinute` sessions started each minute, one crash in each of `crashedIn`. */
  async function sendSessions(release: string, minutes: number[], perMinute: number, crashedIn: number[]) {
    const aggregates = minutes.map((minute) => {
      const crashed = crashedIn.includes(minute) ? 1 : 0;
      return { started: new Date(at(minute)).toISOString(), exited: perMinute - crashed, crashed };
    });
    await ingest(`/api/${ingestNumber}/envelope/?sentry_key=${publicKey}`, envelope({ sent_at: new Date().toISOString() }, [{ type: 'sessions', payload: { attrs: { release, environment: 'production' }, aggregates } }]));
  }

  beforeAll(async () => {
    // the code host the project's integration verifies its repository with, so commits become links
    codeHost = await startTarget((req) =>
      req.url === '/repos/acme/shop' && req.headers.authorization === `Bearer ${GITHUB_TOKEN}`
        ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ full_name: 'acme/shop', html_url: REPOSITORY_PAGE, default_branch: 'main' }) }
        : { status: 404, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'Not Found' }) },
    );
    dashboard = await startDashboard({ GITHUB_API_URL: codeHost.url, ENCRYPTION_KEY: 'ab'.repeat(32) });
    page = await (await dashboard.newContext()).newPage();
    await signUpInBrowser(page, { email: uniqueEmail('releases'), password: PASSWORD, organization: 'Release Watchers' });
    const project = await createProjectInBrowser(page, 'shop');
    projectId = project.projectId;
    const dsn = new URL(project.dsn);
    publicKey = dsn.username;
    ingestNumber = dsn.pathname.slice(1);
    const connected = await page.request.put(`${dashboard.apiUrl}/v1/projects/${projectId}/integrations/github`, {
      headers: { Origin: dashboard.webUrl },
      data: { repository: 'acme/shop', access_token: GITHUB_TOKEN },
    });
    expect(connected.status()).toBe(200);
  }, 120_000);
  afterAll(async () => {
    await dashboard?.close();
    await codeHost?.close();
  });

  test('before any release the page says how one appears; the form records a deployment with every field', async () => {
    await page.goto(`/releases?project=${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Releases' }).waitFor();
    await page.getByRole('heading', { name: 'No release yet' }).waitFor();
    await page.getByText('No deployment was recorded yet').waitFor();

    await sendRequests('shop@1.0.0', range(-50, -1), 4, (n) => (n % 20 === 0 ? 150 : 100));
    await sendRequests('shop@2.0.0', range(0, 49), 4, (n) => (n % 5 < 2 ? 400 : 100));
    await sendErrors('shop@1.0.0', [-40, -35, -20, -10], 'RangeError', 'cart index out of range');
    await sendErrors('shop@2.0.0', range(0, 29), 'TypeError', 'price is undefined since 2.0');
    await sendSessions('shop@1.0.0', range(-50, -1), 2, [-20]);
    await sendSessions('shop@2.0.0', range(0, 49), 2, [3, 7]);
    // the release summaries count the errors and sessions: both releases are in the list once they have
    await eventually(
      async () => {
        const releases = await apiGet(dashboard, page, `/v1/releases?project=${projectId}`);
        const by = (version: string) => releases.data.find((release: { version: string }) => release.version === version);
        return by('shop@1.0.0')?.events === 4 && by('shop@2.0.0')?.events === 30 && by('shop@2.0.0')?.crash_free_rate === 0.98 && by('shop@1.0.0')?.crash_free_rate === 0.99 ? true : undefined;
      },
      'the planted errors and sessions counted into the releases',
      TELEMETRY_WAIT,
    );

    // every field of POST /v1/deployments, the time typed in the browser's zone
    const localT = (await page.evaluate(`(() => { const d = new Date(${T}); return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19); })()`)) as string;
    const form = page.getByRole('form', { name: 'Record a deployment' });
    await expect(form.getByLabel('Project').inputValue()).resolves.toBe(projectId);
    await form.getByLabel('Release version').fill('shop@2.0.0');
    await form.getByLabel('Environment').fill('production');
    await form.getByLabel('Commit').fill(COMMIT);
    await form.getByLabel('Repository').fill('acme/shop');
    await form.getByLabel('Link').fill('https://ci.example.test/runs/42');
    await form.getByLabel('Deployed at').fill(localT);
    await form.getByLabel('Release version').press('Enter');
    const recorded = page.getByRole('status').filter({ hasText: 'Recorded shop@2.0.0 in production' });
    await recorded.waitFor();

    const deployments = await apiGet(dashboard, page, `/v1/deployments?project=${projectId}`);
    expect(deployments.data).toHaveLength(1);
    expect(deployments.data[0]).toMatchObject({
      project_id: projectId,
      version: 'shop@2.0.0',
      environment: 'production',
      commit_sha: COMMIT,
      repository: 'acme/shop',
      url: 'https://ci.example.test/runs/42',
      commit_url: `${REPOSITORY_PAGE}/commit/${COMMIT}`,
      deployed_at: new Date(T).toISOString(),
    });
    deploymentId = deployments.data[0].id;
    expect(await recorded.getByRole('link', { name: 'See its health' }).getAttribute('href')).toBe(`/deployments/${deploymentId}`);

    // the release list and the deployments list read again, with the API's figures
    const releases = await apiGet(dashboard, page, `/v1/releases?project=${projectId}`);
    const release = releases.data.find((item: { version: string }) => item.version === 'shop@2.0.0');
    const releaseTable = page.getByRole('table', { name: 'Releases, newest activity first' });
    const releaseRow = releaseTable.getByRole('row').filter({ has: page.getByRole('link', { name: 'shop@2.0.0', exact: true }) });
    await showsText(releaseRow.getByRole('cell').nth(2), String(release.deployment_count));
    const cells = (await releaseRow.getByRole('cell').allTextContents()).map((text) => text.trim());
    expect(cells[0]).toBe(`shop@2.0.0shop · ${release.environments.join(', ')}`);
    expect(cells.slice(2, 6)).toEqual([String(release.deployment_count), String(release.new_issues), String(release.events), `${(release.crash_free_rate * 100).toLocaleString('en-US', { maximumFractionDigits: 2 })} %`]);
    expect(await releaseRow.getByRole('link', { name: /commit/ }).getAttribute('href')).toBe(release.latest_commit_url);
    expect(await review(page, 'releases')).toEqual([]);

    // a release's name narrows the deployments below to it, in the URL
    await releaseRow.getByRole('link', { name: 'shop@2.0.0', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('version') === 'shop@2.0.0');
    await page.getByRole('heading', { name: 'Deployments of shop@2.0.0' }).waitFor();
    const deploymentRow = page.getByRole('table', { name: /Deployments, newest first/ }).getByRole('row').filter({ hasText: 'shop@2.0.0' });
    expect(await deploymentRow.getByRole('link', { name: COMMIT.slice(0, 12) }).getAttribute('href')).toBe(`${REPOSITORY_PAGE}/commit/${COMMIT}`);
  }, 90_000);

  test("the health page shows every figure exactly as the API answers it, with the commit link and the new issues", async () => {
    // every planted request counted on both sides before the figures are compared
    const health = await eventually(
      async () => {
        const answer = await apiGet(dashboard, page, `/v1/deployments/${deploymentId}/health`);
        return answer.error_rate.before.requests === 200 && answer.error_rate.after.requests === 200 ? answer : undefined;
      },
      'the planted requests counted on both sides',
      TELEMETRY_WAIT,
    );
    expect(health.verdict).toBe('degraded');
    await page.goto(`/releases?project=${projectId}&version=shop@2.0.0`);
    await page.getByRole('link', { name: /^Check health of shop@2\.0\.0 in production/ }).click();
    await page.waitForURL(`**/deployments/${deploymentId}*`);
    await page.getByRole('heading', { level: 1, name: 'Deployment health: shop@2.0.0' }).waitFor();

    await page.getByRole('heading', { name: `Verdict: ${health.verdict}` }).waitFor();
    const verdict = page.getByRole('region', { name: /^Verdict/ });
    expect((await verdict.getByRole('listitem').allTextContents()).map((text) => text.trim())).toEqual(health.reasons);
    const facts = page.getByRole('region', { name: 'Deployment', exact: true });
    expect(await facts.getByRole('link', { name: new RegExp(COMMIT.slice(0, 12)) }).getAttribute('href')).toBe(`${REPOSITORY_PAGE}/commit/${COMMIT}`);
    expect(await facts.getByRole('link', { name: 'https://ci.example.test/runs/42' }).getAttribute('href')).toBe('https://ci.example.test/runs/42');

    const tests: Record<string, string> = { two_proportion_z: 'Two-proportion z-test, pooled, one-sided', poisson_exact: 'Exact comparison of two Poisson rates, one-sided' };
    const rate = (value: number) => `${exact(value)} (${exact(Number((value * 100).toPrecision(12)))} %)`;
    const judged = (metric: any, unit: string, difference: string) => ({
      'Difference (after − before)': difference,
      Test: `${tests[metric.test]} ${metric.test}`,
      Statistic: metric.test === 'two_proportion_z' ? `z = ${exact(metric.statistic)}` : `${exact(metric.statistic)} (the count after)`,
      'p-value (one-sided)': exact(metric.p_value),
      'Minimum sample': `${metric.minimum_sample} ${unit} in each window`,
      Verdict: metric.verdict.replace('_', ' '),
      Rule: metric.rule,
    });
    const { error_rate: errors, p95_latency: p95, crash_free_sessions: crashes } = health;
    expect(crashes).not.toBeNull();
    const tables = [
      {
        name: /Error events per request/,
        windows: { Errors: [errors.before.errors, errors.after.errors].map(String), Requests: [errors.before.requests, errors.after.requests].map(String), 'Error rate (errors ÷ requests)': [rate(errors.before.rate), rate(errors.after.rate)] },
        shared: judged(errors, 'requests', exact(errors.difference)),
      },
      {
        name: /95th percentile of request durations/,
        windows: {
          Requests: [p95.before.requests, p95.after.requests].map(String),
          p95: [`${exact(p95.before.p95_ms)} ms`, `${exact(p95.after.p95_ms)} ms`],
          'Slower than the threshold': [p95.before.slower, p95.after.slower].map(String),
          'Share slower (slower ÷ requests)': [rate(p95.before.rate), rate(p95.after.rate)],
        },
        shared: { "Threshold (the before window's p95)": `${exact(p95.threshold_ms)} ms`, ...judged(p95, 'requests', `${exact(p95.difference)} ms`) },
      },
      {
        name: /Sessions started in each window/,
        windows: {
          Sessions: [crashes.before.sessions, crashes.after.sessions].map(String),
          Crashed: [crashes.before.crashed, crashes.after.crashed].map(String),
          'Crash-free rate (1 − crashed ÷ sessions)': [rate(crashes.before.crash_free_rate), rate(crashes.after.crash_free_rate)],
        },
        shared: judged(crashes, 'sessions', exact(crashes.difference)),
      },
    ];
    for (const { name, windows, shared } of tables) {
      const table = page.getByRole('table', { name });
      // each window's bounds are the API's
      const bounds = table.getByRole('columnheader').locator('time');
      expect(await Promise.all([0, 1, 2, 3].map((n) => bounds.nth(n).getAttribute('datetime')))).toEqual([health.before.from, health.before.to, health.after.from, health.after.to]);
      for (const [label, expected] of Object.entries(windows)) expect({ label, shown: await cellTexts(table, label) }).toEqual({ label, shown: expected });
      for (const [label, expected] of Object.entries(shared)) expect({ label, shown: await cellTexts(table, label) }).toEqual({ label, shown: [expected] });
    }
    // the planting gives both tests: z-tests on errors and latency, the exact Poisson comparison on two crashes against one
    expect([errors.test, p95.test, crashes.test]).toEqual(['two_proportion_z', 'two_proportion_z', 'poisson_exact']);

    const newIssues = page.getByRole('table', { name: 'Issues first seen in shop@2.0.0 after the deployment' });
    expect(health.new_issues).toHaveLength(1);
    const [issue] = health.new_issues;
    expect(await newIssues.getByRole('link', { name: issue.title }).getAttribute('href')).toBe(`/issues/${issue.id}`);
    expect((await newIssues.getByRole('row').nth(1).getByRole('cell').last().textContent())?.trim()).toBe(String(issue.count));
    expect(await review(page, 'deployment-health')).toEqual([]);

    // another window is a URL parameter, and its figures are the API's for that window
    await page.getByLabel('Minutes compared on each side').selectOption('30');
    await page.waitForURL((url) => url.searchParams.get('window') === '30');
    const shorter = await apiGet(dashboard, page, `/v1/deployments/${deploymentId}/health?window=30`);
    const errorTable = page.getByRole('table', { name: /Error events per request/ });
    await showsText(rowCells(errorTable, 'Requests').first(), String(shorter.error_rate.before.requests));
    expect(await cellTexts(errorTable, 'Errors')).toEqual([shorter.error_rate.before.errors, shorter.error_rate.after.errors].map(String));
    expect(await cellTexts(errorTable, 'Statistic')).toEqual([`z = ${exact(shorter.error_rate.statistic)}`]);
    expect(await cellTexts(errorTable, 'p-value (one-sided)')).toEqual([exact(shorter.error_rate.p_value)]);
  }, 90_000);

  test("the issue page links to the health of its release's deployment; without a model it offers no investigation", async () => {
    const health = await apiGet(dashboard, page, `/v1/deployments/${deploymentId}/health`);
    await page.goto(`/issues/${health.new_issues[0].id}`);
    await page.getByRole('heading', { level: 1, name: 'TypeError: price is undefined since 2.0' }).waitFor();
    const releaseHealth = page.getByRole('region', { name: 'Release health' });
    await releaseHealth.getByRole('link', { name: 'Deployment health of shop@2.0.0 in production' }).click();
    await page.waitForURL(`**/deployments/${deploymentId}`);
    await page.getByRole('heading', { name: `Verdict: ${health.verdict}` }).waitFor();

    await page.goBack();
    await releaseHealth.waitFor();
    await page.getByRole('heading', { name: 'Events over time' }).waitFor();
    expect(await page.getByRole('button', { name: /Investigate/ }).count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'AI investigation' }).count()).toBe(0);
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 60_000);
});

describe('an AI investigation from the issue page', () => {
  let dashboard: Dashboard;
  let model: FakeOllama;
  let page: Page;
  let issueUrl: string;
  const ANSWER = { summary: 'totalOf reads the price of a cart item that is undefined since shop@1.0.0.', suggested_actions: ['Guard against missing items in totalOf', 'Add a test for an empty cart'] };

  beforeAll(async () => {
    model = await startFakeOllama({ answer: ANSWER });
    dashboard = await startDashboard({ OLLAMA_HOST: model.url, OLLAMA_MODEL: 'test-model' });
    page = await (await dashboard.newContext()).newPage();
    await signUpInBrowser(page, { email: uniqueEmail('investigator'), password: PASSWORD, organization: 'Investigators' });
    const project = await createProjectInBrowser(page, 'cart');
    const dsn = new URL(project.dsn);
    const event = errorEvent({}, { type: 'CartError', value: 'price of undefined' });
    const answer = await fetch(`${dashboard.ingestUrl}/api${dsn.pathname}/envelope/?sentry_key=${dsn.username}`, { method: 'POST', body: envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]) });
    expect(answer.status).toBe(200);
    await page.goto(`/issues?project=${project.projectId}`);
    await page.getByRole('link', { name: 'CartError: price of undefined' }).click({ timeout: TELEMETRY_WAIT });
    await page.waitForURL(/\/issues\/[0-9a-f]{24}/);
    issueUrl = new URL(page.url()).pathname;
  }, 120_000);
  afterAll(async () => {
    await dashboard?.close();
    await model?.close();
  });

  test('"Investigate with AI" shows the investigation running, then the stored evidence and the answer side by side', async () => {
    await page.goto(issueUrl);
    const panel = page.getByRole('region', { name: 'AI investigation' });
    await panel.waitFor();
    model.hold();
    await panel.getByRole('button', { name: 'Investigate with AI' }).click();
    const status = panel.getByRole('status');
    await showsText(status, /Queued|Running/);
    await eventually(async () => (model.requests.length > 0 ? true : undefined), 'the model to be asked', TELEMETRY_WAIT);
    await showsText(status, 'Running', TELEMETRY_WAIT);
    // the evidence is stored before the model answers, and shown while it runs
    await panel.getByRole('region', { name: 'Evidence shown to the model' }).waitFor();
    expect(await panel.getByRole('button', { name: /Investigate/ }).count()).toBe(0);
    expect(await review(page, 'issue-investigation-running')).toEqual([]);
    model.release();

    const answer = panel.getByRole('region', { name: "The model's answer" });
    await showsText(answer, ANSWER.summary, TELEMETRY_WAIT);
    expect((await answer.getByRole('listitem').allTextContents()).map((text) => text.trim())).toEqual(ANSWER.suggested_actions);
    await showsText(answer, 'test-model');
    await status.waitFor({ state: 'detached' });

    // the evidence shown is what the model was sent
    const investigation = await apiGet(dashboard, page, `/v1/issues/${issueUrl.split('/').pop()}/investigation`);
    const sent = JSON.parse(model.requests[0]!.messages.find((message) => message.role === 'user')!.content).evidence;
    expect(investigation.evidence).toEqual(sent);
    const evidence = panel.getByRole('region', { name: 'Evidence shown to the model' });
    for (const key of Object.keys(investigation.evidence)) await evidence.getByText(key.charAt(0).toUpperCase() + key.slice(1).replaceAll('_', ' '), { exact: true }).waitFor();
    await evidence.getByText('Issue', { exact: true }).click();
    await showsText(evidence.getByRole('figure', { name: 'Issue evidence' }), JSON.stringify(investigation.evidence.issue, null, 2));

    // side by side on a desktop screen
    const [left, right] = [await evidence.boundingBox(), await answer.boundingBox()];
    expect(left!.x + left!.width).toBeLessThanOrEqual(right!.x);
    expect(Math.abs(left!.y - right!.y)).toBeLessThan(5);
    await panel.getByRole('button', { name: 'Investigate again' }).waitFor();
    expect(await review(page, 'issue-investigation')).toEqual([]);
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 90_000);
});
