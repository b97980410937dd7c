/**
 * The project, integration, single sign-on and usage settings as an admin uses them, on a server with
 * every optional part on: single sign-on (API_PUBLIC_URL, the local OIDC provider, TXT records from the
 * local DNS server), checkout (the local payment server), plan figures, and a local stand-in for GitHub's
 * REST API. Each page's numbers and states are compared with what the API answers.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Locator, Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard, logInInBrowser } from '../support/browser.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent } from '../support/factories/telemetry.js';
import { Client } from '../support/http.js';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js';
import { startPaymentServer, type PaymentServer } from '../support/payment-server.js';
import { eventually } from '../support/wait.js';

const GITHUB_TOKEN = 'ghp_settings_test_token_7Q2x';
const CLIENT_ID = 'sluice-dashboard';
const CLIENT_SECRET = 'a-client-secret-of-some-length';

let dashboard: Dashboard;
let dns: TestDnsServer;
let payments: PaymentServer;
let idp: TestOidcProvider;
/** GitHub's `GET /repos/{owner}/{name}` for one repository and one token. */
let github: Server;
let page: Page;
let ownerApi: Client;
let project: { id: string; publicKey: string; number: string };

const table = (name: string | RegExp) => page.getByRole('table', { name });
const rowOf = (scope: Locator, text: string) => scope.getByRole('row').filter({ hasText: text });

beforeAll(async () => {
  dns = await startDnsServer();
  payments = await startPaymentServer();
  github = createServer((req, res) => {
    const ok = req.url === '/repos/acme/shop' && req.headers.authorization === `Bearer ${GITHUB_TOKEN}`;
    res.writeHead(ok ? 200 : req.headers.authorization === `Bearer ${GITHUB_TOKEN}` ? 404 : 401, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { full_name: 'acme/shop', html_url: 'https://github.example.test/acme/shop', default_branch: 'trunk' } : { message: req.url === '/repos/acme/shop' ? 'Bad credentials' : 'Not Found' }));
  });
  await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
  dashboard = await startDashboard(({ apiPort }) => ({
    API_PUBLIC_URL: `http://localhost:${apiPort}`,
    DNS_RESOLVER: dns.address,
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    PAYMENT_API_KEY: payments.key,
    PAYMENT_API_URL: payments.url,
    PAYMENT_PRICE_ID: 'price_team_monthly',
    PLAN_INCLUDED: 'errors=1000,logs=50000',
    GITHUB_API_URL: `http://127.0.0.1:${(github.address() as AddressInfo).port}`,
  }));
  idp = await startOidcProvider({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${dashboard.apiUrl}/v1/auth/sso/callback` });
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('settings'), password: PASSWORD, organization: 'Settings Org' });
  const cookie = (await context.cookies()).find((item) => item.name === 'slk_session')!;
  ownerApi = new Client(dashboard.apiUrl, { cookie: `${cookie.name}=${cookie.value}`, origin: dashboard.webUrl });
  const created = await createProjectInBrowser(page, 'storefront');
  const dsn = new URL(created.dsn);
  project = { id: created.projectId, publicKey: dsn.username, number: dsn.pathname.slice(1) };
}, 120_000);
afterAll(async () => {
  await dashboard?.close();
  await Promise.all([dns?.close(), payments?.close(), idp?.close(), new Promise((resolve) => github?.close(resolve))]);
});

describe('/settings/projects', () => {
  test('a DSN is added with a label and another revoked; session replay is turned on', async () => {
    await page.goto(`/settings/projects?project=${project.id}`);
    const dsns = table('DSNs of storefront');
    await rowOf(dsns, 'Default').waitFor();
    await page.getByLabel('New DSN label').fill('staging');
    await page.getByLabel('New DSN label').press('Enter');
    await rowOf(dsns, 'staging').waitFor();
    const listed = (await ownerApi.get(`/v1/projects/${project.id}/dsns`)).body.data as Array<{ label: string; dsn: string }>;
    const staging = listed.find((dsn) => dsn.label === 'staging')!;
    await showsText(rowOf(dsns, 'staging'), staging.dsn);

    await rowOf(dsns, 'Default').getByRole('button', { name: 'Revoke' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke the DSN “Default”?' });
    await showsText(dialog, 'stops being accepted within seconds');
    await dialog.getByRole('button', { name: 'Revoke DSN' }).click();
    await hasCount(rowOf(dsns, 'Default'), 0);
    expect(((await ownerApi.get(`/v1/projects/${project.id}/dsns`)).body.data as Array<{ label: string }>).map((dsn) => dsn.label)).toEqual(['staging']);
    project.publicKey = new URL(staging.dsn).username;

    const replay = page.getByRole('region', { name: 'Session replay' });
    await showsText(replay, 'only owners may watch a recording');
    await replay.getByRole('button', { name: 'Turn capture on' }).click();
    await replay.getByRole('button', { name: 'Turn capture off' }).waitFor();
    expect((await ownerApi.get(`/v1/projects/${project.id}`)).body.session_replay).toEqual({ enabled: true });
    expect(await review(page, 'settings-projects')).toEqual([]);
  }, 60_000);

  test('a source map is uploaded with its release and dist, then deleted', async () => {
    await page.goto(`/settings/projects?project=${project.id}`);
    const map = JSON.stringify({ version: 3, file: 'app.min.js', sources: ['app.ts'], names: [], mappings: 'AAAA' });
    await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'app.min.js.map', mimeType: 'application/json', buffer: Buffer.from(map) });
    await page.getByLabel('Name (URL the browser loads it from)').fill('~/static/app.min.js.map');
    await page.getByLabel('Release').fill('storefront@1.4.0');
    await page.getByLabel('Dist').fill('web');
    await page.getByRole('button', { name: 'Upload' }).click();
    const artifacts = table('Artifacts of storefront');
    const row = rowOf(artifacts, '~/static/app.min.js.map');
    await row.waitFor();
    await showsText(row, 'source map');
    await showsText(row, 'storefront@1.4.0');
    const [stored] = (await ownerApi.get(`/v1/projects/${project.id}/artifacts`)).body.data;
    expect(stored).toMatchObject({ name: '~/static/app.min.js.map', release: 'storefront@1.4.0', dist: 'web', kind: 'source_map', size: Buffer.byteLength(map) });
    expect(await review(page, 'settings-projects-artifact')).toEqual([]);

    // the CI steps name this API, the organisation and the project by their slugs
    const [me, projectJson] = [(await ownerApi.get('/v1/me')).body, (await ownerApi.get(`/v1/projects/${project.id}`)).body];
    const steps = page.getByRole('figure', { name: 'sentry-cli steps' });
    await showsText(steps, `export SENTRY_ORG=${me.organization.slug}`);
    await showsText(steps, `export SENTRY_PROJECT=${projectJson.slug}`);
    await showsText(steps, `export SENTRY_URL=${dashboard.apiUrl}`);

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete artifact' }).click();
    await page.getByRole('heading', { name: 'No artifacts yet' }).waitFor();
    expect((await ownerApi.get(`/v1/projects/${project.id}/artifacts`)).body.data).toEqual([]);
  }, 60_000);

  test('a project is created and chosen', async () => {
    await page.goto('/settings/projects');
    await page.getByLabel('Project name').fill('payments-api');
    await page.getByLabel('Platform (optional)').fill('node');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { level: 2, name: 'payments-api' }).waitFor();
    await rowOf(table('DSNs of payments-api'), 'Default').waitFor();
    await showsText(rowOf(table('Projects'), 'payments-api'), 'node');
  }, 60_000);
});

test("a member sees the projects' admin actions disabled with the reason, and may still upload", async () => {
  const email = uniqueEmail('member');
  const invite = await ownerApi.post('/v1/members', { email, role: 'member' });
  expect((await new Client(dashboard.apiUrl).post('/v1/auth/register', { email, password: PASSWORD, invite_token: invite.body.invite_token })).status).toBe(201);
  const context = await dashboard.newContext();
  const member = await context.newPage();
  await logInInBrowser(member, email, PASSWORD);

  await member.goto(`/settings/projects?project=${project.id}`);
  const dsns = member.getByRole('region', { name: 'DSNs' });
  await dsns.getByRole('row').nth(1).waitFor();
  for (const button of [dsns.getByRole('button', { name: 'Add DSN' }), dsns.getByRole('button', { name: 'Revoke' }).first(), member.getByRole('button', { name: /Turn capture/ }), member.getByRole('button', { name: 'Create project' })]) {
    expect(await button.isDisabled()).toBe(true);
  }
  await showsText(dsns, 'Only admins and owners can add or revoke DSNs.');
  expect(await member.getByLabel('File', { exact: true }).isDisabled()).toBe(false);
  expect(await review(member, 'settings-projects-member')).toEqual([]);

  await member.goto('/settings/integrations');
  await showsText(member.getByRole('main'), 'Only admins and owners can see and change integrations');
  await context.close();
}, 60_000);

test('/settings/integrations: GitHub refuses a wrong token in place, then connects; the token is never shown', async () => {
  await page.goto(`/settings/integrations?project=${project.id}`);
  const panel = page.getByRole('region', { name: 'GitHub' });
  await showsText(panel, 'not connected');
  await panel.getByLabel('Repository').fill('acme/shop');
  await panel.getByLabel('Access token').fill('ghp_wrong_token_0000');
  await panel.getByRole('button', { name: 'Connect GitHub' }).click();
  await showsText(panel.getByRole('alert'), 'GitHub was not connected');
  await panel.getByLabel('Access token').fill(GITHUB_TOKEN);
  await panel.getByRole('button', { name: 'Connect GitHub' }).click();
  await showsText(panel, 'ending in …7Q2x');
  await showsText(panel, 'default branch trunk');
  expect(await panel.textContent()).not.toContain(GITHUB_TOKEN);
  expect(await panel.getByLabel('New access token').inputValue()).toBe('');
  expect(await review(page, 'settings-integrations')).toEqual([]);
}, 60_000);

test('/settings/sso: the connection to the provider, a claimed domain, its TXT record, and verification', async () => {
  await page.goto('/settings/sso');
  const connection = page.getByRole('region', { name: 'OpenID Connect connection' });
  await showsText(connection, 'Not set up yet');
  await connection.getByLabel('Issuer URL').fill(idp.issuer);
  await connection.getByLabel('Client id').fill(CLIENT_ID);
  await connection.getByLabel('Client secret').fill(CLIENT_SECRET);
  await connection.getByRole('button', { name: 'Connect', exact: true }).click();
  await showsText(connection, `${dashboard.apiUrl}/v1/auth/sso/callback`);
  await showsText(connection, 'never shown');

  const domains = page.getByRole('region', { name: 'E-mail domains' });
  await domains.getByLabel('Domain').fill('Storefront-Test.example');
  await domains.getByLabel('Domain').press('Enter');
  const claim = domains.getByRole('listitem', { name: 'storefront-test.example' });
  await claim.waitFor();
  const [claimed] = (await ownerApi.get('/v1/settings/sso/domains')).body.data as Array<{ record: { name: string; value: string } }>;
  const record = claim.getByRole('group', { name: 'TXT record for storefront-test.example' });
  await showsText(record, claimed!.record.name);
  await showsText(record, claimed!.record.value);
  await claim.getByRole('button', { name: 'Copy record value for storefront-test.example' }).click();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(claimed!.record.value);
  expect(await review(page, 'settings-sso')).toEqual([]);

  await claim.getByRole('button', { name: 'Verify storefront-test.example' }).click();
  await showsText(claim.getByRole('alert'), `no TXT record ${claimed!.record.name}`);
  dns.txt.set(claimed!.record.name, [claimed!.record.value]);
  await claim.getByRole('button', { name: 'Verify storefront-test.example' }).click();
  await showsText(claim, 'is verified: people with an address there can sign in');
  await showsText(claim.getByRole('heading'), 'verified');
  expect((await ownerApi.get('/v1/settings/sso/domains')).body.data[0].verified).toBe(true);
}, 60_000);

describe('/settings/usage', () => {
  test("this month's numbers, the caveat and the dropped items are the API's", async () => {
    const kept = [errorEvent(), errorEvent()];
    for (const event of kept) {
      // the second envelope also holds an event that is not JSON: accepted, and dropped as invalid
      const items = [{ type: 'event', payload: event }, ...(event === kept[1] ? [{ type: 'event', payload: '{"event_id": ' }] : [])];
      const answer = await fetch(`${dashboard.ingestUrl}/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, { method: 'POST', body: envelope({ event_id: event.event_id }, items) });
      expect(answer.status).toBe(200);
    }
    const usage = await eventually(async () => {
      const body = (await ownerApi.get('/v1/usage')).body;
      return body.categories.find((item: { category: string }) => item.category === 'errors').used === 2 && body.dropped.length === 1 ? body : undefined;
    }, 'usage counted', 30_000);

    await page.goto('/settings/usage');
    const categories = table(/by category/);
    await categories.waitFor();
    for (const item of usage.categories as Array<{ category: string; used: number; included: number | null; percent_used: number | null }>) {
      const cells = await categories.getByRole('row').filter({ has: page.getByRole('cell', { name: labelOf(item.category), exact: true }) }).getByRole('cell').allTextContents();
      expect(cells.slice(0, 4)).toEqual([
        labelOf(item.category),
        item.used.toLocaleString('en-US'),
        item.included == null ? 'no figure' : item.included.toLocaleString('en-US'),
        item.percent_used == null ? '—' : `${item.percent_used.toLocaleString('en-US', { maximumFractionDigits: 2 })} %`,
      ]);
    }
    await showsText(page.getByRole('main'), usage.caveat);
    await showsText(rowOf(table('By project'), 'storefront'), '2');
    const dropped = rowOf(table('Dropped items by reason'), 'invalid');
    await showsText(dropped, 'Errors');
    await showsText(dropped, String(usage.dropped[0].quantity));
    expect(await review(page, 'settings-usage')).toEqual([]);
  }, 60_000);

  test('"Upgrade" opens the hosted checkout of the payment provider, which returns to the usage page', async () => {
    await page.route('https://checkout.example/**', (route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>Pay</title><h1>Hosted checkout</h1>' }));
    await page.goto('/settings/usage');
    await page.getByRole('button', { name: 'Upgrade' }).click();
    await page.waitForURL('https://checkout.example/**');
    const [request] = payments.requests;
    expect(request!.form.get('line_items[0][price]')).toBe('price_team_monthly');
    expect(page.url()).toMatch(/^https:\/\/checkout\.example\/c\/pay\/cs_test_/);
    const success = new URL(request!.form.get('success_url')!.replace('{CHECKOUT_SESSION_ID}', 'cs_test_done'));
    await page.goto(success.pathname + success.search);
    await page.waitForURL('**/settings/usage?checkout=success**');
    await showsText(page.getByRole('status').filter({ hasText: 'checkout' }), 'The checkout is complete.');
    await page.unroute('https://checkout.example/**');
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 60_000);
});

const LABELS: Record<string, string> = { errors: 'Errors', spans: 'Spans', logs: 'Log lines', metrics: 'Metric points', replays: 'Replay segments', checkins: 'Check-ins', feedback: 'Feedback' };
const labelOf = (category: string) => LABELS[category] ?? category;
