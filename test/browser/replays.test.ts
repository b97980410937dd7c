/**
 * Session replays as a person meets them: a small page recorded with rrweb's own `record` in this test's
 * Chromium, sent through the ingest as a browser SDK sends a segment, listed, and watched by the owner in
 * the player (behind the notice that viewing is audited); a member is told why not, and a project whose
 * capture was switched off shows the API's refusal instead of a player. The server runs without
 * API_PUBLIC_URL and PAYMENT_API_KEY, so the single sign-on and usage pages show those features off.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard, logInInBrowser } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { eventId, replayEnvelope } from '../support/factories/telemetry.js';
import { Client } from '../support/http.js';
import { eventually } from '../support/wait.js';

/** rrweb's browser build (the package exports only its module entry; the UMD file sits beside it). */
const rrwebSource = readFileSync(join(dirname(createRequire(import.meta.url).resolve('rrweb')), 'rrweb.umd.min.cjs'), 'utf8');

let dashboard: Dashboard;
let ownerContext: BrowserContext;
let owner: Page;
let ownerApi: Client;
let shop: { projectId: string; publicKey: string; number: string };
let withdrawn: { projectId: string; publicKey: string; number: string };
const replayId = eventId();
const withdrawnReplayId = eventId();

/** A checkout page recorded for real: rrweb's full snapshot, then the total changing and a click. */
async function recordCheckout(): Promise<unknown[]> {
  const context = await dashboard.browser.newContext();
  const page = await context.newPage();
  await page.setContent(
    '<!doctype html><html><head><title>Checkout</title><style>body{font-family:sans-serif} .total{color:rebeccapurple}</style></head>' +
      '<body><h1>Your basket</h1><p class="total" id="total">Total: 42.00 EUR</p><button id="pay">Pay now</button></body></html>',
  );
  await page.evaluate(rrwebSource);
  await page.evaluate('window.recorded = []; rrweb.record({ emit: (event) => window.recorded.push(event) })');
  await page.waitForTimeout(300);
  await page.evaluate("document.getElementById('total').textContent = 'Total: 38.50 EUR (coupon applied)'");
  await page.getByRole('button', { name: 'Pay now' }).click();
  await page.waitForTimeout(300);
  const events = (await page.evaluate('window.recorded')) as unknown[];
  await context.close();
  return events;
}

async function sendSegment(target: typeof shop, id: string, events: unknown[]) {
  const started = (events[0] as { timestamp: number }).timestamp / 1000;
  const answer = await fetch(`${dashboard.ingestUrl}/api/${target.number}/envelope/?sentry_key=${target.publicKey}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain;charset=UTF-8' },
    body: replayEnvelope(id, { events, event: { replay_start_timestamp: started, timestamp: started + 1, urls: ['https://shop.example/checkout'], user: { email: 'ada@example.test' }, release: 'shop@3.1.0', environment: 'production' } }),
  });
  expect(answer.status).toBe(200);
  await eventually(async () => {
    const listed = await ownerApi.get(`/v1/projects/${target.projectId}/replay`);
    return listed.body.data?.some((replay: { id: string }) => replay.id === id) ? true : undefined;
  }, `replay ${id} listed`, 30_000);
}

async function projectIn(page: Page, name: string) {
  const { projectId, dsn } = await createProjectInBrowser(page, name);
  const url = new URL(dsn);
  // capture on before the DSN's first envelope, so no ingest process holds the "off" answer for it
  expect((await ownerApi.put(`/v1/projects/${projectId}/session-replay`, { enabled: true })).status).toBe(200);
  return { projectId, publicKey: url.username, number: url.pathname.slice(1) };
}

beforeAll(async () => {
  dashboard = await startDashboard();
  ownerContext = await dashboard.newContext();
  owner = await ownerContext.newPage();
  await signUpInBrowser(owner, { email: uniqueEmail('replays'), password: PASSWORD, organization: 'Replay Org' });
  const cookie = (await ownerContext.cookies()).find((item) => item.name === 'slk_session')!;
  ownerApi = new Client(dashboard.apiUrl, { cookie: `${cookie.name}=${cookie.value}`, origin: dashboard.webUrl });
  shop = await projectIn(owner, 'shop-web');
  withdrawn = await projectIn(owner, 'kiosk-web');
  const events = await recordCheckout();
  await sendSegment(shop, replayId, events);
  await sendSegment(withdrawn, withdrawnReplayId, events);
  expect((await ownerApi.put(`/v1/projects/${withdrawn.projectId}/session-replay`, { enabled: false })).status).toBe(200);
}, 120_000);
afterAll(() => dashboard?.close());

describe('the owner', () => {
  test('finds the recorded session in the list and watches it: the audit notice, then the recorded page in the player', async () => {
    await owner.goto(`/replays?project=${shop.projectId}`);
    const row = owner.getByRole('table', { name: /Recorded sessions/ }).getByRole('row').filter({ hasText: 'ada@example.test' });
    await row.waitFor();
    await showsText(row, 'https://shop.example/checkout');
    await showsText(row, 'shop@3.1.0 · production');
    expect(await review(owner, 'replays')).toEqual([]);

    await row.getByRole('link').click();
    await owner.waitForURL(`**/replays/${shop.projectId}/${replayId}`);
    await showsText(owner.locator('.audit-notice'), 'Viewing is audited');
    await owner.getByRole('button', { name: 'Watch the recording' }).click();
    const recorded = owner.getByTitle(/^Session replay of ada@example.test/).contentFrame().getByTitle(/^Recorded page/).contentFrame();
    // the first frame is the page as recorded: its heading and the total before the coupon
    await recorded.getByRole('heading', { name: 'Your basket' }).waitFor({ timeout: 15_000 });
    await recorded.getByText('Total: 42.00 EUR').waitFor();
    await owner.getByRole('button', { name: 'Play' }).click();
    await recorded.getByText('Total: 38.50 EUR (coupon applied)').waitFor({ timeout: 15_000 });
    expect(await review(owner, 'replay-player')).toEqual([]);

    const views = await ownerApi.get('/v1/audit-log?action=replay.view');
    expect(views.body.data.map((entry: { target: { id: string } }) => entry.target.id)).toContain(replayId);
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 90_000);

  test("a project whose capture was switched off shows the API's refusal, not an empty player", async () => {
    await owner.goto(`/replays?project=${withdrawn.projectId}`);
    await showsText(owner.getByRole('main'), 'Session replay is off for kiosk-web');
    await owner.getByRole('table', { name: /Recorded sessions/ }).getByRole('link').click();
    await owner.getByRole('button', { name: 'Watch the recording' }).click();
    const refusal = owner.getByRole('alert');
    await showsText(refusal, 'This recording cannot be watched');
    await showsText(refusal, 'consent_withdrawn · HTTP 403');
    await showsText(refusal, 'session replay capture is off for this project');
    await hasCount(owner.getByTitle(/^Session replay of/), 0);
    expect(await review(owner, 'replay-withdrawn')).toEqual([]);
  }, 60_000);

  test('the player draws in a stage with a policy of its own; the dashboard may frame only that', async () => {
    const stage = await fetch(`${dashboard.webUrl}/replay-frame.html`);
    expect(stage.status).toBe(200);
    const stagePolicy = stage.headers.get('content-security-policy')!;
    expect(stagePolicy).toContain("default-src 'none'");
    expect(stagePolicy).toContain("style-src 'self' 'unsafe-inline'");
    expect(stagePolicy).toContain("frame-ancestors 'self'");
    expect(stagePolicy).not.toContain('script-src');
    const app = await fetch(`${dashboard.webUrl}/replays`);
    const appPolicy = app.headers.get('content-security-policy')!;
    expect(appPolicy).toContain("frame-src 'self'");
    expect(appPolicy).toContain("frame-ancestors 'none'");
    expect(appPolicy).not.toMatch(/unsafe-inline|unsafe-eval/);
  });
});

test('a member sees which sessions were recorded and why they may not watch them', async () => {
  const email = uniqueEmail('member');
  const invite = await ownerApi.post('/v1/members', { email, role: 'member' });
  expect(invite.status).toBe(201);
  const joined = await new Client(dashboard.apiUrl).post('/v1/auth/register', { email, password: PASSWORD, invite_token: invite.body.invite_token });
  expect(joined.status).toBe(201);
  const context = await dashboard.newContext();
  const member = await context.newPage();
  await logInInBrowser(member, email, PASSWORD);

  await member.goto(`/replays?project=${shop.projectId}`);
  await showsText(member.getByRole('main'), "Only the organization's owners may watch a recording");
  const table = member.getByRole('table', { name: /Recorded sessions/ });
  await table.getByRole('row').filter({ hasText: 'ada@example.test' }).waitFor();
  await hasCount(table.getByRole('link'), 0);
  expect(await review(member, 'replays-member')).toEqual([]);

  await member.goto(`/replays/${shop.projectId}/${replayId}`);
  await showsText(member.getByRole('status'), 'Your role is member');
  await hasCount(member.getByRole('button', { name: 'Watch the recording' }), 0);
  await context.close();
}, 60_000);

describe('on a server without API_PUBLIC_URL or PAYMENT_API_KEY', () => {
  test('the single sign-on page says how to turn it on', async () => {
    await owner.goto('/settings/sso');
    const off = owner.getByRole('region', { name: 'Single sign-on is off on this server' });
    await off.waitFor();
    await showsText(off, 'set API_PUBLIC_URL to switch it on');
    await showsText(off, '/v1/auth/sso/callback');
    expect(await review(owner, 'settings-sso-off')).toEqual([]);
  }, 60_000);

  test('the usage page offers no upgrade', async () => {
    await owner.goto('/settings/usage');
    await owner.getByRole('table', { name: /by category/ }).waitFor();
    // the page asked the API's document whether checkout exists before deciding
    await owner.waitForLoadState('networkidle');
    await hasCount(owner.getByRole('button', { name: 'Upgrade' }), 0);
    // the SSO routes' 501 sso_unavailable is the answer the page above shows
    expect(unexpectedProblems(dashboard, [/settings\/sso: .*status of 501/])).toEqual([]);
  }, 60_000);
});
