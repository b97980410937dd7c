/**
 * The issue list and the issue page in a real browser: errors sent through the ingest port as a Sentry SDK
 * sends them, found, filtered, watched arriving and resolved as a person does it.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent } from '../support/factories/telemetry.js';

const TELEMETRY_WAIT = 30_000;
const SEEDED = 40;

let dashboard: Dashboard;
let page: Page;
let projectId: string;
let dsn: URL;

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: uniqueEmail('issues'), password: PASSWORD, organization: 'Issue Readers' });
  const project = await createProjectInBrowser(page, 'checkout');
  projectId = project.projectId;
  dsn = new URL(project.dsn);
}, 120_000);
afterAll(() => dashboard?.close());

/** One event through the ingest port, as the SDK posts it with the project's DSN. */
async function send(event: Record<string, unknown>) {
  const answer = await fetch(`${dashboard.ingestUrl}/api${dsn.pathname}/envelope/?sentry_key=${dsn.username}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-sentry-envelope' },
    body: envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]),
  });
  expect(answer.status).toBe(200);
}

const secondsAgo = (seconds: number) => Date.now() / 1000 - seconds;

/** An issue of its own (its own fingerprint), seen `age` seconds ago. */
const seededError = (n: number, age: number) =>
  errorEvent({ fingerprint: [`seed-${n}`], timestamp: secondsAgo(age) }, { type: `SeedError${n}`, value: `seeded problem number ${n}`, fn: `step${n}` });

/** A checkout failure with a chain of frames (library and in-app, with source lines), tags, a user and breadcrumbs. */
const checkoutError = () =>
  errorEvent({
    timestamp: secondsAgo(5),
    environment: 'staging',
    release: 'shop@2.3.1',
    tags: { feature: 'checkout-v2', region: 'eu-west' },
    user: { id: 'user-42', email: 'ada@example.com', username: 'ada' },
    breadcrumbs: { values: [{ timestamp: secondsAgo(6), category: 'http', message: 'POST /api/basket', level: 'info' }] },
    contexts: { runtime: { name: 'node', version: 'v20.11.0' } },
    exception: {
      values: [
        {
          type: 'CheckoutError',
          value: 'The basket total is not a number',
          mechanism: { type: 'generic', handled: false },
          stacktrace: {
            frames: [
              { filename: 'node:internal/process/task_queues', function: 'processTicksAndRejections', lineno: 95, colno: 5, in_app: false },
              { filename: '/app/node_modules/express/lib/router/layer.js', function: 'Layer.handle', lineno: 95, colno: 5, in_app: false },
              {
                filename: '/app/src/checkout.js',
                module: 'checkout',
                function: 'handleCheckout',
                lineno: 31,
                colno: 9,
                in_app: true,
                pre_context: ['export async function handleCheckout(req, res) {', '  const basket = await loadBasket(req.user);'],
                context_line: '  const total = basketTotal(basket);',
                post_context: ['  res.json({ total });', '}'],
              },
              { filename: '/app/src/basket.js', module: 'basket', function: 'basketTotal', lineno: 12, colno: 11, in_app: true, context_line: "  if (Number.isNaN(sum)) throw new CheckoutError('The basket total is not a number');" },
            ],
          },
        },
      ],
    },
  });

const rows = (within: Page) => within.getByRole('table').getByRole('row');
const issueLink = (within: Page, title: string | RegExp) => within.getByRole('link', { name: title });
/** Waits until the list shows `count` issues (it keeps the previous rows on screen until the next answer). */
const listsIssues = async (within: Page, count: number) => {
  const deadline = Date.now() + TELEMETRY_WAIT;
  while ((await within.locator('tbody tr').count()) !== count) {
    if (Date.now() > deadline) throw new Error(`the list never showed ${count} issues`);
    await within.waitForTimeout(100);
  }
};
const listUrl = () => `/issues?project=${projectId}`;

describe('the issue list', () => {
  beforeAll(async () => {
    for (let n = 1; n <= SEEDED; n++) await send(seededError(n, 300 - n));
    await send(errorEvent({ level: 'warning', fingerprint: ['slow-cart'], timestamp: secondsAgo(120) }, { type: 'SlowCartWarning', value: 'the cart took 4 s', fn: 'loadCart' }));
    await send(checkoutError());
    await send(checkoutError());
  }, 60_000);

  test('lists the issues with their culprit, level, status and counts', async () => {
    await page.goto(listUrl());
    await page.getByRole('heading', { level: 1, name: 'Issues' }).waitFor();
    const checkout = rows(page).filter({ has: issueLink(page, 'CheckoutError: The basket total is not a number') });
    await checkout.waitFor({ timeout: TELEMETRY_WAIT });
    // both checkout events counted into one issue; newest activity first
    await showsText(checkout.getByRole('cell').nth(3), '2', TELEMETRY_WAIT);
    await expect(checkout.getByRole('cell').nth(0).textContent()).resolves.toContain('basketTotal');
    await expect(checkout.getByRole('cell').nth(1).textContent()).resolves.toBe('error');
    await expect(checkout.getByRole('cell').nth(2).textContent()).resolves.toBe('unresolved');
    await rows(page).filter({ has: issueLink(page, /^SeedError1:/) }).waitFor({ timeout: TELEMETRY_WAIT });
    await listsIssues(page, SEEDED + 2);
    await expect(rows(page).nth(1).textContent()).resolves.toContain('CheckoutError');
    // the relative time carries the exact time in the browser's zone
    const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
    await expect(checkout.locator('time').last().getAttribute('title')).resolves.toContain(`(${zone})`);
    expect(await review(page, 'issues-list')).toEqual([]);
  }, 90_000);

  test('filters by level, status and search live in the URL, and the back button restores them', async () => {
    await page.goto(listUrl());
    await issueLink(page, /^SeedError1:/).waitFor({ timeout: TELEMETRY_WAIT });

    await page.getByLabel('Level').selectOption('warning');
    await page.waitForURL(/[?&]level=warning/);
    await showsText(page.getByRole('table'), 'SlowCartWarning');
    await listsIssues(page, 1);

    await page.getByLabel('Status').selectOption('resolved');
    await page.waitForURL(/[?&]status=resolved/);
    await page.getByRole('heading', { name: 'No issue matches these filters' }).waitFor();

    await page.goBack();
    await page.waitForURL((url) => url.searchParams.get('level') === 'warning' && !url.searchParams.has('status'));
    await expect(page.getByLabel('Status').inputValue()).resolves.toBe('');
    await showsText(page.getByRole('table'), 'SlowCartWarning');
    await listsIssues(page, 1);

    await page.goBack();
    await page.waitForURL((url) => !url.searchParams.has('level'));
    await issueLink(page, /^SeedError1:/).waitFor();

    await page.getByLabel('Search').fill('basket total');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/[?&]q=basket\+total/);
    await listsIssues(page, 1);
    await showsText(page.getByRole('table'), 'CheckoutError');

    await page.goBack();
    await page.waitForURL((url) => !url.searchParams.has('q'));
    await expect(page.getByLabel('Search').inputValue()).resolves.toBe('');
    await issueLink(page, /^SeedError1:/).waitFor();
  }, 90_000);

  test('a new error shows up while the list is open, without a reload and without moving what the reader looks at', async () => {
    await page.goto(listUrl());
    const reference = issueLink(page, /^SeedError10:/);
    await reference.waitFor({ timeout: TELEMETRY_WAIT });
    await reference.scrollIntoViewIfNeeded();
    await page.evaluate('window.scrollBy(0, 200)');
    const scrolled = (await page.evaluate('window.scrollY')) as number;
    expect(scrolled).toBeGreaterThan(0);
    const before = (await reference.boundingBox())!.y;
    // the same table element must survive the refresh: no loading state replaced it
    await page.getByRole('table').evaluate((table) => table.setAttribute('data-before-refresh', ''));

    await send(errorEvent({ fingerprint: ['arrived-while-open'] }, { type: 'ArrivedWhileOpen', value: 'sent after the page opened', fn: 'late' }));
    await issueLink(page, /^ArrivedWhileOpen:/).waitFor({ state: 'attached', timeout: TELEMETRY_WAIT });

    await expect(page.getByRole('table').getAttribute('data-before-refresh')).resolves.toBe('');
    expect(Math.abs((await reference.boundingBox())!.y - before)).toBeLessThanOrEqual(2);
    expect(await page.evaluate('window.scrollY')).toBeGreaterThanOrEqual(scrolled);
  }, 60_000);
});

describe('the issue page', () => {
  let checkoutIssue: string;

  test('shows the exception with in-app frames emphasised, source lines, tags, user, release and the events', async () => {
    await page.goto(listUrl());
    await issueLink(page, 'CheckoutError: The basket total is not a number').click({ timeout: TELEMETRY_WAIT });
    await page.waitForURL(/\/issues\/[0-9a-f]{24}/);
    checkoutIssue = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('heading', { level: 1, name: 'CheckoutError: The basket total is not a number' }).waitFor();

    const stats = page.locator('dl.stats');
    await showsText(stats.locator('div').filter({ hasText: 'Events' }), '2');
    await showsText(stats.locator('div').filter({ hasText: 'Users' }), '1');

    // the crashing frame first, in-app frames open and labelled, the library frames folded away
    const frames = page.getByRole('region', { name: 'Exception CheckoutError' });
    await showsText(frames.getByRole('heading', { level: 3 }), 'CheckoutError: The basket total is not a number');
    const handleCheckout = frames.locator('li.frame', { hasText: 'handleCheckout in /app/src/checkout.js' });
    await expect(handleCheckout.textContent()).resolves.toContain('in app');
    await expect(handleCheckout.getByRole('list', { name: 'Source around line 31' }).textContent()).resolves.toContain('const basket = await loadBasket(req.user);');
    await expect(handleCheckout.locator('li', { hasText: '(the line of this frame)' }).textContent()).resolves.toContain('const total = basketTotal(basket);');
    const library = frames.getByText('Layer.handle');
    expect(await library.isVisible()).toBe(false);
    await frames.getByText('2 library frames').click();
    await library.waitFor();
    await expect(frames.locator('li.frame', { hasText: 'Layer.handle' }).textContent()).resolves.not.toContain('in app');

    await showsText(page.getByRole('table', { name: 'Tags of the latest event' }).getByRole('row').filter({ hasText: 'feature' }), 'checkout-v2');
    await showsText(page.getByRole('region', { name: 'User', exact: true }), 'ada@example.com');
    await showsText(page.getByRole('region', { name: 'Release and environment' }), 'shop@2.3.1');
    await showsText(page.getByRole('region', { name: 'Release and environment' }), 'staging');
    await showsText(page.getByRole('region', { name: 'Contexts' }), 'v20.11.0');
    const events = page.getByRole('table', { name: 'Events of this issue, newest first' }).getByRole('row');
    await events.nth(2).waitFor();
    await expect(events.count()).resolves.toBe(3);
    await showsText(page.getByRole('table', { name: 'End users who met this issue' }), 'ada@example.com');
    await showsText(page.getByRole('table', { name: /Breadcrumbs of the latest event/ }).getByRole('row').filter({ hasText: 'http' }), 'POST /api/basket');
    // both events happened in this hour: the chart's last hour holds them
    await page.getByRole('img', { name: /Events of this issue per hour/ }).waitFor();
    expect(await review(page, 'issue')).toEqual([]);
  }, 90_000);

  test('resolving updates the page and takes the issue off the unresolved list; unresolving brings it back', async () => {
    await page.goto(`/issues/${checkoutIssue}?project=${projectId}`);
    const status = page.locator('dl.stats div').filter({ hasText: 'Status' });
    await showsText(status, 'unresolved');
    await page.getByRole('button', { name: 'Resolve' }).click();
    await showsText(status, /^Status\s*resolved/);
    await page.getByRole('button', { name: 'Unresolve' }).waitFor();

    await page.getByRole('link', { name: 'Issues', exact: true }).click();
    await page.getByLabel('Status').selectOption('unresolved');
    await page.waitForURL(/[?&]status=unresolved/);
    // the previous rows stay on screen until the filtered answer replaces them
    await issueLink(page, 'CheckoutError: The basket total is not a number').waitFor({ state: 'detached', timeout: 10_000 });
    await issueLink(page, /^SeedError1:/).waitFor();
    await page.getByLabel('Status').selectOption('resolved');
    await showsText(page.getByRole('table'), 'CheckoutError');

    await page.goto(`/issues/${checkoutIssue}?project=${projectId}`);
    await page.getByRole('button', { name: 'Unresolve' }).click();
    await showsText(status, 'unresolved');
    await page.getByRole('button', { name: 'Resolve' }).waitFor();
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 90_000);
});
