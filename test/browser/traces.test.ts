/**
 * The trace pages in a real browser: a trace of three services planted through OTLP/JSON on the ingest port,
 * found in the list, narrowed by the API's own filters, and opened as a waterfall whose rows select a span.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { hex, otlpTraces, type OtlpSpan } from '../support/factories/telemetry.js';

const TELEMETRY_WAIT = 30_000;

let dashboard: Dashboard;
let page: Page;
/** The project's DSN key, as the first test's browser showed it. */
let publicKey: string;
beforeAll(async () => {
  dashboard = await startDashboard();
}, 90_000);
afterAll(() => dashboard?.close());

const traceId = hex(16);
const otherTraceId = hex(16);
const started = Date.now() - 30_000;
const ids = Object.fromEntries(['checkout', 'render', 'call', 'orders', 'validate', 'charge', 'select', 'publish', 'reserve', 'update', 'lock', 'audit'].map((name) => [name, hex(8)]));
const span = (id: string, parent: string | undefined, name: string, kind: OtlpSpan['kind'], at: number, durationMs: number, extra: Partial<OtlpSpan> = {}): OtlpSpan => ({
  traceId,
  id: ids[id]!,
  parent: parent && ids[parent],
  name,
  kind,
  startMs: started + at,
  durationMs,
  ...extra,
});

/** web → orders-api → inventory, twelve spans, the card charge failing. */
const CHECKOUT = {
  'orders-api': [
    span('charge', 'orders', 'charge card', 'client', 60, 120, {
      status: 'error',
      attributes: { 'payment.provider': 'stripe', 'http.response.status_code': 402 },
      events: [{ name: 'exception', timeMs: started + 170, attributes: { 'exception.message': 'card declined' } }],
    }),
    span('orders', 'call', 'POST /orders', 'server', 40, 280, { attributes: { 'http.route': '/orders' } }),
    span('select', 'orders', 'SELECT cart_items', 'client', 190, 25, { attributes: { 'db.system': 'postgresql' } }),
    span('validate', 'orders', 'validate order', 'internal', 45, 10),
    span('publish', 'orders', 'publish order.created', 'producer', 230, 8),
  ],
  inventory: [
    span('lock', 'update', 'lock row', 'internal', 258, 5),
    span('reserve', 'orders', 'reserve stock', 'server', 250, 60),
    span('update', 'reserve', 'UPDATE stock', 'internal', 255, 30),
  ],
  web: [
    span('audit', 'checkout', 'write audit log', 'internal', 340, 20),
    span('checkout', undefined, 'GET /checkout', 'server', 0, 400, { attributes: { 'http.route': '/checkout' } }),
    span('render', 'checkout', 'render cart', 'internal', 5, 20),
    span('call', 'checkout', 'call orders API', 'client', 30, 300),
  ],
};
/** Parents before children, siblings by start. */
const TREE_ORDER = ['GET /checkout', 'render cart', 'call orders API', 'POST /orders', 'validate order', 'charge card', 'SELECT cart_items', 'publish order.created', 'reserve stock', 'UPDATE stock', 'lock row', 'write audit log'];

const NIGHTLY = { 'nightly-jobs': [{ traceId: otherTraceId, id: hex(8), name: 'build nightly report', kind: 'server' as const, startMs: started + 1000, durationMs: 900 }] };

async function sendTraces(publicKey: string, body: unknown) {
  const answer = await fetch(`${dashboard.ingestUrl}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` }, body: JSON.stringify(body) });
  expect(answer.status).toBe(200);
}

const traceRow = (name: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });

test('the list shows the traces sent, narrows by service and status in the URL, and opens a trace', async () => {
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('traces'), password: PASSWORD, organization: 'Trace Co' });
  const { projectId, dsn } = await createProjectInBrowser(page, 'checkout');

  await page.goto(`/traces?project=${projectId}`);
  await page.getByRole('heading', { name: 'No traces in this time range' }).waitFor();
  expect(await page.getByRole('link', { name: 'Set up a project' }).last().getAttribute('href')).toBe('/onboarding');

  publicKey = new URL(dsn).username;
  await sendTraces(publicKey, otlpTraces(CHECKOUT));
  await sendTraces(publicKey, otlpTraces(NIGHTLY));
  // the open list reads its first page again: the traces show up without a reload
  await traceRow('GET /checkout').waitFor({ timeout: TELEMETRY_WAIT });
  await traceRow('build nightly report').waitFor({ timeout: TELEMETRY_WAIT });
  await showsText(traceRow('GET /checkout'), '1 error', TELEMETRY_WAIT);
  const [, duration, spans, errors, services] = await traceRow('GET /checkout').getByRole('cell').allTextContents();
  expect([duration, spans, errors]).toEqual(['400 ms', '12', '1 error']);
  expect(services!.split(', ').sort()).toEqual(['inventory', 'orders-api', 'web']);
  expect(await review(page, 'traces-list')).toEqual([]);

  await page.getByLabel('Service').fill('inventory');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(/[?&]service=inventory\b/);
  await traceRow('build nightly report').waitFor({ state: 'detached', timeout: TELEMETRY_WAIT });
  await hasCount(traceRow('GET /checkout'), 1);

  await page.getByRole('button', { name: 'Clear filters' }).click();
  await traceRow('build nightly report').waitFor({ timeout: TELEMETRY_WAIT });
  expect(new URL(page.url()).searchParams.get('service')).toBeNull();
  await page.getByLabel('Span status').selectOption('error');
  await page.waitForURL(/[?&]status=error\b/);
  await traceRow('build nightly report').waitFor({ state: 'detached', timeout: TELEMETRY_WAIT });
  await hasCount(traceRow('GET /checkout'), 1);

  await page.getByRole('link', { name: 'GET /checkout', exact: true }).click();
  await page.waitForURL(`**/traces/${traceId}`);
  await page.getByRole('heading', { level: 1, name: 'GET /checkout' }).waitFor();
}, 150_000);

test('the trace opens as a waterfall in tree order; a row selects its span into the URL and the panel', async () => {
  await page.goto(`/traces/${traceId}`);
  await showsText(page.getByRole('status').filter({ hasText: 'spans shown' }), '12 of 12 spans shown', TELEMETRY_WAIT);
  const rows = page.getByRole('list', { name: 'Spans in tree order' }).getByRole('button');
  const texts = await rows.allTextContents();
  expect(texts.map((text) => TREE_ORDER.find((name) => text.startsWith(name)))).toEqual(TREE_ORDER);

  // the failed span says so in words, not only in colour; no other row does
  expect(await rows.filter({ hasText: 'Error' }).allTextContents()).toEqual([expect.stringContaining('charge card')]);
  const legend = page.getByRole('list', { name: 'Service colours' });
  for (const service of ['web', 'orders-api', 'inventory']) await legend.getByText(service, { exact: true }).waitFor();
  await showsText(page.locator('.waterfall-axis'), /0 ms.*100 ms.*400 ms/);

  await rows.filter({ hasText: 'charge card' }).click();
  await page.waitForURL(new RegExp(`[?&]span=${ids.charge}`));
  const panel = page.getByRole('complementary', { name: 'Selected span' });
  await panel.getByRole('heading', { name: 'charge card' }).waitFor();
  for (const text of ['payment.provider', 'stripe', 'Status: error', 'exception', 'card declined', 'orders-api', ids.charge!]) await showsText(panel, text);
  expect(await rows.filter({ hasText: 'charge card' }).getAttribute('aria-current')).toBe('true');
  expect(await review(page, 'trace-waterfall')).toEqual([]);

  // from the parent link in the panel, and by keyboard from row to row
  await panel.getByRole('button', { name: 'Show the parent' }).click();
  await page.waitForURL(new RegExp(`[?&]span=${ids.orders}`));
  await rows.first().focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForURL(new RegExp(`[?&]span=${ids.render}`));
  await page.reload();
  await panel.getByRole('heading', { name: 'render cart' }).waitFor();

  const logs = await page.getByRole('link', { name: 'Logs of this trace' }).getAttribute('href');
  expect(logs).toMatch(new RegExp(`^/logs\\?trace_id=${traceId}&`));
  expect(unexpectedProblems(dashboard)).toEqual([]);
}, 90_000);

test('a trace of more than 2,000 spans opens with its first page and offers the rest', async () => {
  const bigTraceId = hex(16);
  const root = hex(8);
  const child = (index: number, startMs: number): OtlpSpan => ({ traceId: bigTraceId, id: hex(8), parent: root, name: `step ${index}`, kind: 'internal', startMs, durationMs: 1 });
  const at = Date.now() - 20_000;
  const first = [{ traceId: bigTraceId, id: root, name: 'bulk import', kind: 'server' as const, startMs: at, durationMs: 5000 }, ...Array.from({ length: 1999 }, (_, i) => child(i + 10, at + 10 + i))];
  await sendTraces(publicKey, otlpTraces({ importer: first }));
  await page.goto('/traces');
  await page.getByRole('link', { name: 'bulk import', exact: true }).click({ timeout: TELEMETRY_WAIT });
  await page.waitForURL(`**/traces/${bigTraceId}`);
  const shown = page.getByRole('status').filter({ hasText: 'spans shown' });
  await showsText(shown, '2,000 of 2,000 spans shown', TELEMETRY_WAIT);

  // ten late spans land on the trace's second page; they started first, so they belong right under the root
  await sendTraces(publicKey, otlpTraces({ importer: Array.from({ length: 10 }, (_, i) => child(i, at + i)) }));
  await showsText(shown, '2,000 of 2,010 spans shown', TELEMETRY_WAIT);
  await page.getByRole('button', { name: 'Load more spans' }).click();
  await showsText(shown, '2,010 of 2,010 spans shown', TELEMETRY_WAIT);
  expect(await page.getByRole('button', { name: 'Load more spans' }).count()).toBe(0);
  const rows = page.getByRole('list', { name: 'Spans in tree order' }).getByRole('button');
  const firstRows = await Promise.all(Array.from({ length: 12 }, (_, i) => rows.nth(i).textContent()));
  expect(firstRows.map((text) => text!.match(/^(bulk import|step \d+)/)?.[1])).toEqual(['bulk import', ...Array.from({ length: 11 }, (_, i) => `step ${i}`)]);
  expect(unexpectedProblems(dashboard)).toEqual([]);
}, 120_000);

test('an unknown trace shows the API\'s refusal', async () => {
  await page.goto(`/traces/${hex(16)}`);
  await showsText(page.getByRole('alert'), 'The trace could not be opened', TELEMETRY_WAIT);
  expect(unexpectedProblems(dashboard)).toEqual([]);
}, 60_000);
