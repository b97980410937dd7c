/**
 * The services pages over spans sent as an OpenTelemetry exporter sends them (OTLP/JSON): a frontend
 * calls the api over HTTP; the api queries PostgreSQL, charges through billing (which calls the api
 * back, closing a cycle, and fails a third of the time) and publishes to the `orders` queue; a worker
 * consumes it and calls an inventory service whose long name has a slash in it.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { hex, otlpTraces, type OtlpSpan } from '../support/factories/telemetry.js';

let dashboard: Dashboard;
let page: Page;
let projectId: string;

const TRACES = 30;
const INVENTORY = 'inventory-reconciliation/eu-west-1-primary';
const TELEMETRY_WAIT = { timeout: 30_000 };

/** Every span of the story, grouped by the service that reports it. */
function storySpans(start: number): Record<string, OtlpSpan[]> {
  const spans: Record<string, OtlpSpan[]> = { frontend: [], api: [], billing: [], worker: [], [INVENTORY]: [] };
  const http = (method: string, peer: string) => ({ 'http.request.method': method, 'peer.service': peer });
  for (let i = 0; i < TRACES; i++) {
    const traceId = hex(16);
    const at = start + i * 20_000;
    const id = { page: hex(8), callApi: hex(8), api: hex(8), callBilling: hex(8), billing: hex(8), callback: hex(8), publish: hex(8), consume: hex(8), callInventory: hex(8), inventory: hex(8) };
    const billingFails = i % 3 === 0;
    spans.frontend!.push(
      { traceId, id: id.page, name: 'GET /checkout', kind: 'server', startMs: at, durationMs: 150 + i * 5, attributes: { 'http.request.method': 'GET', 'http.route': '/checkout', 'http.response.status_code': 200 } },
      { traceId, id: id.callApi, parent: id.page, name: 'POST', kind: 'client', startMs: at + 5, durationMs: 120, attributes: http('POST', 'api') },
    );
    spans.api!.push(
      { traceId, id: id.api, parent: id.callApi, name: 'POST /orders', kind: 'server', startMs: at + 6, durationMs: 110, attributes: { 'http.request.method': 'POST', 'http.route': '/orders', 'http.response.status_code': 200 } },
      { traceId, id: hex(8), parent: id.api, name: 'SELECT orders', kind: 'client', startMs: at + 8, durationMs: 12, attributes: { 'db.system': 'postgresql', 'db.query.text': 'SELECT * FROM orders WHERE id = $1' } },
      { traceId, id: id.callBilling, parent: id.api, name: 'POST', kind: 'client', startMs: at + 25, durationMs: 60, status: billingFails ? 'error' : undefined, attributes: http('POST', 'billing') },
      { traceId, id: id.publish, parent: id.api, name: 'orders publish', kind: 'producer', startMs: at + 90, durationMs: 3, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } },
    );
    spans.billing!.push(
      { traceId, id: id.billing, parent: id.callBilling, name: 'POST /charge', kind: 'server', startMs: at + 26, durationMs: 55, status: billingFails ? 'error' : undefined, attributes: { 'http.request.method': 'POST', 'http.route': '/charge', 'http.response.status_code': billingFails ? 502 : 200 } },
      { traceId, id: id.callback, parent: id.billing, name: 'GET', kind: 'client', startMs: at + 30, durationMs: 10, attributes: http('GET', 'api') },
    );
    spans.worker!.push(
      { traceId, id: id.consume, parent: id.publish, name: 'orders process', kind: 'consumer', startMs: at + 200, durationMs: 40, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': 'orders' } },
      { traceId, id: id.callInventory, parent: id.consume, name: 'PUT', kind: 'client', startMs: at + 205, durationMs: 25, attributes: http('PUT', INVENTORY) },
    );
    spans[INVENTORY]!.push({ traceId, id: id.inventory, parent: id.callInventory, name: 'PUT /stock', kind: 'server', startMs: at + 206, durationMs: 22, attributes: { 'http.request.method': 'PUT', 'http.route': '/stock', 'http.response.status_code': 200 } });
  }
  return spans;
}

/** Reloads the page until `ready` shows, as a person refreshes a list while telemetry is on its way. */
async function reloadUntil(ready: () => Promise<boolean>, timeoutMs = 45_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`${page.url()} did not show the expected data within ${timeoutMs} ms`);
    await page.reload();
  }
}

const serviceRow = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });

/** The text of each body cell of a table, row by row. */
const cellsOf = (table: ReturnType<Page['getByRole']>) =>
  table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.innerText.replace(/\s+/g, ' ').trim())));

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('services'), password: PASSWORD, organization: 'Services Web' });
  const created = await createProjectInBrowser(page, 'shop');
  projectId = created.projectId;
  const publicKey = new URL(created.dsn).username;
  const answer = await fetch(`${dashboard.ingestUrl}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` },
    body: JSON.stringify(otlpTraces(storySpans(Date.now() - 15 * 60_000))),
  });
  expect(answer.status).toBe(200);
}, 120_000);
afterAll(() => dashboard?.close());

describe('the services pages', () => {
  test('the list shows every service with its volume, latency and health, and the reason billing is critical', async () => {
    await page.goto(`/services?project=${projectId}&range=1h`);
    // the workers store spans asynchronously: wait until every service has counted all its requests
    await reloadUntil(async () => {
      await page.getByRole('heading', { level: 1, name: 'Services' }).waitFor();
      await page.getByRole('table').or(page.getByText('No service served requests')).first().waitFor(TELEMETRY_WAIT);
      const rows = await page.getByRole('row').allTextContents();
      return ['frontend', 'api', 'billing', 'worker', INVENTORY].every((name) => rows.some((row) => row.startsWith(name) && row.includes(`${TRACES}`)));
    });
    const byName = new Map((await cellsOf(page.getByRole('table'))).map((cells) => [cells[0], cells]));
    expect(byName.get('frontend')).toEqual(['frontend', 'healthy No health rule crossed', '30', expect.stringMatching(/^[\d.]+ \/min$/), '0 (0 %)', expect.stringMatching(/ ms$/), expect.stringMatching(/ ms$/), expect.stringMatching(/ ms$/)]);
    expect(byName.get('billing')!.slice(1, 5)).toEqual(['critical Error rate 33.33 % ≥ critical threshold 25 %', '30', expect.stringMatching(/\/min$/), '10 (33.33 %)']);
    await showsText(serviceRow('billing'), 'critical');
    expect(await review(page, 'services-list')).toEqual([]);

    await page.getByRole('link', { name: INVENTORY, exact: true }).click();
    await page.waitForURL((url) => url.pathname === `/services/${encodeURIComponent(INVENTORY)}` && url.searchParams.get('project') === projectId);
    await page.getByRole('heading', { level: 1, name: INVENTORY }).waitFor();
    await showsText(page.getByRole('region', { name: 'Called by' }), 'worker');
  }, 90_000);

  test('the map draws every node by type, lists the edges with their counts, and shows an edge’s figures on focus', async () => {
    await page.goto(`/services/map?project=${projectId}&range=1h`);
    await page.getByRole('heading', { level: 1, name: 'Service map' }).waitFor();
    const edges = page.getByRole('table', { name: /Calls between services/ });
    await edges.waitFor(TELEMETRY_WAIT);
    const picture = page.locator('.map-frame svg');
    for (const service of ['frontend', 'api', 'billing', 'worker', INVENTORY]) {
      await picture.getByRole('link', { name: new RegExp(`^${service.replace('/', '\\/')}, service: ${TRACES} requests served`) }).waitFor();
    }
    await picture.getByRole('group', { name: /^postgresql, database: 30 calls received/ }).waitFor();
    await picture.getByRole('group', { name: /^orders, queue/ }).waitFor();

    // caller, callee, kind, calls, errors
    const rows = (await cellsOf(edges)).map((cells) => cells.slice(0, 5).join(' | '));
    expect(rows).toEqual(
      expect.arrayContaining([
        'frontend (service) | api (service) | http | 30 | 0 (0 %)',
        'api (service) | billing (service) | http | 30 | 10 (33.33 %)',
        'billing (service) | api (service) | http | 30 | 0 (0 %)',
        'api (service) | postgresql (database) | db | 30 | 0 (0 %)',
        'api (service) | orders (queue) | messaging | 30 | 0 (0 %)',
        'orders (queue) | worker (service) | messaging | 30 | 0 (0 %)',
        `worker (service) | ${INVENTORY} (service) | http | 30 | 0 (0 %)`,
      ]),
    );

    // a keyboard user reaches an edge and reads its figures in the tooltip; Escape hides it
    const apiToBilling = picture.getByRole('group', { name: /^api → billing \(http\)/ });
    await apiToBilling.focus();
    const tooltip = page.getByRole('tooltip');
    await showsText(tooltip, 'api → billing');
    await showsText(tooltip, '30 calls');
    await showsText(tooltip, '10 errors (33.33 %)');
    await showsText(tooltip, /p95 \d/);
    await page.keyboard.press('Escape');
    await tooltip.waitFor({ state: 'detached' });
    await picture.getByRole('link', { name: /^billing, service/ }).hover();
    await showsText(page.getByRole('tooltip'), '10 errors');

    await page.getByRole('button', { name: 'Show structure' }).click();
    await page.waitForURL(/structure=1/);
    await page.getByRole('button', { name: 'Show structure', pressed: true }).waitFor();
    const structure = page.getByRole('region', { name: 'Structure' });
    await showsText(structure, 'Cycle: api → billing → api');
    await showsText(structure, /api: losing it cuts \d+ caller–callee pairs/);
    await showsText(structure, /Longest chain.*frontend → api → orders → worker → inventory-reconciliation\/eu-west-1-primary \(5 nodes\)/);
    expect(await review(page, 'services-map')).toEqual([]);
  }, 90_000);

  test('a service page shows its traffic, figures and dependencies both ways', async () => {
    await page.goto(`/services/api?project=${projectId}&range=1h`);
    await page.getByRole('heading', { level: 1, name: 'api' }).waitFor();
    await page.getByRole('img', { name: /Requests and errors of api/ }).waitFor(TELEMETRY_WAIT);
    await showsText(page.getByRole('region', { name: 'Health' }), 'healthy');
    await showsText(page.getByRole('definition').first(), `${TRACES}`);
    const callsOut = (await cellsOf(page.getByRole('table', { name: 'What api calls' }))).map((cells) => cells.slice(0, 4).join(' | '));
    expect(callsOut.sort()).toEqual(['billing (service) | http | 30 | 10 (33.33 %)', 'orders (queue) | messaging | 30 | 0 (0 %)', 'postgresql (database) | db | 30 | 0 (0 %)']);
    const calledBy = (await cellsOf(page.getByRole('table', { name: 'What calls api' }))).map((cells) => cells.slice(0, 4).join(' | '));
    expect(calledBy.sort()).toEqual(['billing (service) | http | 30 | 0 (0 %)', 'frontend (service) | http | 30 | 0 (0 %)']);
    await page.getByRole('region', { name: 'Endpoints that surged' }).getByRole('table').or(page.getByText('No endpoint of api surged')).first().waitFor();
    await page.getByRole('region', { name: 'Approaching a threshold' }).getByText(/Nothing of api is climbing|Now /).first().waitFor();
    expect(await review(page, 'services-service')).toEqual([]);

    await page.getByRole('table', { name: 'What calls api' }).getByRole('link', { name: 'frontend' }).click();
    await page.getByRole('heading', { level: 1, name: 'frontend' }).waitFor();
    expect(new URL(page.url()).searchParams.get('project')).toBe(projectId);
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 90_000);
});
