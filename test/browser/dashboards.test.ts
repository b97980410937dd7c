/**
 * Custom dashboards as a person builds them: a dashboard created and named, three widgets of different views
 * added through the form (one moved, one resized with the keyboard-operable buttons), saved with one PUT and
 * found in the same place after a reload; a widget whose view fails shows the API's error in place while the
 * others show the data planted through ingest; the top bar narrows every widget; rename and delete.
 */
import type { Locator, Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent, nanos, otlpLogs } from '../support/factories/telemetry.js';

const MINUTE = 60_000;
const TELEMETRY_WAIT = { timeout: 30_000 };

let dashboard: Dashboard;
let page: Page;
let projectId: string;
let quietProjectId: string;
let dashboardPath: string;

type Layout = { x: number; y: number; w: number; h: number };
type StoredDashboard = { name: string; description: string | null; widgets: Array<{ id: string; title: string; type: string; query: { view: string; params: Record<string, unknown> }; layout: Layout }> };

/** A read of the API with the browser's own session, as the dashboard makes it. */
async function apiGet<T>(path: string): Promise<T> {
  const answer = await page.request.get(`${dashboard.apiUrl}${path}`, { headers: { Origin: dashboard.webUrl } });
  expect(answer.status()).toBe(200);
  return (await answer.json()) as T;
}

async function ingest(path: string, body: string, headers: Record<string, string>) {
  const answer = await fetch(`${dashboard.ingestUrl}${path}`, { method: 'POST', headers, body });
  expect(answer.status).toBe(200);
}

/** Two errors of one issue (Sentry envelopes), a gauge over the last 50 minutes and two error log lines (OTLP/JSON). */
async function plantTelemetry(dsn: URL) {
  const now = Date.now();
  for (const age of [30, 10]) {
    const event = errorEvent({ fingerprint: ['card-declined'], timestamp: (now - age * 1000) / 1000 }, { type: 'PaymentDeclined', value: 'the card was declined' });
    await ingest(`/api${dsn.pathname}/envelope/?sentry_key=${dsn.username}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]), { 'content-type': 'application/x-sentry-envelope' });
  }
  const points = Array.from({ length: 10 }, (_, i) => ({ timeUnixNano: nanos(now - 50 * MINUTE + i * 5 * MINUTE), asDouble: 3 + i }));
  const metrics = { resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }] }, scopeMetrics: [{ metrics: [{ name: 'queue.depth', unit: '{message}', gauge: { dataPoints: points } }] }] }] };
  const auth = { 'content-type': 'application/json', authorization: `Bearer ${dsn.username}` };
  await ingest('/v1/metrics', JSON.stringify(metrics), auth);
  const logs = otlpLogs([
    { service: 'checkout', body: 'Payment provider timed out', level: 'error', at: now - MINUTE },
    { service: 'exporter', body: 'Nightly export failed', level: 'error', at: now - 2 * 60 * MINUTE },
    { service: 'checkout', body: 'Basket saved', level: 'info', at: now - MINUTE },
  ]);
  await ingest('/v1/logs', JSON.stringify(logs), auth);
}

/** Until the planted telemetry can be read, so every widget has data the first time it asks. */
async function telemetryStored() {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const issues = await apiGet<{ data: Array<{ count: number }> }>(`/v1/issues?project=${projectId}`);
    const series = await page.request.get(`${dashboard.apiUrl}/v1/metrics/series?project=${projectId}&name=queue.depth`, { headers: { Origin: dashboard.webUrl } });
    const logs = await apiGet<{ data: unknown[] }>(`/v1/logs?project=${projectId}&level=error`);
    if (issues.data[0]?.count === 2 && series.ok() && logs.data.length === 2) return;
    if (Date.now() > deadline) throw new Error('the planted telemetry was not stored within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const widget = (name: string | RegExp): Locator => page.getByRole('region', { name });
const widgetForm = () => page.getByRole('region', { name: 'Add a widget' });

/** Where the browser placed a widget on the grid: column and row lines as the computed style has them. */
const gridPlacement = (region: Locator) =>
  region.evaluate((element) => {
    const style = (globalThis as unknown as { getComputedStyle(of: unknown): Record<'gridColumnStart' | 'gridColumnEnd' | 'gridRowStart' | 'gridRowEnd', string> }).getComputedStyle(element);
    return [style.gridColumnStart, style.gridColumnEnd, style.gridRowStart, style.gridRowEnd].join(' ');
  });
const placementOf = ({ x, y, w, h }: Layout) => `${x + 1} span ${w} ${y + 1} span ${h}`;

/** Through the form: the view, its choices (selects) and typed parameters by their labels, and a size. */
async function addWidget(view: string, fields: { choose?: Record<string, string>; type?: Record<string, string> }, size: { w: number; h: number }) {
  await page.getByRole('button', { name: 'Add a widget' }).click();
  const form = widgetForm();
  await form.getByLabel('View').selectOption({ label: view });
  // a select's label text runs on into its options: match the label's start
  const field = (label: string) => form.getByLabel(new RegExp(`^${label}`));
  for (const [label, value] of Object.entries(fields.choose ?? {})) await field(label).selectOption(value);
  for (const [label, value] of Object.entries(fields.type ?? {})) await field(label).fill(value);
  await form.getByLabel('Width (columns of 12)').fill(String(size.w));
  await form.getByLabel('Height (rows)').fill(String(size.h));
  // Enter submits, as in every form
  await form.getByLabel('Height (rows)').press('Enter');
  await form.waitFor({ state: 'detached' });
}

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('boards'), password: PASSWORD, organization: 'Board Builders' });
  quietProjectId = (await createProjectInBrowser(page, 'quiet')).projectId;
  const created = await createProjectInBrowser(page, 'storefront');
  projectId = created.projectId;
  await plantTelemetry(new URL(created.dsn));
  await telemetryStored();
}, 120_000);
afterAll(() => dashboard?.close());

test('the list starts empty; a dashboard is created with its name and description and opens empty', async () => {
  await page.goto('/dashboards');
  await page.getByRole('heading', { level: 1, name: 'Dashboards' }).waitFor();
  await page.getByRole('heading', { name: 'No dashboards yet' }).waitFor();
  const create = page.getByRole('region', { name: 'New dashboard' });
  await create.getByLabel('Name').fill('Checkout health');
  await create.getByLabel('Description').fill('What on-call looks at first');
  await create.getByRole('button', { name: 'Create dashboard' }).click();
  await page.waitForURL(/\/dashboards\/[0-9a-f]{24}$/);
  dashboardPath = new URL(page.url()).pathname;
  await page.getByRole('heading', { level: 1, name: 'Checkout health' }).waitFor();
  await page.getByText('What on-call looks at first').waitFor();
  await page.getByRole('heading', { name: 'This dashboard has no widgets yet' }).waitFor();
  expect(await review(page, 'dashboard-empty')).toEqual([]);
}, 60_000);

test('three widgets of different views, one moved and one resized, saved with one PUT, are in the same place after a reload', async () => {
  await page.goto(dashboardPath);
  await page.getByRole('heading', { name: 'This dashboard has no widgets yet' }).waitFor();
  await page.getByRole('button', { name: 'Add a widget' }).click();
  // the empty state's button opens the form at once
  await widgetForm().waitFor();
  expect(await review(page, 'dashboard-add-widget')).toEqual([]);
  await widgetForm().getByRole('button', { name: 'Close' }).click();

  await addWidget('Issues', { choose: { Status: 'unresolved' } }, { w: 6, h: 4 });
  await addWidget('Metric', { type: { 'Metric name': 'queue.depth' }, choose: { Aggregation: 'max' } }, { w: 6, h: 4 });
  await addWidget('Logs', { choose: { Level: 'error' } }, { w: 12, h: 3 });
  const issues = widget(/^Issues/);
  const metric = widget(/^Metric/);
  const logs = widget(/^Logs/);
  // placed where there was room: side by side, then below
  await showsText(issues, '6 columns × 4 rows at column 1, row 1');
  await showsText(metric, '6 columns × 4 rows at column 7, row 1');
  await showsText(logs, '12 columns × 3 rows at column 1, row 5');
  // new widgets already show their view
  await issues.getByRole('link', { name: 'PaymentDeclined: the card was declined' }).waitFor(TELEMETRY_WAIT);
  expect(await review(page, 'dashboard-editing')).toEqual([]);

  // resized: the issues widget a row taller pushes the logs widget down
  await issues.getByRole('button', { name: 'Taller' }).click();
  await showsText(issues, '6 columns × 5 rows at column 1, row 1');
  await showsText(logs, '12 columns × 3 rows at column 1, row 6');
  // moved (and narrowed): the metric widget two columns narrower and two to the right
  await metric.getByRole('button', { name: 'Narrower' }).click();
  await metric.getByRole('button', { name: 'Narrower' }).click();
  expect(await metric.getByRole('button', { name: 'Move right' }).isEnabled()).toBe(true);
  await metric.getByRole('button', { name: 'Move right' }).click();
  await metric.getByRole('button', { name: 'Move right' }).click();
  expect(await metric.getByRole('button', { name: 'Move right' }).isDisabled()).toBe(true);
  await showsText(metric, '4 columns × 4 rows at column 9, row 1');

  const puts: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'PUT') puts.push(request.url());
  });
  const answered = page.waitForResponse((response) => response.request().method() === 'PUT');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  expect((await answered).status()).toBe(200);
  await page.getByRole('button', { name: 'Edit' }).waitFor();
  expect(puts).toEqual([`${dashboard.apiUrl}/v1/dashboards/${dashboardPath.split('/').pop()}/widgets`]);

  const expected: Record<string, { view: string; layout: Layout }> = {
    'Issues: unresolved': { view: 'issues', layout: { x: 0, y: 0, w: 6, h: 5 } },
    'Metric: queue.depth · max': { view: 'metrics.series', layout: { x: 8, y: 0, w: 4, h: 4 } },
    'Logs: error': { view: 'logs', layout: { x: 0, y: 5, w: 12, h: 3 } },
  };
  const stored = await apiGet<StoredDashboard>(`/v1${dashboardPath}`);
  expect(Object.fromEntries(stored.widgets.map((saved) => [saved.title, { view: saved.query.view, layout: saved.layout }]))).toEqual(expected);
  expect(stored.widgets.find((saved) => saved.query.view === 'metrics.series')).toMatchObject({ type: 'timeseries', query: { params: { name: 'queue.depth', aggregation: 'max' } } });

  await page.reload();
  for (const [title, { layout }] of Object.entries(expected)) {
    await widget(title).waitFor();
    expect([title, await gridPlacement(widget(title))]).toEqual([title, placementOf(layout)]);
  }
  // each widget shows its data: the issue, the gauge drawn as a chart, the error lines of both services
  const issue = widget('Issues: unresolved').getByRole('row').filter({ hasText: 'PaymentDeclined: the card was declined' });
  await issue.waitFor();
  expect(await issue.getByRole('cell').nth(1).textContent()).toBe('2');
  await widget('Metric: queue.depth · max').getByRole('img', { name: /Metric: queue.depth · max/ }).waitFor();
  await widget('Logs: error').getByRole('row').filter({ hasText: 'Payment provider timed out' }).waitFor();
  await widget('Logs: error').getByRole('row').filter({ hasText: 'Nightly export failed' }).waitFor();
  await hasCount(widget('Logs: error').getByRole('row'), 3);
  expect(await review(page, 'dashboard')).toEqual([]);
}, 90_000);

test("a widget whose view fails shows the API's error in place while the others show their data", async () => {
  await page.goto(dashboardPath);
  await page.getByRole('button', { name: 'Edit' }).click();
  await addWidget('Metric', { type: { 'Metric name': 'no.such.metric' }, choose: { 'Show as': 'table' } }, { w: 6, h: 3 });
  await showsText(widget(/^Metric \(named when saved\)/), '6 columns × 3 rows at column 1, row 9');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('button', { name: 'Edit' }).waitFor();
  const failing = widget('Metric: no.such.metric');
  await failing.getByRole('alert').waitFor();
  await showsText(failing.getByRole('alert'), 'not_found · HTTP 404');
  await widget('Issues: unresolved').getByRole('link', { name: 'PaymentDeclined: the card was declined' }).waitFor();
  await widget('Logs: error').getByRole('row').filter({ hasText: 'Payment provider timed out' }).waitFor();
  await widget('Metric: queue.depth · max').getByRole('img', { name: /queue.depth/ }).waitFor();
  expect(await page.getByRole('alert').count()).toBe(1);
  expect(await review(page, 'dashboard-widget-error')).toEqual([]);
}, 60_000);

test('dragging a widget by its handle moves it and pushes what was there down; Cancel discards every change', async () => {
  await page.goto(dashboardPath);
  await page.getByRole('button', { name: 'Edit' }).click();
  const failing = widget('Metric: no.such.metric');
  const logs = widget('Logs: error');
  // drop the failing widget's handle on the logs widget's first cell
  await failing.getByTitle('Drag to move').scrollIntoViewIfNeeded();
  const handle = (await failing.getByTitle('Drag to move').boundingBox())!;
  const target = (await logs.boundingBox())!;
  await page.mouse.move(handle.x + handle.width / 2, handle.y + handle.height / 2);
  await page.mouse.down();
  await page.mouse.move(target.x + 10, target.y + 10, { steps: 8 });
  await page.mouse.up();
  await showsText(failing, '6 columns × 3 rows at column 1, row 6');
  await showsText(logs, '12 columns × 3 rows at column 1, row 9');

  // leaving for another page with the change unsaved asks first; staying keeps the draft
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Logs' }).click();
  const leave = page.getByRole('dialog', { name: 'Leave without saving?' });
  await showsText(leave, 'are lost if you leave');
  await leave.getByRole('button', { name: 'Stay' }).click();
  await leave.waitFor({ state: 'detached' });
  expect(new URL(page.url()).pathname).toBe(dashboardPath);
  await showsText(failing, '6 columns × 3 rows at column 1, row 6');

  await page.getByRole('button', { name: 'Cancel' }).click();
  const discard = page.getByRole('dialog', { name: 'Discard your changes?' });
  await showsText(discard, 'go back to how they were saved');
  await discard.getByRole('button', { name: 'Discard changes' }).click();
  await page.getByRole('button', { name: 'Edit' }).waitFor();
  expect(await gridPlacement(failing)).toBe(placementOf({ x: 0, y: 8, w: 6, h: 3 }));
  expect(await gridPlacement(logs)).toBe(placementOf({ x: 0, y: 5, w: 12, h: 3 }));
  // with nothing unsaved, the same link just leaves
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Logs' }).click();
  await page.waitForURL((url) => url.pathname === '/logs');
}, 60_000);

test("the top bar's range and project apply to every widget", async () => {
  await page.goto(dashboardPath);
  const logs = widget('Logs: error');
  await logs.getByRole('row').filter({ hasText: 'Nightly export failed' }).waitFor();
  await page.getByLabel('Time range').selectOption('1h');
  await page.waitForURL((url) => url.searchParams.get('range') === '1h');
  await logs.getByRole('row').filter({ hasText: 'Nightly export failed' }).waitFor({ state: 'detached' });
  await hasCount(logs.getByRole('row'), 2);

  await page.getByLabel('Project').selectOption({ label: 'quiet' });
  await page.waitForURL((url) => url.searchParams.get('project') === quietProjectId);
  await showsText(widget('Issues: unresolved'), 'No issues in this window.');
  await showsText(logs, 'No log lines in this window.');
}, 60_000);

test('a dashboard is renamed and deleted from the list, saying what is lost', async () => {
  await page.goto('/dashboards');
  const create = page.getByRole('region', { name: 'New dashboard' });
  await create.getByLabel('Name').fill('Scratch');
  await create.getByLabel('Name').press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Scratch' }).waitFor();
  await page.getByRole('link', { name: 'All dashboards' }).click();

  const row = (name: string) => page.getByRole('table', { name: 'Dashboards, oldest first' }).getByRole('row').filter({ hasText: name });
  await showsText(row('Checkout health').getByRole('cell').nth(1), '4');
  await row('Checkout health').getByRole('button', { name: 'Rename' }).click();
  const rename = page.getByRole('form', { name: 'Rename Checkout health' });
  await rename.getByLabel('Name').fill('Checkout and payments');
  await rename.getByLabel('Description').fill('');
  await rename.getByRole('button', { name: 'Save name' }).click();
  await page.getByRole('link', { name: 'Checkout and payments' }).waitFor();
  await rename.waitFor({ state: 'detached' });
  expect(await review(page, 'dashboards')).toEqual([]);
  expect(await apiGet<StoredDashboard>(`/v1${dashboardPath}`)).toMatchObject({ name: 'Checkout and payments', description: null });

  await row('Checkout and payments').getByRole('button', { name: 'Delete' }).click();
  const confirm = page.getByRole('dialog', { name: 'Delete “Checkout and payments”?' });
  await showsText(confirm, 'Its 4 widgets and their layout are lost');
  await confirm.getByRole('button', { name: 'Delete dashboard' }).click();
  await row('Checkout and payments').waitFor({ state: 'detached' });
  await hasCount(page.getByRole('table', { name: 'Dashboards, oldest first' }).getByRole('row'), 2);
  const answer = await page.request.get(`${dashboard.apiUrl}/v1${dashboardPath}`, { headers: { Origin: dashboard.webUrl } });
  expect(answer.status()).toBe(404);
}, 60_000);

test('nothing went wrong in the browser', () => {
  expect(unexpectedProblems(dashboard)).toEqual([]);
});
