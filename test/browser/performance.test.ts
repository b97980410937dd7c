/**
 * The performance page over spans sent as an OTLP/JSON trace exporter sends them: a storefront whose
 * cart endpoint surges and publishes to a queue, and a payments service that consumes it and queries
 * its database.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, timeToData, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { hex, otlpTraces, type OtlpSpan } from '../support/factories/telemetry.js';

let dashboard: Dashboard;
let page: Page;
let projectId: string;
let publicKey: string;
const TELEMETRY_WAIT = { timeout: 30_000 };
const SELECT = 'select * from orders where id = ?';
const INSERT = 'insert into payment_log values (?)';

/** 24 cart requests (one failing): enough for the surge rule's 20, against an empty previous window. */
function storefrontSpans(start: number): { spans: OtlpSpan[]; published: OtlpSpan[] } {
  const spans: OtlpSpan[] = [];
  const published: OtlpSpan[] = [];
  for (let i = 0; i < 24; i++) {
    const traceId = hex(16);
    const id = hex(8);
    const failed = i === 0;
    spans.push({ traceId, id, name: 'GET /cart', kind: 'server', startMs: start + i * 1000, durationMs: 40 + i, status: failed ? 'error' : undefined, attributes: { 'http.request.method': 'GET', 'http.route': '/cart', 'http.response.status_code': failed ? 500 : 200 } });
    if (i < 2) published.push({ traceId, id: hex(8), parent: id, name: 'orders publish', kind: 'producer', startMs: start + i * 1000 + 5, durationMs: 3, attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation.type': 'publish' } });
  }
  return { spans: [...spans, ...published], published };
}

/** Three charges, each with two slow order lookups and three quick inserts; and the queue's consumers. */
function paymentsSpans(start: number, published: OtlpSpan[]): OtlpSpan[] {
  const spans: OtlpSpan[] = [];
  for (let i = 0; i < 3; i++) {
    const traceId = hex(16);
    const id = hex(8);
    const at = start + 30_000 + i * 1000;
    spans.push({ traceId, id, name: 'POST /charge', kind: 'server', startMs: at, durationMs: 700, attributes: { 'http.request.method': 'POST', 'http.route': '/charge', 'http.response.status_code': 200 } });
    for (let j = 0; j < 2; j++) spans.push({ traceId, id: hex(8), parent: id, name: 'SELECT orders', kind: 'client', startMs: at + 10 + j * 300, durationMs: 200 + 40 * j + i, attributes: { 'db.system': 'postgresql', 'db.statement': `SELECT * FROM orders WHERE id = ${100 + i * 2 + j}` } });
    for (let j = 0; j < 3; j++) spans.push({ traceId, id: hex(8), parent: id, name: 'INSERT payment_log', kind: 'client', startMs: at + 650 + j * 10, durationMs: 2, attributes: { 'db.system': 'postgresql', 'db.statement': `INSERT INTO payment_log VALUES (${i}, 'charge ${j}')` } });
  }
  for (const producer of published) {
    spans.push({ traceId: producer.traceId, id: hex(8), parent: producer.id, name: 'orders process', kind: 'consumer', startMs: producer.startMs + 50, durationMs: 30, attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation.type': 'process' } });
  }
  return spans;
}

async function sendTraces(body: unknown) {
  const answer = await fetch(`${dashboard.ingestUrl}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` }, body: JSON.stringify(body) });
  expect(answer.status).toBe(200);
}

const section = (name: string) => page.getByRole('region', { name });
/** A section's table, found by its caption (the traffic chart's legend is a table too). */
const rowsOf = (caption: string) => page.getByRole('table', { name: new RegExp(`^${caption}`) }).getByRole('row');

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('perf'), password: PASSWORD, organization: 'Perf Org' });
  const created = await createProjectInBrowser(page, 'perf-web');
  projectId = created.projectId;
  publicKey = new URL(created.dsn).username;
}, 120_000);
afterAll(() => dashboard?.close());

describe('the performance page', () => {
  test('before any span arrives, each section says what it needs', async () => {
    await page.goto(`/performance?project=${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Performance' }).waitFor();
    await section('Traffic by service').getByRole('heading', { name: 'No requests in this window' }).waitFor();
    await section('Slow database queries').getByRole('heading', { name: 'No database calls in this window' }).waitFor();
    await section('Queues').getByRole('heading', { name: 'No queues in this window' }).waitFor();
    await section('Endpoint surges').getByRole('heading', { name: 'No endpoint surged in this window' }).waitFor();
    expect(await review(page, 'performance-empty')).toEqual([]);
  }, 60_000);

  test('shows traffic per service, the surging endpoint, slow queries, query patterns and the queue', async () => {
    const start = Date.now() - 3 * 60_000;
    const storefront = storefrontSpans(start);
    await sendTraces(otlpTraces({ storefront: storefront.spans, payments: paymentsSpans(start, storefront.published) }));
    await page.goto(`/performance?project=${projectId}`);

    const cart = rowsOf('Traffic by service').filter({ hasText: 'storefront' });
    await cart.waitFor(TELEMETRY_WAIT);
    await showsText(cart, '24 req');
    await showsText(cart, '1 err');
    await rowsOf('Traffic by service').filter({ hasText: 'payments' }).waitFor();
    expect(await section('Traffic by service').getByRole('img', { name: /Requests per .* by service/ }).count()).toBe(1);

    const select = rowsOf('Slow database queries').filter({ hasText: SELECT });
    await select.waitFor(TELEMETRY_WAIT);
    await showsText(select, 'postgresql');
    await showsText(select, 'payments');
    // slowest first: the order lookups before the inserts
    expect(await rowsOf('Slow database queries').nth(1).textContent()).toContain(SELECT);
    const example = select.getByRole('link').first();
    expect(await example.getAttribute('href')).toMatch(/^\/traces\/[0-9a-f]{32}$/);

    await rowsOf('Query patterns').filter({ hasText: INSERT }).waitFor(TELEMETRY_WAIT);
    expect(await rowsOf('Query patterns').nth(1).textContent()).toContain(SELECT);

    const surge = rowsOf('Endpoint surges').filter({ hasText: '/cart' });
    await surge.waitFor(TELEMETRY_WAIT);
    await showsText(surge, 'storefront');
    await showsText(surge, '24 req');

    const orders = rowsOf('Queues').filter({ hasText: 'orders' });
    await orders.waitFor(TELEMETRY_WAIT);
    await showsText(orders, 'rabbitmq');
    await showsText(orders, '2 msg');
    expect(await review(page, 'performance')).toEqual([]);
    console.log(`/performance shows its slow queries ${await timeToData(page, `/performance?project=${projectId}`, () => rowsOf('Slow database queries').filter({ hasText: SELECT }))} ms after navigation`);
  }, 120_000);

  test('ranking patterns by calls and narrowing to a service change the URL and the rows', async () => {
    await page.goto(`/performance?project=${projectId}`);
    await rowsOf('Query patterns').filter({ hasText: INSERT }).waitFor(TELEMETRY_WAIT);
    await page.getByLabel('Rank patterns by').selectOption('calls');
    await page.waitForURL((url) => url.searchParams.get('sort') === 'calls');
    await showsText(rowsOf('Query patterns').nth(1), INSERT);

    await page.getByLabel('Service', { exact: true }).fill('storefront');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL((url) => url.searchParams.get('service') === 'storefront');
    await section('Slow database queries').getByRole('heading', { name: 'No database calls in this window' }).waitFor();
    // traffic is by service whatever the filter: the storefront's requests stay listed
    await rowsOf('Traffic by service').filter({ hasText: 'storefront' }).waitFor();
    await rowsOf('Endpoint surges').filter({ hasText: '/cart' }).waitFor();
  }, 60_000);

  test('across all projects, traffic is by project, named as the project', async () => {
    await page.goto('/performance');
    await rowsOf('Traffic by project').filter({ hasText: 'perf-web' }).waitFor(TELEMETRY_WAIT);
    await page.getByRole('link', { name: 'perf-web' }).click();
    await page.waitForURL((url) => url.searchParams.get('project') === projectId);
    await rowsOf('Traffic by service').filter({ hasText: 'storefront' }).waitFor();
  }, 60_000);

  test('nothing went wrong in the browser', () => {
    expect(unexpectedProblems(dashboard)).toEqual([]);
  });
});
