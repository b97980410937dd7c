/**
 * `npm run bench:web`: how long each dashboard page takes to show its data on a local stack holding
 * 100,000 records (issue 19: "within 1 s, measured and printed, not asserted").
 *
 * It starts the built service as `npm start` does (every role in one process, the dashboard on a free
 * WEB_PORT) on a fresh database of the local store, signs up and creates a project through the API, and
 * sends through the ingest port, as SDKs would, a mix spread over the last day: error events over 200
 * issues (Sentry envelopes), traces of 12 spans across 8 services, log lines and metric points
 * (OTLP/JSON). Once the workers have stored them (the queue is empty and GET /v1/usage counts them), it
 * logs in through the /login form in Chromium and opens each page BENCH_WEB_RUNS times, timing from
 * navigation start until the page's data is visible. It prints median/min/max per page, writes
 * bench-results/web.json and a screenshot of each page's last run into bench-results/web/, and exits 0
 * whatever the timings.
 *
 * Environment: BENCH_WEB_SCALE (1: 100,000 records; 0.05 for a quick run), BENCH_WEB_RUNS (3),
 * BENCH_WEB_TIMEOUT_SECONDS (30: a page that shows nothing by then is reported as such),
 * BENCH_FILL_CONCURRENCY (16).
 */
import { mkdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { chromium, type Page } from 'playwright-core';
import { PASSWORD, login, register, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, nanos, otlpTraces, otlpValue, projectWithDsn, type OtlpSpan } from '../support/factories/telemetry.js';
import { CHROMIUM } from '../support/browser.js';
import type { Harness } from '../support/harness.js';
import { drained, freePort, freshDatabase, numberFromEnv, percentile, send, sleep, startService, writeResults, type Service, type Target as FillTarget } from './support.js';

const SCALE = numberFromEnv('BENCH_WEB_SCALE', 1);
const RUNS = numberFromEnv('BENCH_WEB_RUNS', 3);
const TIMEOUT_MS = numberFromEnv('BENCH_WEB_TIMEOUT_SECONDS', 30) * 1000;
const CONCURRENCY = numberFromEnv('BENCH_FILL_CONCURRENCY', 16);

/** 100,000 records at scale 1: errors over ~200 issues, spans in traces of 12, log lines, metric points. */
const WANTED = {
  errors: Math.round(10_000 * SCALE),
  traces: Math.round(5_000 * SCALE),
  logs: Math.round(25_000 * SCALE),
  metrics: Math.round(5_000 * SCALE),
};
const SPANS_PER_TRACE = 12;
const ISSUES = 200;
/** Half the events go to these few issues, as in the wild. */
const HOT_ISSUES = 10;
const TRACES_PER_REQUEST = 8;
const LOGS_PER_REQUEST = 100;
const POINTS_PER_REQUEST = 100;
/** Records are sent in chunks of about this many, each stored before the next is sent, so Redis holds no backlog. */
const CHUNK = 10_000;
/**
 * Records are spread over the 23 hours before seeding starts, so the pages' default window (the last 24 h)
 * still holds them all while the pages are timed.
 */
const SPREAD_MS = 23 * 3_600_000;
export const WEB_METRIC = 'shop.request.duration';

const GATEWAY = 'web';
export const API = 'api';
/** The services the API calls: each trace goes through two of them. */
const BACKENDS = ['checkout', 'cart', 'payments', 'inventory', 'search', 'accounts'];
const SERVICES = [GATEWAY, API, ...BACKENDS];
const RESOURCES = ['orders', 'products', 'baskets', 'customers', 'invoices'];

/** Where the records go: the project, as the DSN addresses it (the bench signs in, it needs no API key). */
export type Target = Omit<FillTarget, 'apiKey'>;

/** A request to the ingest port and how many records it carries. */
interface Send {
  records: number;
  request: () => Promise<Response>;
}

const randomTime = (now: number) => now - Math.floor(Math.random() * SPREAD_MS);

export function errorSends(target: Target, ingestUrl: string, now: number): Send[] {
  const url = `${ingestUrl}/api/${target.projectNumber}/envelope/?sentry_key=${target.publicKey}`;
  return Array.from({ length: WANTED.errors }, (_, n) => ({
    records: 1,
    request: () => {
      const kind = n % 2 === 0 ? (n / 2) % HOT_ISSUES : HOT_ISSUES + (((n - 1) / 2) % (ISSUES - HOT_ISSUES));
      const service = BACKENDS[kind % BACKENDS.length]!;
      const event = errorEvent(
        {
          timestamp: randomTime(now) / 1000,
          server_name: `${service}-${n % 3}`,
          user: { id: `user-${n % 1000}`, email: `user-${n % 1000}@example.test` },
          contexts: { trace: { trace_id: hex(16), span_id: hex(8) } },
          tags: { region: `eu-${n % 3}`, service },
          release: `shop@1.${kind % 4}.0`,
        },
        { type: `LoadError${kind}`, value: `could not load ${RESOURCES[kind % RESOURCES.length]} ${n} in ${service}`, fn: `load${kind}`, lineno: 10 + kind },
      );
      return fetch(url, { method: 'POST', body: envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]) });
    },
  }));
}

/**
 * One trace as instrumented services send it: the gateway's request, its call to the API, the API's
 * query and its call to one backend, which queries and calls another. Every 40th fails in the second
 * backend; every 97th is ten times slower.
 */
function trace(t: number, startMs: number): Record<string, OtlpSpan[]> {
  const traceId = hex(16);
  const first = BACKENDS[t % BACKENDS.length]!;
  // each backend calls the next one, so the map is a chain of backends closing in a cycle
  const second = BACKENDS[(t + 1) % BACKENDS.length]!;
  const failed = t % 40 === 0;
  const slow = t % 97 === 0 ? 10 : 1;
  const resource = RESOURCES[t % RESOURCES.length]!;
  const duration = (20 + (t % 180)) * slow;
  const id = () => hex(8);
  const call = (parent: string, peer: string, start: number, ms: number, error = false): OtlpSpan => ({
    traceId,
    id: id(),
    parent,
    name: 'GET',
    kind: 'client',
    startMs: start,
    durationMs: Math.round(ms),
    ...(error && { status: 'error' as const }),
    attributes: { 'http.request.method': 'GET', 'peer.service': peer, 'url.full': `http://${peer}.internal/${resource}/${t}`, 'http.response.status_code': error ? 500 : 200 },
  });
  const entry = (parent: string | undefined, route: string, start: number, ms: number, error = false): OtlpSpan => ({
    traceId,
    id: id(),
    ...(parent && { parent }),
    name: `GET ${route}`,
    kind: 'server',
    startMs: start,
    durationMs: Math.round(ms),
    ...(error && { status: 'error' as const }),
    attributes: { 'http.request.method': 'GET', 'http.route': route, 'http.response.status_code': error ? 500 : 200 },
  });
  const query = (parent: string, system: string, text: string, start: number, ms: number): OtlpSpan => ({
    traceId,
    id: id(),
    parent,
    name: `${text.split(' ')[0]} ${resource}`,
    kind: 'client',
    startMs: start,
    durationMs: Math.round(ms),
    attributes: { 'db.system': system, 'db.query.text': text },
  });
  const at = (fraction: number) => startMs + Math.round(duration * fraction);
  const root = entry(undefined, `/shop/${resource}`, startMs, duration);
  const toApi = call(root.id, API, at(0.05), duration * 0.9);
  const apiEntry = entry(toApi.id, `/api/${resource}/{id}`, at(0.06), duration * 0.88);
  const apiQuery = query(apiEntry.id, 'postgresql', `SELECT * FROM ${resource} WHERE id = $1`, at(0.08), duration * 0.1);
  const toFirst = call(apiEntry.id, first, at(0.2), duration * 0.6, failed);
  const firstEntry = entry(toFirst.id, `/${first}/{id}`, at(0.21), duration * 0.58);
  const firstQuery = query(firstEntry.id, 'redis', `GET ${resource}:${t % 500}`, at(0.22), duration * 0.02);
  const toSecond = call(firstEntry.id, second, at(0.3), duration * 0.4, failed);
  const secondEntry = entry(toSecond.id, `/${second}/{id}`, at(0.31), duration * 0.38, failed);
  const secondQuery = query(secondEntry.id, 'postgresql', `UPDATE ${resource} SET seen_at = now() WHERE id = $1`, at(0.32), duration * 0.2);
  const render: OtlpSpan = { traceId, id: id(), parent: secondEntry.id, name: `render ${resource}`, kind: 'internal', startMs: at(0.55), durationMs: Math.round(duration * 0.1) };
  const serialize: OtlpSpan = { traceId, id: id(), parent: apiEntry.id, name: 'serialize response', kind: 'internal', startMs: at(0.85), durationMs: Math.round(duration * 0.05) };
  return { [GATEWAY]: [root, toApi], [API]: [apiEntry, apiQuery, toFirst, serialize], [first]: [firstEntry, firstQuery, toSecond], [second]: [secondEntry, secondQuery, render] };
}

export function traceSends(target: Target, ingestUrl: string, now: number): Send[] {
  const sends: Send[] = [];
  for (let sent = 0; sent < WANTED.traces; sent += TRACES_PER_REQUEST) {
    const count = Math.min(TRACES_PER_REQUEST, WANTED.traces - sent);
    sends.push({
      records: count * SPANS_PER_TRACE,
      request: () => {
        const byService: Record<string, OtlpSpan[]> = {};
        for (let t = sent; t < sent + count; t++) {
          for (const [service, spans] of Object.entries(trace(t, randomTime(now)))) (byService[service] ??= []).push(...spans);
        }
        return otlpPost(target, `${ingestUrl}/v1/traces`, otlpTraces(byService));
      },
    });
  }
  return sends;
}

const otlpPost = (target: Target, url: string, body: unknown) =>
  fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${target.publicKey}` } });

const resourceOf = (service: string) => ({ attributes: [{ key: 'service.name', value: otlpValue(service) }, { key: 'deployment.environment.name', value: otlpValue('production') }] });

/** Log lines of a few shapes (so the patterns page has patterns), mostly info, some warnings and errors. */
function logLine(n: number): { severityNumber: number; text: string } {
  const resource = RESOURCES[n % RESOURCES.length]!;
  switch (n % 10) {
    case 0:
      return { severityNumber: 13, text: `slow query on ${resource} took ${200 + (n % 800)} ms` };
    case 1:
      return { severityNumber: 17, text: `failed to load ${resource} ${n}: connection reset by peer` };
    case 2:
    case 3:
      return { severityNumber: 9, text: `cache miss for ${resource}:${n % 5000}` };
    default:
      return { severityNumber: 9, text: `GET /api/${resource}/${n % 5000} answered 200 in ${n % 300} ms` };
  }
}

export function logSends(target: Target, ingestUrl: string, now: number): Send[] {
  const sends: Send[] = [];
  for (let sent = 0; sent < WANTED.logs; sent += LOGS_PER_REQUEST) {
    const count = Math.min(LOGS_PER_REQUEST, WANTED.logs - sent);
    const service = SERVICES[(sent / LOGS_PER_REQUEST) % SERVICES.length]!;
    sends.push({
      records: count,
      request: () => {
        const logRecords = Array.from({ length: count }, (_, l) => {
          const { severityNumber, text } = logLine(sent + l);
          return { timeUnixNano: nanos(randomTime(now)), severityNumber, body: { stringValue: text }, traceId: hex(16), spanId: hex(8) };
        });
        return otlpPost(target, `${ingestUrl}/v1/logs`, { resourceLogs: [{ resource: resourceOf(service), scopeLogs: [{ logRecords }] }] });
      },
    });
  }
  return sends;
}

/** A request-duration gauge per service and route. */
export function metricSends(target: Target, ingestUrl: string, now: number): Send[] {
  const sends: Send[] = [];
  for (let sent = 0; sent < WANTED.metrics; sent += POINTS_PER_REQUEST) {
    const count = Math.min(POINTS_PER_REQUEST, WANTED.metrics - sent);
    const service = SERVICES[(sent / POINTS_PER_REQUEST) % SERVICES.length]!;
    sends.push({
      records: count,
      request: () => {
        const dataPoints = Array.from({ length: count }, (_, p) => ({
          timeUnixNano: nanos(randomTime(now)),
          asDouble: 5 + ((sent + p) % 97) + (p % 7) * 10,
          attributes: [{ key: 'http.route', value: otlpValue(`/api/${RESOURCES[p % RESOURCES.length]}/{id}`) }],
        }));
        return otlpPost(target, `${ingestUrl}/v1/metrics`, {
          resourceMetrics: [{ resource: resourceOf(service), scopeMetrics: [{ metrics: [{ name: WEB_METRIC, unit: 'ms', gauge: { dataPoints } }] }] }],
        });
      },
    });
  }
  return sends;
}

/** Sends every request, a chunk of about CHUNK records at a time, waiting for the workers after each. */
export async function seed(service: Service, sends: Send[]): Promise<void> {
  const started = performance.now();
  let chunk: Send[] = [];
  let records = 0;
  let stored = 0;
  for (const [index, item] of sends.entries()) {
    chunk.push(item);
    records += item.records;
    if (records < CHUNK && index < sends.length - 1) continue;
    await send(
      chunk.map((entry) => entry.request),
      CONCURRENCY,
    );
    await drained(service.queue);
    stored += records;
    console.log(`  ${stored.toLocaleString('en')} records stored after ${Math.round((performance.now() - started) / 1000)} s`);
    chunk = [];
    records = 0;
  }
}

export type Usage = Record<'errors' | 'spans' | 'logs' | 'metrics', number> & { dropped: number };

/** What GET /v1/usage says the workers stored for the project this month, and what they could not store. */
async function usage(client: Service['api'], projectId: string): Promise<Usage> {
  const reply = await client.get(`/v1/usage?project=${projectId}`);
  if (reply.status !== 200) throw new Error(`usage: ${reply.status} ${reply.text}`);
  const used = (category: string) => reply.body.categories.find((entry: { category: string }) => entry.category === category)?.used ?? 0;
  const dropped = reply.body.dropped.reduce((sum: number, entry: { quantity: number }) => sum + entry.quantity, 0);
  return { errors: used('errors'), spans: used('spans'), logs: used('logs'), metrics: used('metrics'), dropped };
}

/** Polls the usage counters (which lag the queue by up to about a minute) until every record sent is counted. */
export async function counted(client: Service['api'], projectId: string, sent: number): Promise<Usage> {
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    const figures = await usage(client, projectId);
    const total = figures.errors + figures.spans + figures.logs + figures.metrics + figures.dropped;
    if (total >= sent) return figures;
    if (Date.now() > deadline) throw new Error(`the usage counters show ${total} of ${sent} records after 5 min: ${JSON.stringify(figures)}`);
    await sleep(1000);
  }
}

interface PageToTime {
  path: string;
  /** What shows the page's data, as a CSS selector. */
  ready: string;
  /**
   * Whether the page's empty state ends the wait too: not on pages of several sections, where one
   * section may rightly be empty (no queues, no surges) while the data is still loading in another.
   */
  emptyEnds: boolean;
}

/**
 * A script run before each page's own: the time (ms since navigation start) each selector first matched a
 * visible element, recorded as the DOM changes, so the figures do not include Playwright's polling. A
 * string, since a transpiled function would call helpers the page does not have.
 */
const watchSelectors = (selectors: string[]) => `(() => {
  const seen = (window.__firstSeen = {});
  new MutationObserver(() => {
    for (const selector of ${JSON.stringify(selectors)}) {
      if (seen[selector] !== undefined) continue;
      const element = document.querySelector(selector);
      if (element && element.getClientRects().length > 0) seen[selector] = performance.now();
    }
  }).observe(document, { childList: true, subtree: true, attributes: true });
})();`;

const EMPTY = 'main .empty-state';
const SCREENSHOTS = 'bench-results/web';

interface PageResult {
  path: string;
  ready: string;
  /** Per run: ms from navigation start, or null when nothing showed within the timeout. */
  runs: (number | null)[];
  /** The runs that ended on the empty state instead of data. */
  empty: number;
}

async function timePage(page: Page, target: PageToTime): Promise<PageResult> {
  const result: PageResult = { path: target.path, ready: target.ready, runs: [], empty: 0 };
  for (let run = 0; run < RUNS; run++) {
    await page.goto(target.path, { waitUntil: 'commit' });
    const shown = await page
      .locator(target.emptyEnds ? `${target.ready}, ${EMPTY}` : target.ready)
      .first()
      .waitFor({ state: 'visible', timeout: TIMEOUT_MS })
      .then(() => true)
      .catch(() => false);
    if (!shown) {
      result.runs.push(null);
      // a page that showed nothing in time will not in the next runs either
      break;
    }
    const seen = (await page.evaluate('window.__firstSeen')) as Record<string, number>;
    const data = seen[target.ready];
    const empty = target.emptyEnds ? seen[EMPTY] : undefined;
    const isEmpty = empty !== undefined && (data === undefined || empty < data);
    if (isEmpty) result.empty++;
    result.runs.push(Math.round((isEmpty ? empty : data)!));
  }
  // what the last run showed, for a person to check that the selector meant data
  await page.screenshot({ path: `${SCREENSHOTS}/${target.path.replace(/^\//, '').replace(/\W+/g, '-')}.png` });
  return result;
}

async function main() {
  const began = performance.now();
  const store = await freshDatabase('slk_bench_web', 'auto', true);
  const webPort = await freePort();
  const webUrl = `http://localhost:${webPort}`;
  const service = await startService(store, ['all'], { WEB_PORT: String(webPort), DASHBOARD_ORIGIN: webUrl, PASSWORD_HASH_COST: '12' });
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  try {
    for (let tries = 0; !(await fetch(`${webUrl}/config.json`).then((r) => r.ok).catch(() => false)); tries++) {
      if (tries > 120) throw new Error(`the dashboard did not answer on ${webUrl}`);
      await sleep(250);
    }

    // the account signs in as the dashboard does: session cookie and the dashboard's Origin
    const harness = { api: service.api } as Harness;
    const email = uniqueEmail('bench-web');
    await register(harness, email);
    const signedIn = await login(harness, email);
    const client = service.api.with({ cookie: signedIn.cookie, origin: webUrl });
    const project = await projectWithDsn({ ...signedIn, client }, service.ingestUrl);
    const target: Target = { projectId: project.id, projectNumber: project.number, publicKey: project.publicKey };

    const seedStarted = performance.now();
    const now = Date.now();
    const sends = [...errorSends(target, service.ingestUrl, now), ...traceSends(target, service.ingestUrl, now), ...logSends(target, service.ingestUrl, now), ...metricSends(target, service.ingestUrl, now)];
    const sent = sends.reduce((sum, item) => sum + item.records, 0);
    console.log(`seeding ${sent.toLocaleString('en')} records (${sends.length.toLocaleString('en')} requests)…`);
    await seed(service, sends);
    const stored = await counted(client, target.projectId, sent);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    console.log(`seeded in ${seedSeconds.toFixed(0)} s: ${JSON.stringify(stored)}`);

    const issue = (await client.get(`/v1/issues?project=${target.projectId}&sort=events&limit=1`)).body.data[0];
    const traceRow = (await client.get(`/v1/traces?project=${target.projectId}&limit=1`)).body.data[0];
    if (!issue || !traceRow) throw new Error('the API lists no issue or no trace after seeding');

    // What "its data is visible" means on each page: the first row of its main table, the first span of
    // the waterfall, its chart (a uPlot canvas: the issue's events over time, the service's requests, the
    // metric's series, the traffic on /performance), the map's drawing (its svg), or the first anomaly.
    const pages: PageToTime[] = [
      { path: '/issues', ready: 'main table tbody tr', emptyEnds: true },
      { path: `/issues/${issue.id}`, ready: 'main canvas', emptyEnds: true },
      { path: '/traces', ready: 'main table tbody tr', emptyEnds: true },
      { path: `/traces/${traceRow.trace_id}`, ready: 'main .waterfall-rows li', emptyEnds: true },
      { path: '/services', ready: 'main table tbody tr', emptyEnds: true },
      { path: '/services/map', ready: 'main svg', emptyEnds: true },
      { path: `/services/${API}`, ready: 'main canvas', emptyEnds: true },
      { path: '/performance', ready: 'main canvas', emptyEnds: false },
      { path: '/logs', ready: 'main table tbody tr', emptyEnds: true },
      { path: '/logs/patterns', ready: 'main table tbody tr', emptyEnds: false },
      { path: `/metrics?name=${WEB_METRIC}`, ready: 'main canvas', emptyEnds: true },
      // the spread-out seed has no anomaly, so this page's answer is usually its empty state
      { path: '/anomalies', ready: 'main .anomaly-list li', emptyEnds: true },
    ];

    const context = await browser.newContext({ baseURL: webUrl, viewport: { width: 1440, height: 900 } });
    await context.addInitScript({ content: watchSelectors([...new Set([...pages.map((entry) => entry.ready), EMPTY])]) });
    const page = await context.newPage();
    await page.goto('/login');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL((url) => url.pathname !== '/login');

    mkdirSync(SCREENSHOTS, { recursive: true });
    const results: PageResult[] = [];
    for (const entry of pages) {
      const result = await timePage(page, entry);
      results.push(result);
      console.log(`${entry.path}: ${result.runs.map((ms) => (ms === null ? 'nothing shown' : `${ms} ms`)).join(', ')}${result.empty ? ` (${result.empty} on the empty state)` : ''}`);
    }
    console.log(`\n${table(results, stored, seedSeconds)}\n`);
    writeResults('web', { at: new Date().toISOString(), records: stored, seedSeconds, runs: RUNS, pages: results, totalSeconds: (performance.now() - began) / 1000 });
  } finally {
    await browser.close();
    await service.stop();
    await store.drop();
  }
}

function table(results: PageResult[], stored: Usage, seedSeconds: number): string {
  const total = stored.errors + stored.spans + stored.logs + stored.metrics;
  const lines = [
    `Records stored: ${total.toLocaleString('en')} (${stored.errors.toLocaleString('en')} error events, ${stored.spans.toLocaleString('en')} spans, ${stored.logs.toLocaleString('en')} log lines, ${stored.metrics.toLocaleString('en')} metric points; ${stored.dropped} dropped), seeded in ${Math.round(seedSeconds)} s`,
    `Time from navigation start until the data is visible, ${RUNS} runs per page (target ≤ 1,000 ms, not asserted):`,
    '',
    '| page | data visible when | median (ms) | min (ms) | max (ms) | note |',
    '|---|---|---:|---:|---:|---|',
  ];
  for (const result of results) {
    const times = result.runs.filter((ms): ms is number => ms !== null).sort((a, b) => a - b);
    const figure = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? '–' : String(ms));
    const note = result.runs.includes(null) ? `nothing shown within ${TIMEOUT_MS / 1000} s` : result.empty ? `${result.empty} of ${result.runs.length} runs showed the empty state` : '';
    lines.push(`| ${result.path} | \`${result.ready}\` | ${figure(percentile(times, 50))} | ${figure(times[0])} | ${figure(times.at(-1))} | ${note} |`);
  }
  return lines.join('\n');
}

// run as a script (test/bench/reads.ts imports the seeding above without running the pages)
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
