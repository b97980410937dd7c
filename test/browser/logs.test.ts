/**
 * The logs pages as a person uses them: lines sent as an OTLP/JSON log exporter sends them, from two
 * services, searched with the filter form, followed while new lines arrive, and grouped into patterns.
 */
import type { Locator, Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, timeToData, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { hex, otlpLogs, type OtlpLogLine as LogLine } from '../support/factories/telemetry.js';

let dashboard: Dashboard;
let page: Page;
let projectId: string;
let publicKey: string;
const traceId = hex(16);
const started = Date.now();
/** 52 lines of one shape: more than a page of 50, and a pattern with a count to find. */
const logins: LogLine[] = Array.from({ length: 52 }, (_, i) => ({ service: 'auth', body: `User ${i} logged in from 10.0.0.${i}`, level: 'info', at: started - 10 * 60_000 + i * 1000 }));
const payments: LogLine[] = [
  { service: 'checkout', body: 'Payment declined for order 1001', level: 'error', at: started - 5 * 60_000, traceId, attributes: { 'customer.tier': 'gold' } },
  { service: 'checkout', body: 'Payment accepted for order 1002', level: 'info', at: started - 4 * 60_000, attributes: { 'customer.tier': 'silver' } },
];

/** What an OTLP/HTTP log exporter posts, each service under a resource of its own. */
async function sendLogs(lines: LogLine[]) {
  const body = otlpLogs(lines);
  const answer = await fetch(`${dashboard.ingestUrl}/v1/logs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` }, body: JSON.stringify(body) });
  expect(answer.status).toBe(200);
}

const lineTable = () => page.getByRole('table', { name: /Log lines/ });
const row = (text: string): Locator => lineTable().getByRole('row').filter({ hasText: text });
const TELEMETRY_WAIT = { timeout: 30_000 };

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('logs'), password: PASSWORD, organization: 'Logs Org' });
  const created = await createProjectInBrowser(page, 'logs-web');
  projectId = created.projectId;
  publicKey = new URL(created.dsn).username;
}, 120_000);
afterAll(() => dashboard?.close());

describe('the logs page', () => {
  test('before any line arrives, it says how to send logs', async () => {
    await page.goto(`/logs?project=${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Logs' }).waitFor();
    await page.getByRole('heading', { name: 'No log lines in this window' }).waitFor();
    expect(await page.getByRole('link', { name: 'Set up a project' }).last().getAttribute('href')).toBe('/onboarding');
    expect(await review(page, 'logs-empty')).toEqual([]);
  }, 60_000);

  test('lists the lines of both services with time, level, service and a link to their trace', async () => {
    await sendLogs([...logins, ...payments]);
    await page.goto(`/logs?project=${projectId}`);
    await row('Payment declined for order 1001').waitFor(TELEMETRY_WAIT);
    const declined = row('Payment declined for order 1001');
    await showsText(declined, 'checkout');
    expect(await declined.locator('.badge').textContent()).toBe('error');
    expect(await declined.getByRole('link').getAttribute('href')).toBe(`/traces/${traceId}`);
    await row('User 51 logged in from 10.0.0.51').waitFor();
    await showsText(row('User 51 logged in from 10.0.0.51'), 'auth');
    await hasCount(lineTable().getByRole('row'), 1 + 50);
    expect(await review(page, 'logs')).toEqual([]);
    console.log(`/logs shows its lines ${await timeToData(page, `/logs?project=${projectId}`, () => row('Payment declined for order 1001'))} ms after navigation`);
  }, 90_000);

  test('a line opens to its attributes, and an attribute narrows the search to the lines that have it', async () => {
    await page.goto(`/logs?project=${projectId}`);
    const message = page.getByRole('button', { name: 'Payment accepted for order 1002' });
    await message.click();
    expect(await message.getAttribute('aria-expanded')).toBe('true');
    const details = page.locator(`#${(await message.getAttribute('aria-controls'))!}`);
    await showsText(details, 'customer.tier');
    await showsText(details, 'silver');
    expect(await review(page, 'logs-line-open')).toEqual([]);
    await details.getByRole('button', { name: 'Filter by this' }).click();
    await page.waitForURL((url) => url.searchParams.get('attribute') === 'customer.tier:silver');
    await row('Payment accepted for order 1002').waitFor();
    await row('Payment declined for order 1001').waitFor({ state: 'detached' });
    await hasCount(lineTable().getByRole('row'), 2);
  }, 60_000);

  test('level, service and words each narrow the URL and the rows', async () => {
    await page.goto(`/logs?project=${projectId}`);
    await row('Payment declined').waitFor();
    await page.getByLabel('Level').selectOption('error');
    await page.waitForURL((url) => url.searchParams.get('level') === 'error');
    await row('Payment accepted').waitFor({ state: 'detached' });
    await row('Payment declined for order 1001').waitFor();
    await hasCount(lineTable().getByRole('row'), 2);

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Service', { exact: true }).fill('checkout');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('service') === 'checkout' && !url.searchParams.has('level'));
    await row('logged in').first().waitFor({ state: 'detached' });
    await row('Payment accepted for order 1002').waitFor();
    await hasCount(lineTable().getByRole('row'), 3);

    await page.getByLabel('Service', { exact: true }).fill('');
    await page.getByLabel('Search words').fill('User 7');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL((url) => url.searchParams.get('q') === 'User 7' && !url.searchParams.has('service'));
    await row('User 7 logged in from 10.0.0.7').waitFor();
    await hasCount(lineTable().getByRole('row'), 2);
    expect(await review(page, 'logs-filtered')).toEqual([]);

    // the URL is the search: opening it again shows the same lines
    await page.reload();
    await row('User 7 logged in from 10.0.0.7').waitFor();
    expect(await page.getByLabel('Search words').inputValue()).toBe('User 7');
  }, 90_000);

  test('"Older lines" pages back to the oldest lines and "Newest lines" returns', async () => {
    await page.goto(`/logs?project=${projectId}`);
    await row('Payment declined').waitFor();
    expect(await row('User 0 logged in from 10.0.0.0').count()).toBe(0);
    await page.getByRole('button', { name: 'Older lines' }).click();
    await page.waitForURL((url) => url.searchParams.has('cursor'));
    await row('User 0 logged in from 10.0.0.0').waitFor();
    expect(await row('Payment declined').count()).toBe(0);
    await page.getByRole('button', { name: 'Newest lines' }).click();
    await row('Payment declined').waitFor();
  }, 60_000);

  test('following shows a line sent after the page opened at the top, without reloading', async () => {
    await page.goto(`/logs?project=${projectId}`);
    await row('Payment declined').waitFor();
    await page.evaluate(() => ((globalThis as unknown as { notReloaded: boolean }).notReloaded = true));
    const follow = page.getByRole('button', { name: 'Follow' });
    expect(await follow.getAttribute('aria-pressed')).toBe('false');
    await follow.click();
    await page.getByRole('button', { name: 'Follow', pressed: true }).waitFor();
    await page.waitForURL((url) => url.searchParams.get('follow') === '1');
    const body = `Inventory restocked sku ${hex(4)}`;
    await sendLogs([{ service: 'inventory', body, level: 'warn', at: Date.now() }]);
    await row(body).waitFor(TELEMETRY_WAIT);
    expect(await lineTable().getByRole('row').nth(1).textContent()).toContain(body);
    await showsText(row(body), 'new');
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await follow.click();
    await page.getByRole('button', { name: 'Follow', pressed: false }).waitFor();
    await page.waitForURL((url) => !url.searchParams.has('follow'));
  }, 60_000);
});

describe('the log patterns page', () => {
  test('shows the repeated shape with its count, and the new pattern among the surges', async () => {
    await page.goto(`/logs?project=${projectId}`);
    await page.getByRole('link', { name: 'Patterns and surges' }).click();
    await page.waitForURL((url) => url.pathname === '/logs/patterns' && url.searchParams.get('project') === projectId);
    await page.getByRole('heading', { level: 1, name: 'Log patterns' }).waitFor();
    const shape = page.getByRole('table', { name: /Log patterns/ }).getByRole('row').filter({ hasText: 'User <*> logged in from <*>' });
    await shape.waitFor(TELEMETRY_WAIT);
    expect(await shape.getByRole('cell').nth(1).textContent()).toBe('52');
    await showsText(shape, 'auth');
    const surge = page.getByRole('table', { name: /surges/ }).getByRole('row').filter({ hasText: 'User <*> logged in from <*>' });
    await surge.waitFor(TELEMETRY_WAIT);
    await showsText(surge, 'new pattern');
    expect(await review(page, 'log-patterns')).toEqual([]);
    console.log(`/logs/patterns shows its patterns ${await timeToData(page, `/logs/patterns?project=${projectId}`, () => shape)} ms after navigation`);
    await page.getByRole('link', { name: 'Lines', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/logs');
    await row('Payment declined').waitFor();
  }, 60_000);

  test('nothing went wrong in the browser', () => {
    expect(unexpectedProblems(dashboard)).toEqual([]);
  });
});
