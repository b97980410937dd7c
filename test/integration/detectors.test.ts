/**
 * The detectors, over telemetry sent as OTLP/JSON exporters send it, with controlled timestamps (all
 * minute-aligned, hours in the past), one project per area so none disturbs another:
 *
 * - anomalies (GET /v1/anomalies): the service `checkout` serves 10 requests a minute, all taking
 *   100 ms, for 12 five-minute baseline windows with 0 or 1 failure each, then a 5-minute spike in
 *   which 20 of its 50 requests fail (40 %), then a normal window again. The detector job is run on
 *   the `maintenance` queue with `at` = the spike's end, then `at` = the end of the window after.
 *   The workers' once-a-minute schedule of that job is removed first: a tick judging "now" closes
 *   every open anomaly it does not find, which would race with the runs in the past.
 * - approaching thresholds (GET /v1/services/approaching, PATCH /v1/settings): over six 10-minute
 *   steps, `search` answers its 10 requests a step in 300, 400, … 800 ms while `catalog` stays at
 *   200 ms and `images` falls from 800 to 300 ms; the gauge `disk.used_ratio` climbs 0.5 → 0.8 on
 *   `db-host`, falls on `cache-host` and stays flat on `queue-host`.
 * - log surges (GET /v1/logs/surges): over two 30-minute windows, `batch` goes from 10 lines to 60,
 *   `heartbeat` stays at 30 and 30, and `payments` logs a pattern never seen before (8 lines) in the
 *   second window only. Lines for the Drain and Sentry-template checks (GET /v1/logs/patterns) are
 *   sent in a 10-minute window of their own.
 */
import { bucketsOf, percentile } from '../../src/shared/telemetry/histogram.js';
import { addMember, signUp, type Account } from '../support/factories/accounts.js';
import { hex, nanos, otlpTraces, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness, useScheduledJob } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let stranger: Account;
const projects = {} as Record<'anomalies' | 'approaching' | 'logs', ProjectWithDsn>;
useHarness((started) => (h = started), {}, { workers: true });

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** The start of the current hour: every area's times are whole hours before it. */
const hour0 = Math.floor(Date.now() / HOUR) * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const round4 = (value: number) => Number(value.toFixed(4));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const stringAttributes = (attributes: Record<string, string>) => Object.entries(attributes).map(([key, value]) => ({ key, value: { stringValue: value } }));
const resource = (service: string) => ({ attributes: stringAttributes({ 'service.name': service }) });

async function ingest(project: ProjectWithDsn, path: string, body: unknown) {
  const reply = await h.ingest.request('POST', path, JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

/** A request a service served: one server (entry) span of its own trace. */
interface Served {
  at: number;
  ms: number;
  failed?: boolean;
}

const sendRequests = (project: ProjectWithDsn, service: string, requests: Served[]) =>
  ingest(
    project,
    '/v1/traces',
    otlpTraces({
      [service]: requests.map((request) => ({
        traceId: hex(16),
        id: hex(8),
        name: 'GET /items',
        kind: 'server',
        startMs: request.at,
        durationMs: request.ms,
        attributes: { 'http.route': '/items' },
        status: request.failed ? 'error' : 'ok',
      })),
    }),
  );

interface LogLine {
  service: string;
  body: string;
  at: number;
  /** `sentry.message.template`, as Sentry's logger sends it. */
  template?: string;
}

const sendLogs = (project: ProjectWithDsn, lines: LogLine[]) =>
  ingest(project, '/v1/logs', {
    resourceLogs: [...new Set(lines.map((line) => line.service))].map((service) => ({
      resource: resource(service),
      scopeLogs: [
        {
          logRecords: lines
            .filter((line) => line.service === service)
            .map((line) => ({
              timeUnixNano: nanos(line.at),
              severityNumber: 9,
              body: { stringValue: line.body },
              attributes: stringAttributes(line.template ? { 'sentry.message.template': line.template } : {}),
            })),
        },
      ],
    })),
  });

const sendGauge = (project: ProjectWithDsn, service: string, name: string, points: { at: number; value: number }[]) =>
  ingest(project, '/v1/metrics', {
    resourceMetrics: [{ resource: resource(service), scopeMetrics: [{ metrics: [{ name, unit: '1', gauge: { dataPoints: points.map((point) => ({ timeUnixNano: nanos(point.at), asDouble: point.value })) } }] }] }],
  });

/** `count` times evenly spread over [from, from + lengthMs). */
const spread = (from: number, lengthMs: number, count: number) => Array.from({ length: count }, (_, i) => from + Math.floor((i * lengthMs) / count));

// ---------------------------------------------------------------------------------------------
// What is planted

/** Anomalies: 5-minute windows of 50 requests; the failures in each, baseline first. */
const WINDOW = 5 * MINUTE;
const PER_WINDOW = 50;
const BASELINE_FAILURES = [1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0];
const SPIKE_FAILURES = 20;
const AFTER_FAILURES = 1;
const spikeStart = hour0 - 3 * HOUR;
const baselineStart = spikeStart - BASELINE_FAILURES.length * WINDOW;
const spikeEnd = spikeStart + WINDOW;
const afterEnd = spikeEnd + WINDOW;
const anomalyWindows = [...BASELINE_FAILURES, SPIKE_FAILURES, AFTER_FAILURES];

/** Approaching: six 10-minute steps of 10 requests each, every request of a step taking the same time. */
const STEP = 10 * MINUTE;
const PER_STEP = 10;
const approachStart = hour0 - 9 * HOUR;
const approachEnd = approachStart + 6 * STEP;
const LATENCIES = { search: [300, 400, 500, 600, 700, 800], catalog: [200, 200, 200, 200, 200, 200], images: [800, 700, 600, 500, 400, 300] };
const GAUGE = 'disk.used_ratio';
const GAUGES = { 'db-host': [0.5, 0.6, 0.7, 0.8], 'cache-host': [0.8, 0.7, 0.6, 0.5], 'queue-host': [0.6, 0.6, 0.6, 0.6] };

/** Log surges: the previous window, then the current one, of the same length. */
const SURGE_WINDOW = 30 * MINUTE;
const surgeStart = hour0 - 5 * HOUR;
const previousStart = surgeStart - SURGE_WINDOW;
const surgeEnd = surgeStart + SURGE_WINDOW;
const refunds = spread(surgeStart + 5 * MINUTE, 20 * MINUTE, 8).map((at, i) => ({ service: 'payments', body: `Refund for order ${5000 + i} issued to ${i % 2 ? 'bob' : 'alice'}`, at }));
const processed = (from: number, count: number) => spread(from, SURGE_WINDOW, count).map((at, i) => ({ service: 'batch', body: `Processed job ${i + 1} in ${20 + i} ms`, at }));
const heartbeats = (from: number) => spread(from, SURGE_WINDOW, 30).map((at, i) => ({ service: 'heartbeat', body: `Heartbeat from worker ${i % 4} ok`, at }));
const surgeLines: LogLine[] = [...processed(previousStart, 10), ...processed(surgeStart, 60), ...heartbeats(previousStart), ...heartbeats(surgeStart), ...refunds];

/** Drain and Sentry templates, in a window of their own. */
const drainStart = hour0 - 7 * HOUR;
const drainLines: LogLine[] = [
  { service: 'db-client', body: 'Connected to db-7 in 35 ms', at: drainStart },
  { service: 'db-client', body: 'Connected to db-12 in 8 ms', at: drainStart + MINUTE },
  { service: 'db-client', body: 'Connected to cache-primary in 4 ms', at: drainStart + 2 * MINUTE },
  { service: 'db-client', body: 'Disconnected from db-7 after 3 retries', at: drainStart + 3 * MINUTE },
  { service: 'shop', body: 'Order 1042 shipped', at: drainStart + 4 * MINUTE, template: 'Order {id} shipped' },
  { service: 'shop', body: 'Order gift card 77 shipped', at: drainStart + 5 * MINUTE, template: 'Order {id} shipped' },
  { service: 'shop', body: 'Order 1044 shipped', at: drainStart + 6 * MINUTE },
];

const windowOf = (project: ProjectWithDsn, from: number, to: number) => `project=${project.id}&from=${iso(from)}&to=${iso(to)}`;

beforeAll(async () => {
  owner = await signUp(h);
  stranger = await signUp(h, 'stranger');
  projects.anomalies = await projectWithDsn(owner, h.ingest.baseUrl);
  projects.approaching = await projectWithDsn(owner, h.ingest.baseUrl);
  projects.logs = await projectWithDsn(owner, h.ingest.baseUrl);

  for (const [index, failures] of anomalyWindows.entries()) {
    const from = baselineStart + index * WINDOW;
    await sendRequests(projects.anomalies, 'checkout', spread(from, WINDOW, PER_WINDOW).map((at, i) => ({ at, ms: 100, failed: i < failures })));
  }
  for (const [service, latencies] of Object.entries(LATENCIES)) {
    await sendRequests(projects.approaching, service, latencies.flatMap((ms, step) => spread(approachStart + step * STEP, STEP, PER_STEP).map((at) => ({ at, ms }))));
  }
  for (const [service, values] of Object.entries(GAUGES)) {
    await sendGauge(projects.approaching, service, GAUGE, values.map((value, step) => ({ at: approachStart + step * STEP + 30_000, value })));
  }
  await sendLogs(projects.logs, surgeLines);
  await sendLogs(projects.logs, drainLines);

  const requestsIn = async (project: ProjectWithDsn, from: number, to: number) =>
    ((await owner.client.get(`/v1/services?${windowOf(project, from, to)}`)).body.data ?? []).reduce((sum: number, service: { requests: number }) => sum + service.requests, 0);
  const logsIn = async (from: number, to: number) =>
    ((await owner.client.get(`/v1/logs/patterns?${windowOf(projects.logs, from, to)}`)).body.data ?? []).reduce((sum: number, pattern: { count: number }) => sum + pattern.count, 0);
  await eventually(async () => ((await requestsIn(projects.anomalies, baselineStart, afterEnd)) === anomalyWindows.length * PER_WINDOW ? true : undefined), 'the checkout requests counted');
  await eventually(async () => ((await requestsIn(projects.approaching, approachStart, approachEnd)) === 3 * 6 * PER_STEP ? true : undefined), 'the approaching requests counted');
  await eventually(async () => {
    const reply = await owner.client.get(`/v1/metrics/series?${windowOf(projects.approaching, approachStart, approachEnd)}&name=${GAUGE}&step=3600&aggregation=count`);
    return reply.body.points?.[0]?.value === 12 ? true : undefined;
  }, 'the gauge points stored');
  await eventually(async () => ((await logsIn(previousStart, surgeEnd)) === surgeLines.length ? true : undefined), 'the surge lines counted');
  await eventually(async () => ((await logsIn(drainStart, drainStart + 10 * MINUTE)) === drainLines.length ? true : undefined), 'the Drain lines counted');
}, 60_000);

// ---------------------------------------------------------------------------------------------

describe('GET /v1/anomalies, from the detector job', () => {
  const detector = useScheduledJob(() => h, 'detect-anomalies');
  /** Runs the detector as its schedule would at `at`, and waits for it to finish. */
  const detectAt = (at: number) => detector.run({ at }, 20_000);
  const list = async (filters = '') => {
    const reply = await owner.client.get(`/v1/anomalies?${windowOf(projects.anomalies, baselineStart, afterEnd)}${filters}`);
    expect(reply.status).toBe(200);
    return reply.body.data;
  };

  // The rule of the detector's header comment, for the error rate: median, MAD, floors 0.01 and 10 %, threshold 3.5.
  const rates = BASELINE_FAILURES.map((failures) => failures / PER_WINDOW);
  const baseline = median(rates); // 7 windows at 2 %, 5 at 0 %: 0.02
  const spreadOfRates = Math.max(1.4826 * median(rates.map((rate) => Math.abs(rate - baseline))), 0.01, 0.1 * baseline); // MAD 0: the floor, 0.01
  const observed = SPIKE_FAILURES / PER_WINDOW;
  /** What the detector says of the spike window, the anomaly's id and end aside. */
  const spikeAnomaly = {
    service: 'checkout',
    metric: 'error_rate',
    observed: 0.4,
    baseline: 0.02,
    band: { low: 0, high: round4(baseline + 3.5 * spreadOfRates) }, // 0.055
    score: round4((observed - baseline) / spreadOfRates), // 38
    peak_score: round4((observed - baseline) / spreadOfRates),
    started_at: iso(spikeStart),
    reason: expect.stringContaining(`checkout: error rate 40% in the 5 minutes to ${iso(spikeEnd)}, against a usual 2%`),
  };
  let openedId: string | undefined;

  test('the spike window opens an error-rate anomaly, and only that: same request counts, no throughput anomaly', async () => {
    await detectAt(spikeEnd);
    const data = await list();
    expect(data.map((anomaly: { metric: string }) => anomaly.metric)).toEqual(['error_rate']);
    const [anomaly] = data;
    openedId = anomaly.id;
    expect(anomaly).toEqual({ ...spikeAnomaly, project_id: projects.anomalies.id, id: expect.any(String), ended_at: null });
    expect(anomaly.band.low).toBeLessThanOrEqual(anomaly.baseline);
    expect(anomaly.baseline).toBeLessThanOrEqual(anomaly.band.high);
    expect(anomaly.band.high).toBeLessThan(anomaly.observed);
    expect(anomaly.score).toBeGreaterThanOrEqual(3.5);
    expect(await list('&status=open')).toEqual([anomaly]);
    expect(await list('&status=closed')).toEqual([]);
    expect(await list('&metric=throughput')).toEqual([]);
  });

  test('the normal window after closes the same anomaly at its end, and opens none', async () => {
    await detectAt(afterEnd);
    const data = await list();
    // one anomaly, still the one that started with the spike (the id listed after the first run, when
    // it could be listed): the last anomalous window's figures stay, only the end is set
    expect(data).toEqual([{ ...spikeAnomaly, project_id: projects.anomalies.id, id: openedId ?? expect.any(String), ended_at: iso(afterEnd) }]);
    expect(await list('&status=closed')).toEqual(data);
    expect(await list('&status=open')).toEqual([]);
    // a window ending before the anomaly started does not overlap it
    expect((await owner.client.get(`/v1/anomalies?${windowOf(projects.anomalies, baselineStart, spikeStart)}`)).body.data).toEqual([]);
  });

  test('the detector job raises alerts: the anomaly opened at the spike and resolved after it; a log surge for as long as it lasts', async () => {
    const anomalyAlerts = await owner.client.get(`/v1/alerts?kind=anomaly&project=${projects.anomalies.id}`);
    expect(anomalyAlerts.body.data).toEqual([
      expect.objectContaining({
        kind: 'anomaly',
        status: 'resolved',
        subject: { type: 'anomaly', id: openedId },
        title: expect.stringContaining('checkout: error rate 40%'),
        opened_at: iso(spikeEnd),
        resolved_at: iso(afterEnd),
      }),
    ]);
    // surge alerts judge the last 15 minutes against the 15 before: batch's first 30 surge lines against 5
    await detectAt(surgeStart + 15 * MINUTE);
    const open = (await owner.client.get('/v1/alerts?kind=log.surge&status=open')).body.data;
    expect(open.map((alert: { title: string }) => alert.title).sort()).toEqual(['Log surge in batch', 'Log surge: "Processed job <*> in <*> ms"']);
    expect(open.every((alert: { opened_at: string }) => alert.opened_at === iso(surgeStart + 15 * MINUTE))).toBe(true);
    // a minute on: the surges go on under the same alerts; payments' new pattern reaches its 5 lines
    await detectAt(surgeStart + 16 * MINUTE);
    const later = (await owner.client.get('/v1/alerts?kind=log.surge')).body.data;
    expect(later.map((alert: { title: string; opened_at: string }) => [alert.title, alert.opened_at]).sort()).toEqual([
      ['Log surge in batch', iso(surgeStart + 15 * MINUTE)],
      ['Log surge: "Processed job <*> in <*> ms"', iso(surgeStart + 15 * MINUTE)],
      ['Log surge: "Refund for order <*> issued to <*>"', iso(surgeStart + 16 * MINUTE)],
    ]);
    await detectAt(surgeEnd + HOUR);
    const after = (await owner.client.get('/v1/alerts?kind=log.surge')).body.data;
    expect(after.map((alert: { status: string; resolved_at: string }) => [alert.status, alert.resolved_at])).toEqual(Array(3).fill(['resolved', iso(surgeEnd + HOUR)]));
    expect((await stranger.client.get('/v1/alerts')).body.data).toEqual([]);
  });

  test('another organisation sees none; naming the project answers like a missing one; a bad metric is refused', async () => {
    const own = await stranger.client.get(`/v1/anomalies?from=${iso(baselineStart)}&to=${iso(afterEnd)}`);
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual([]);
    const named = await stranger.client.get(`/v1/anomalies?${windowOf(projects.anomalies, baselineStart, afterEnd)}`);
    expect({ status: named.status, code: named.body.code }).toEqual({ status: 404, code: 'not_found' });
    const bad = await owner.client.get('/v1/anomalies?metric=nope');
    expect({ status: bad.status, code: bad.body.code }).toEqual({ status: 400, code: 'validation_failed' });
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /v1/services/approaching and PATCH /v1/settings thresholds', () => {
  interface Point {
    t: string;
    value: number;
  }
  interface Row {
    kind: string;
    metric: string;
    service: string;
    current: number;
    threshold: number;
    slope_per_hour: number;
    eta: string;
    points: Point[];
  }

  const approaching = async (filters = '') => {
    const reply = await owner.client.get(`/v1/services/approaching?${windowOf(projects.approaching, approachStart, approachEnd)}&step=600${filters}`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ from: iso(approachStart), to: iso(approachEnd), step: 600 });
    return reply.body.data as Row[];
  };

  /** The least-squares line through points, x in hours since the window's start. */
  const lineThrough = (points: Point[]) => {
    const xs = points.map((point) => (Date.parse(point.t) - approachStart) / HOUR);
    const meanX = xs.reduce((sum, x) => sum + x, 0) / xs.length;
    const meanY = points.reduce((sum, point) => sum + point.value, 0) / points.length;
    const slope = xs.reduce((sum, x, i) => sum + (x - meanX) * (points[i]!.value - meanY), 0) / xs.reduce((sum, x) => sum + (x - meanX) ** 2, 0);
    return { slope, intercept: meanY - slope * meanX, reaches: (threshold: number) => approachStart + ((threshold - (meanY - slope * meanX)) / slope) * HOUR };
  };

  /**
   * The row's slope and eta are those of the line through its own points, the eta where that line
   * meets the threshold (the points answered are rounded to 4 decimals: a few ms of slack on the eta).
   */
  const expectOnItsLine = (row: Row) => {
    const line = lineThrough(row.points);
    expect(row.slope_per_hour).toBeCloseTo(line.slope, 3);
    expect(Math.abs(Date.parse(row.eta) - line.reaches(row.threshold))).toBeLessThanOrEqual(50);
    expect(line.intercept + line.slope * ((Date.parse(row.eta) - approachStart) / HOUR)).toBeCloseTo(row.threshold, 2);
  };

  // search's p95 per step as the rollups' histogram answers it (within 5 % of the planted latency)
  const searchPoints = LATENCIES.search.map((ms, step) => ({ t: iso(approachStart + step * STEP), value: percentile(bucketsOf(Array(PER_STEP).fill(ms)), 95)! }));
  const searchLine = lineThrough(searchPoints);

  test('with the default thresholds, only the climbing p95 is listed, with its slope and eta from its points', async () => {
    const settings = await owner.client.get('/v1/settings');
    expect(settings.body.thresholds).toEqual({ error_rate: 0.05, p95_ms: 1000, gauges: [] });
    const rows = await approaching();
    // catalog (flat) and images (falling) are not listed, nor any error rate (all 0), nor the gauge (not configured)
    expect(rows).toEqual([
      {
        kind: 'service',
        metric: 'p95_ms',
        service: 'search',
        current: round4(searchPoints.at(-1)!.value),
        threshold: 1000,
        slope_per_hour: expect.any(Number),
        eta: expect.any(String),
        points: searchPoints.map((point) => ({ t: point.t, value: round4(point.value) })),
      },
    ]);
    const [row] = rows;
    expect(Math.abs(row!.current - 800) / 800).toBeLessThanOrEqual(0.05);
    expect(row!.points).toHaveLength(6);
    expect(row!.slope_per_hour).toBeCloseTo(searchLine.slope, 5);
    expect(Math.abs(Date.parse(row!.eta) - searchLine.reaches(1000))).toBeLessThanOrEqual(1);
    expectOnItsLine(row!);
  });

  test('a higher p95 threshold set by the owner moves the eta later; a horizon short of it drops the row', async () => {
    const patched = await owner.client.patch('/v1/settings', { thresholds: { p95_ms: 5000 } });
    expect(patched.status).toBe(200);
    expect(patched.body.thresholds).toEqual({ error_rate: 0.05, p95_ms: 5000, gauges: [] });
    expect((await owner.client.get('/v1/settings')).body.thresholds).toEqual({ error_rate: 0.05, p95_ms: 5000, gauges: [] });

    const eta = searchLine.reaches(5000);
    const hoursAfterWindow = (eta - approachEnd) / HOUR; // about 6.9
    expect(Number.isInteger(hoursAfterWindow)).toBe(false);
    expect(await approaching(`&horizon_hours=${Math.floor(hoursAfterWindow)}`)).toEqual([]);
    const rows = await approaching(`&horizon_hours=${Math.ceil(hoursAfterWindow)}`);
    expect(rows.map((row) => [row.service, row.metric, row.threshold])).toEqual([['search', 'p95_ms', 5000]]);
    expect(Math.abs(Date.parse(rows[0]!.eta) - eta)).toBeLessThanOrEqual(1);
    expect(Date.parse(rows[0]!.eta)).toBeGreaterThan(searchLine.reaches(1000));
    expectOnItsLine(rows[0]!);
    // the default horizon (a week) keeps it too
    expect((await approaching()).map((row) => row.service)).toEqual(['search']);
  });

  test('a gauge named in the settings is watched: the climbing series is listed, the falling and flat ones are not', async () => {
    const patched = await owner.client.patch('/v1/settings', { thresholds: { gauges: [{ name: GAUGE, threshold: 0.9 }] } });
    expect(patched.status).toBe(200);
    expect(patched.body.thresholds).toEqual({ error_rate: 0.05, p95_ms: 5000, gauges: [{ name: GAUGE, threshold: 0.9 }] });
    const gauges = (await approaching()).filter((row) => row.kind === 'gauge');
    // 0.5 → 0.8 in three steps of 10 minutes: 0.6 an hour, reaching 0.9 40 minutes into the window
    expect(gauges).toEqual([
      {
        kind: 'gauge',
        metric: GAUGE,
        service: 'db-host',
        current: 0.8,
        threshold: 0.9,
        slope_per_hour: 0.6,
        eta: expect.any(String),
        points: GAUGES['db-host'].map((value, step) => ({ t: iso(approachStart + step * STEP), value })),
      },
    ]);
    expect(Math.abs(Date.parse(gauges[0]!.eta) - (approachStart + 40 * MINUTE))).toBeLessThanOrEqual(1);
    expectOnItsLine(gauges[0]!);
  });

  test('bad thresholds are refused and change nothing; a member who is not an admin cannot change them', async () => {
    const before = (await owner.client.get('/v1/settings')).body;
    for (const body of [{ thresholds: { error_rate: 2 } }, { thresholds: { p95: 800 } }, { thresholds: { gauges: [{ name: '', threshold: 1 }] } }]) {
      const reply = await owner.client.patch('/v1/settings', body);
      expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    const member = await addMember(h, owner, 'member');
    const refused = await member.client.patch('/v1/settings', { thresholds: { p95_ms: 100 } });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: 'forbidden' });
    // the member may still read them, unchanged
    const after = await member.client.get('/v1/settings');
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------

describe('GET /v1/logs/surges and Drain patterns', () => {
  test('a service’s surge and its pattern’s, and a pattern new in the window; the steady service is not listed', async () => {
    const reply = await owner.client.get(`/v1/logs/surges?${windowOf(projects.logs, surgeStart, surgeEnd)}`);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ from: iso(surgeStart), to: iso(surgeEnd) });
    const [fresh, ...surges] = reply.body.data;
    // new patterns first; payments' 8 lines are too few for a service surge (20)
    expect(fresh).toEqual({
      kind: 'pattern',
      service: 'payments',
      services: ['payments'],
      pattern_id: expect.any(String),
      pattern: 'Refund for order <*> issued to <*>',
      new_pattern: true,
      observed: 8,
      baseline: 0,
      ratio: 8,
      reason: `new pattern: first seen ${iso(refunds[0]!.at)}, inside the window, with 8 logs`,
    });
    const surge = { services: ['batch'], new_pattern: false, observed: 60, baseline: 10, ratio: 6, reason: '60 logs against 10 in the previous window (×6, rule: ×3 or more from 20 logs)' };
    expect(surges).toHaveLength(2);
    expect(surges).toEqual(
      expect.arrayContaining([
        { kind: 'service', service: 'batch', pattern_id: null, pattern: null, ...surge },
        { kind: 'pattern', service: 'batch', pattern_id: expect.any(String), pattern: 'Processed job <*> in <*> ms', ...surge },
      ]),
    );
    // the pattern ids are the lines' own
    const idOf = async (service: string) => {
      const lines = (await owner.client.get(`/v1/logs?${windowOf(projects.logs, surgeStart, surgeEnd)}&service=${service}&limit=100`)).body.data;
      return [...new Set(lines.map((line: { pattern_id: string }) => line.pattern_id))];
    };
    expect(await idOf('payments')).toEqual([fresh.pattern_id]);
    expect(await idOf('batch')).toEqual([surges.find((row: { kind: string }) => row.kind === 'pattern').pattern_id]);
    // the previous window, judged against the one before it (empty), holds no surge: batch's 10 and the heartbeat's 30 lines are not new
    const previous = await owner.client.get(`/v1/logs/surges?${windowOf(projects.logs, previousStart, surgeStart)}`);
    expect(previous.body.data.map((row: { kind: string; service: string; new_pattern: boolean }) => [row.kind, row.service, row.new_pattern]).sort()).toEqual([
      ['pattern', 'batch', true],
      ['pattern', 'heartbeat', true],
      ['service', 'heartbeat', false],
    ]);
  });

  test('Drain groups lines that differ in their values; a Sentry message template groups its lines whatever their words', async () => {
    const reply = await owner.client.get(`/v1/logs/patterns?${windowOf(projects.logs, drainStart, drainStart + 10 * MINUTE)}`);
    expect(reply.status).toBe(200);
    const byTemplate = Object.fromEntries(reply.body.data.map((pattern: { template: string; count: number; services: string[] }) => [pattern.template, [pattern.count, pattern.services]]));
    expect(byTemplate).toEqual({
      // db-7 and db-12 are masked; cache-primary differs in one word of six, so the template widens over it
      'Connected to <*> in <*> ms': [3, ['db-client']],
      'Disconnected from db-<*> after <*> retries': [1, ['db-client']],
      // by the SDK's template, though the two bodies have different words and lengths
      'Order {id} shipped': [2, ['shop']],
      // the same words without a template: Drain's own pattern
      'Order <*> shipped': [1, ['shop']],
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe('tenancy of the approaching and surge views', () => {
  test('another organisation sees none of it, and naming a project answers like a missing one', async () => {
    const views = [
      ['/v1/services/approaching', projects.approaching, approachStart, approachEnd],
      ['/v1/logs/surges', projects.logs, surgeStart, surgeEnd],
    ] as const;
    for (const [path, project, from, to] of views) {
      const own = await stranger.client.get(`${path}?from=${iso(from)}&to=${iso(to)}`);
      expect({ path, status: own.status, data: own.body.data }).toEqual({ path, status: 200, data: [] });
      const named = await stranger.client.get(`${path}?${windowOf(project, from, to)}`);
      expect({ path, status: named.status, code: named.body.code }).toEqual({ path, status: 404, code: 'not_found' });
    }
  });
});
