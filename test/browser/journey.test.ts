/**
 * A new user's first session, start to end, in a real browser against the real service: sign up through the
 * form, create a project, copy its DSN, send errors with the stock @sentry/node SDK and a trace, logs and a
 * metric with the stock OpenTelemetry exporters, watch them arrive without reloading, resolve the issue, and
 * find the trace, the map, the logs and the metric through the navigation alone.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Page } from 'playwright-core';
import { createProjectInBrowser, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';

const run = promisify(execFile);
const TELEMETRY_WAIT = 30_000;

let dashboard: Dashboard;
let page: Page;
let dsn: string;
let projectId: string;

beforeAll(async () => {
  dashboard = await startDashboard();
  const context = await dashboard.newContext();
  page = await context.newPage();
}, 90_000);
afterAll(() => dashboard?.close());

/** The stock SDK in a process of its own, as an application runs it. */
const sentryApp = (scenario: string) => run(process.execPath, ['test/support/sentry-scenario.mjs', scenario], { env: { ...process.env, NODE_OPTIONS: '', SENTRY_DSN: dsn }, timeout: 30_000 });

/** A small shop instrumented with the OpenTelemetry SDK: web → PostgreSQL and web → worker, a log line per order, a counter. */
async function otelShop(): Promise<string[]> {
  const publicKey = new URL(dsn).username;
  const exporterOptions = (signal: string) => ({ url: `${dashboard.ingestUrl}/v1/${signal}`, headers: { Authorization: `Bearer ${publicKey}` } });
  const resource = (service: string) => resourceFromAttributes({ 'service.name': service, 'deployment.environment.name': 'production' });
  const webTraces = new BasicTracerProvider({ resource: resource('shop-web'), spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(exporterOptions('traces')))] });
  const workerTraces = new BasicTracerProvider({ resource: resource('shop-worker'), spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(exporterOptions('traces')))] });
  const logs = new LoggerProvider({ resource: resource('shop-web'), processors: [new SimpleLogRecordProcessor(new OTLPLogExporter(exporterOptions('logs')))] });
  const meters = new MeterProvider({ resource: resource('shop-web'), readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(exporterOptions('metrics')), exportIntervalMillis: 60_000 })] });
  const web = webTraces.getTracer('shop');
  const worker = workerTraces.getTracer('shop');
  const logger = logs.getLogger('shop');
  const placed = meters.getMeter('shop').createCounter('orders.placed');
  const traceIds: string[] = [];
  const start = Date.now() - 60_000;
  for (let i = 0; i < 6; i++) {
    const at = start + i * 5_000;
    const server = web.startSpan('GET /orders/:id', { kind: SpanKind.SERVER, startTime: new Date(at), attributes: { 'http.request.method': 'GET', 'http.route': '/orders/:id', 'http.response.status_code': i === 3 ? 500 : 200 } });
    traceIds.push(server.spanContext().traceId);
    const inRequest = trace.setSpan(context.active(), server);
    web.startSpan('SELECT orders', { kind: SpanKind.CLIENT, startTime: new Date(at + 5), attributes: { 'db.system': 'postgresql', 'db.query.text': `SELECT * FROM orders WHERE id = ${100 + i}` } }, inRequest).end(new Date(at + 30));
    const publish = web.startSpan('orders publish', { kind: SpanKind.PRODUCER, startTime: new Date(at + 40), attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation.type': 'publish' } }, inRequest);
    publish.end(new Date(at + 42));
    worker
      .startSpan('orders process', { kind: SpanKind.CONSUMER, startTime: new Date(at + 300), attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': 'orders', 'messaging.operation.type': 'process' } }, trace.setSpanContext(context.active(), { ...publish.spanContext(), isRemote: true }))
      .end(new Date(at + 350));
    logger.emit({ severityNumber: i === 3 ? SeverityNumber.ERROR : SeverityNumber.INFO, severityText: i === 3 ? 'ERROR' : 'INFO', body: `Order ${100 + i} placed`, timestamp: new Date(at + 50), context: inRequest });
    placed.add(1);
    if (i === 3) server.setStatus({ code: SpanStatusCode.ERROR });
    server.end(new Date(at + 120));
  }
  for (const provider of [workerTraces, webTraces, logs]) await provider.forceFlush();
  for (const provider of [workerTraces, webTraces, logs]) await provider.shutdown();
  await meters.shutdown();
  return traceIds;
}

/** Follows a navigation link as a person would: the menu on a phone, the sidebar on a desktop. */
async function navigate(name: string) {
  const toggle = page.getByRole('button', { name: 'Menu' });
  if (await toggle.isVisible()) await toggle.click();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1 }).first().waitFor();
}

test('sign up, onboard, and see the first error arrive while the page is open', async () => {
  await signUpInBrowser(page, { email: uniqueEmail('journey'), password: PASSWORD, organization: 'Journey Shop' });
  ({ dsn, projectId } = await createProjectInBrowser(page, 'shop'));
  await page.getByRole('button', { name: 'Copy DSN' }).click();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(dsn);
  await page.getByText('Waiting for the first event').waitFor();
  // the page must not reload: a mark set now is still there when the link appears
  await page.evaluate('window.stillHere = true');
  await sentryApp('errors');
  // the SDK reported five errors at once: whichever was stored first is the first issue
  const firstIssue = page.getByRole('region', { name: 'First event' }).getByText('Your first error arrived').getByRole('link');
  await firstIssue.waitFor({ timeout: TELEMETRY_WAIT });
  expect(await page.evaluate('window.stillHere')).toBe(true);
  const title = (await firstIssue.textContent())!;
  const issueId = /\/issues\/([0-9a-f]+)/.exec((await firstIssue.getAttribute('href'))!)![1];
  await firstIssue.click();
  await page.waitForURL(new RegExp(`/issues/${issueId}`));
  // an issue's title follows its newest event, which may have been counted since the link was drawn: the same message
  // with other numbers, or the other error the scenario sends under the same custom fingerprint
  const pattern = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\d+/g, '\\d+');
  const fingerprinted = ['Error: gateway 502', 'RangeError: completely different'];
  const titlesOfIssue = new RegExp((fingerprinted.some((other) => title.includes(other)) ? fingerprinted : [title]).map(pattern).join('|'));
  await showsText(page.getByRole('heading', { level: 1 }), titlesOfIssue);
  expect(await review(page, 'journey-issue')).toEqual([]);
}, 90_000);

test('the issue list shows the SDK’s issues, and a new error appears without reloading', async () => {
  await navigate('Issues');
  await page.getByRole('link', { name: /bad coupon code/ }).waitFor({ timeout: TELEMETRY_WAIT });
  await page.evaluate('window.stillHere = true');
  await sentryApp('telemetry');
  // the telemetry scenario reports no error: send one more error with the SDK
  await run(process.execPath, ['--input-type=module', '-e', `
    const Sentry = await import('@sentry/node');
    Sentry.init({ dsn: ${JSON.stringify(dsn)}, environment: 'staging' });
    Sentry.captureException(new Error('inventory service unavailable'));
    await Sentry.flush(10000);
  `], { env: { ...process.env, NODE_OPTIONS: '' }, timeout: 30_000 });
  await page.getByRole('link', { name: /inventory service unavailable/ }).waitFor({ timeout: TELEMETRY_WAIT });
  expect(await page.evaluate('window.stillHere')).toBe(true);
  expect(await review(page, 'journey-issues')).toEqual([]);
}, 90_000);

test('resolving an issue takes it off the unresolved list', async () => {
  await page.getByRole('link', { name: /inventory service unavailable/ }).click();
  await page.waitForURL(/\/issues\/[0-9a-f]+/);
  await page.getByRole('button', { name: 'Resolve' }).click();
  await page.getByRole('button', { name: 'Unresolve' }).waitFor();
  await navigate('Issues');
  await page.getByLabel('Status').selectOption('unresolved');
  await page.waitForURL(/[?&]status=unresolved/);
  // the previous rows stay on screen until the filtered answer replaces them
  await page.getByRole('link', { name: /inventory service unavailable/ }).waitFor({ state: 'detached', timeout: 10_000 });
  await page.getByRole('link', { name: /bad coupon code/ }).waitFor();
  await page.getByLabel('Status').selectOption('resolved');
  await page.getByRole('link', { name: /inventory service unavailable/ }).waitFor({ timeout: 10_000 });
}, 60_000);

test('a trace from the OpenTelemetry exporter opens as a waterfall; the map, logs and metrics show the shop', async () => {
  const traceIds = await otelShop();
  await navigate('Traces');
  const traceLink = page.getByRole('link', { name: /GET \/orders\/:id/ }).first();
  await traceLink.waitFor({ timeout: TELEMETRY_WAIT });
  expect(await review(page, 'journey-traces')).toEqual([]);
  await page.goto(`/traces/${traceIds[3]}?project=${projectId}`);
  await page.getByText('SELECT orders').first().waitFor({ timeout: TELEMETRY_WAIT });
  await page.getByText('orders process').first().waitFor({ timeout: TELEMETRY_WAIT });
  expect(await review(page, 'journey-trace')).toEqual([]);

  await navigate('Service map');
  await page.getByRole('table').getByText('shop-worker').first().waitFor({ timeout: TELEMETRY_WAIT });
  expect(await review(page, 'journey-map')).toEqual([]);

  await navigate('Logs');
  await page.getByText('Order 103 placed').first().waitFor({ timeout: TELEMETRY_WAIT });
  expect(await review(page, 'journey-logs')).toEqual([]);

  await navigate('Metrics');
  await page.getByRole('link', { name: 'orders.placed' }).click({ timeout: TELEMETRY_WAIT });
  await page.waitForURL(/[?&]name=orders.placed/);
  await page.locator('main canvas').first().waitFor({ timeout: TELEMETRY_WAIT });
  expect(await review(page, 'journey-metrics')).toEqual([]);
  expect(unexpectedProblems(dashboard)).toEqual([]);
}, 120_000);
