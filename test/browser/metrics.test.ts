/**
 * The metrics and anomalies pages, driven as a person would: OTLP/JSON metrics (a gauge, a cumulative sum
 * and a histogram) from two services are picked, split into a line per service and aggregated; a burst of
 * requests after an hour of steady traffic makes the live detector open anomalies, drawn on their series.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, timeToData, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { hex, nanos, otlpTraces, otlpValue } from '../support/factories/telemetry.js';

let dashboard: Dashboard;
beforeAll(async () => {
  dashboard = await startDashboard();
}, 90_000);
afterAll(() => dashboard?.close());

const MINUTE = 60_000;
const resource = (service: string) => ({ attributes: [{ key: 'service.name', value: otlpValue(service) }] });

async function ingest(publicKey: string, path: string, body: unknown) {
  const reply = await fetch(`${dashboard.ingestUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${publicKey}` }, body: JSON.stringify(body) });
  expect(reply.status).toBe(200);
}

/** Ten gauge points (`base` … `base + 9`), a cumulative counter's three totals and ten observations in (100, 250] ms, over the last 50 minutes. */
function metricsOf(service: string, base: number, totals: number[], now: number) {
  const start = now - 50 * MINUTE;
  return {
    resource: resource(service),
    scopeMetrics: [
      {
        metrics: [
          { name: 'queue.depth', unit: '{message}', gauge: { dataPoints: Array.from({ length: 10 }, (_, i) => ({ timeUnixNano: nanos(start + i * 4 * MINUTE), asDouble: base + i })) } },
          {
            name: 'orders.placed',
            unit: '{order}',
            sum: {
              aggregationTemporality: 2,
              isMonotonic: true,
              dataPoints: totals.map((total, i) => ({ startTimeUnixNano: nanos(start), timeUnixNano: nanos(start + (i + 1) * 10 * MINUTE), asInt: String(total), attributes: [{ key: 'region', value: otlpValue('eu') }] })),
            },
          },
          {
            name: 'checkout.duration',
            unit: 'ms',
            histogram: {
              aggregationTemporality: 1,
              dataPoints: [{ startTimeUnixNano: nanos(start), timeUnixNano: nanos(start + 20 * MINUTE), count: '10', sum: 1800, min: 120, max: 240, explicitBounds: [50, 100, 250, 500], bucketCounts: ['0', '0', '10', '0', '0'] }],
            },
          },
        ],
      },
    ],
  };
}

/** `count` server spans of `service`, evenly over [from, to), each its own trace; with `halfFailing`, every other one failed. */
const requests = (service: string, from: number, to: number, count: number, halfFailing = false) =>
  otlpTraces({
    [service]: Array.from({ length: count }, (_, i) => ({
      traceId: hex(16),
      id: hex(8),
      name: 'POST /checkout',
      kind: 'server' as const,
      startMs: from + Math.floor((i * (to - from)) / count),
      durationMs: 80,
      attributes: { 'http.route': '/checkout', 'http.request.method': 'POST' },
      status: halfFailing && i % 2 === 0 ? ('error' as const) : ('ok' as const),
    })),
  });

/** The text of the latest-values table's row for a line (a service, or "All services"). */
const latestOf = (page: Page, line: string) => page.getByRole('table', { name: /^Latest / }).getByRole('row').filter({ has: page.getByRole('cell', { name: line, exact: true }) });

describe('metrics and anomalies', () => {
  test('a person picks a metric, splits it by service, changes its aggregation, and sees anomalies drawn against their band', async () => {
    const context = await dashboard.newContext();
    const page = await context.newPage();
    await signUpInBrowser(page, { email: uniqueEmail('metrics'), password: PASSWORD, organization: 'Metrics Org' });
    const { projectId, dsn } = await createProjectInBrowser(page, 'metrics-shop');
    const publicKey = new URL(dsn).username;

    // before anything is sent: the empty state says what to do
    await page.goto(`/metrics?project=${projectId}`);
    await page.getByRole('heading', { name: 'No metrics in this window' }).waitFor();

    const now = Date.now();
    await ingest(publicKey, '/v1/metrics', { resourceMetrics: [metricsOf('checkout', 10, [10, 20, 30], now), metricsOf('payments', 100, [5, 10, 15], now)] });
    // an hour of steady traffic (4 requests a minute), then 6 minutes of 40 a minute, half of them failing
    await ingest(publicKey, '/v1/traces', requests('checkout', now - 70 * MINUTE, now - 6 * MINUTE, 64 * 4));
    await ingest(publicKey, '/v1/traces', requests('checkout', now - 6 * MINUTE, now - 5_000, 6 * 40, true));

    // the empty page turns into the list of names once the workers have stored them
    for (const name of ['checkout.duration', 'orders.placed', 'queue.depth']) await page.getByRole('link', { name, exact: true }).waitFor({ timeout: 45_000 });
    const names = page.getByRole('table', { name: /Metrics reported in this window/ });
    await showsText(names.getByRole('row').filter({ hasText: 'queue.depth' }), /gauge\s*messages/);
    await showsText(names.getByRole('row').filter({ hasText: 'orders.placed' }), /(sum|counter)\s*orders\s*region/);
    expect(await review(page, 'metrics-names')).toEqual([]);

    // pick the gauge: a chart, and all services combined in one line
    await page.getByRole('combobox', { name: /^Metric/ }).selectOption('queue.depth');
    await page.waitForURL(/[?&]name=queue\.depth/);
    await page.locator('figure canvas').first().waitFor({ timeout: 15_000 });
    await latestOf(page, 'All services').waitFor();

    // a line per service, each drawn and listed
    for (const service of ['checkout', 'payments']) {
      await page.getByRole('textbox', { name: /^Service/ }).fill(service);
      await page.getByRole('button', { name: 'Add line' }).click();
    }
    await page.waitForURL(/service=checkout&service=payments/);
    await latestOf(page, 'payments').waitFor({ timeout: 15_000 });
    expect(await latestOf(page, 'All services').count()).toBe(0);
    expect(await page.getByRole('img', { name: /queue\.depth.*: checkout, payments over time/ }).isVisible()).toBe(true);
    // switching the system to dark mode draws the chart again, in the dark theme's colours
    const drawnLight = await page.locator('figure canvas').first().elementHandle();
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForFunction((canvas) => !canvas?.isConnected, drawnLight);
    await page.emulateMedia({ colorScheme: null });
    expect(await review(page, 'metrics-series')).toEqual([]);

    // a day's window in one step: each service's line averages its ten points, then takes their max
    await page.getByRole('combobox', { name: /^Step/ }).selectOption({ label: '24 h' });
    await page.waitForURL(/[?&]step=86400/);
    await showsText(latestOf(page, 'checkout'), '14.5 messages', 15_000);
    await showsText(latestOf(page, 'payments'), '104.5 messages', 15_000);
    expect(await page.getByRole('option', { name: /p95/ }).isDisabled()).toBe(true);
    await page.getByRole('combobox', { name: /^Aggregation/ }).selectOption('max');
    await page.waitForURL(/[?&]aggregation=max/);
    await showsText(latestOf(page, 'checkout'), '19 messages', 15_000);
    await showsText(latestOf(page, 'payments'), '109 messages', 15_000);
    expect(await page.getByRole('table', { name: 'Latest max of each line' }).isVisible()).toBe(true);

    // the counter's cumulative totals add up to their increase; an attribute filter narrows every line
    await page.getByRole('combobox', { name: /^Metric/ }).selectOption('orders.placed');
    await page.waitForURL((url) => url.searchParams.get('name') === 'orders.placed' && !url.searchParams.has('aggregation'));
    await showsText(latestOf(page, 'checkout'), '30 orders', 15_000);
    await showsText(latestOf(page, 'payments'), '15 orders', 15_000);
    await page.getByRole('combobox', { name: /^Attribute filter/ }).fill('region:us');
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.waitForURL(/attribute=region%3Aus/);
    await page.getByRole('heading', { name: 'No points in this window' }).waitFor();
    await page.getByRole('button', { name: 'Remove the filter region:us' }).click();
    await showsText(latestOf(page, 'checkout'), '30 orders', 15_000);

    // the histogram: its p95 by default, interpolated inside the (100, 250] bucket
    await page.getByRole('combobox', { name: /^Metric/ }).selectOption('checkout.duration');
    await page.getByRole('table', { name: 'Latest p95 of each line' }).waitFor({ timeout: 15_000 });
    const p95 = Number((await latestOf(page, 'checkout').getByRole('cell').nth(1).textContent())!.replace(/[^\d.]/g, ''));
    expect(p95).toBeGreaterThan(100);
    expect(p95).toBeLessThanOrEqual(250);
    console.log(`metrics: the series of a metric shows its data in ${await timeToData(page, page.url().replace(dashboard.webUrl, ''), (p) => p.locator('figure canvas'))} ms`);

    // anomalies: the detector runs once a minute and judges the last 5 minutes against the hour before
    await page.goto(`/anomalies?project=${projectId}&range=1h`);
    const throughput = page.getByRole('article', { name: 'checkout: throughput' });
    await throughput.waitFor({ timeout: 200_000 });
    await showsText(throughput, /robust deviations above, the threshold being 3\.5/);
    await showsText(throughput.locator('dl'), /Observed\s*[\d.]+ requests\/min\s*Baseline\s*[\d.]+ requests\/min/);
    await throughput.locator('figure canvas').waitFor({ timeout: 15_000 });
    const errorRate = page.getByRole('article', { name: 'checkout: error rate' });
    await errorRate.waitFor({ timeout: 60_000 });
    await showsText(errorRate.locator('dl'), /Baseline\s*0 %/);
    expect(await review(page, 'anomalies')).toEqual([]);

    await page.getByRole('combobox', { name: /^Metric/ }).selectOption('error_rate');
    await page.waitForURL(/[?&]metric=error_rate/);
    await throughput.waitFor({ state: 'detached' });
    expect(await errorRate.isVisible()).toBe(true);
    await page.getByRole('textbox', { name: 'Service' }).fill('payments');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/[?&]service=payments/);
    await page.getByRole('heading', { name: 'No anomalies in this window' }).waitFor();

    expect(unexpectedProblems(dashboard)).toEqual([]);
    await context.close();
  }, 420_000);
});
