/**
 * Deployments, their health and the release list, over telemetry sent through the ingest front door
 * (OTLP/JSON spans, Sentry error envelopes, session aggregates). Every planted time is minute `m` of
 * the deployment time T, a whole minute three hours back (`at(m)`); each scenario has a project:
 *
 * - errors: production requests 4 a minute at 100 ms in minutes −50…−1 (release shop@1.9.0) and 0…49
 *   (shop@2.0.0); 4 RangeErrors before (−40, −35, −20, −10; shop@1.9.0) and 30 TypeErrors after
 *   (minutes 0…29; shop@2.0.0). Noise that must not count: staging requests and 20 staging errors
 *   (shop@2.0.0, from minute −45), and the `other` project's production requests and 40 errors.
 * - steady: the same requests, 6 errors on each side: healthy.
 * - quiet: 20 requests on each side: too little to judge.
 * - slow: 200 requests each side; before 10 of them at 150 ms (the rest 100 ms), after 80 at 400 ms.
 * - crashes: no spans; session aggregates, 100 sessions each side, 1 crashed before and 10 after.
 *
 * Everything is planted and counted into the release rollups before any deployment is recorded, so
 * the evaluator job (a real-time tick every minute) can only ever judge complete data.
 */
import { Types } from 'mongoose';
import { evaluateDeployments } from '../../src/shared/features/deployments/service.js';
import { ingestErrorEvents } from '../../src/shared/features/issues/store.js';
import { ReleaseRollup } from '../../src/shared/features/releases/model.js';
import { bucketsOf, percentile } from '../../src/shared/telemetry/histogram.js';
import { addMember, createProject, signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';
import { normalTail } from '../support/statistics.js';

let h: Harness;
let owner: Account;
let stranger: Account;
const projects = {} as Record<'errors' | 'other' | 'steady' | 'quiet' | 'slow' | 'crashes', ProjectWithDsn>;
useHarness((started) => (h = started), {}, { workers: true });

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** The deployment time of every scenario: a whole minute three hours back. */
const T = Math.floor(Date.now() / MINUTE) * MINUTE - 3 * HOUR;
const at = (minute: number, second = 0) => T + minute * MINUTE + second * 1000;
const iso = (ms: number) => new Date(ms).toISOString();
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// ---------------------------------------------------------------------------------------------------------
// Planting, and what was planted (the tests' expectations are computed from it)

interface Planted {
  project: string;
  environment: string;
  release: string;
  atMs: number;
  kind: 'request' | 'error' | 'session' | 'crash';
}
const planted: Planted[] = [];

/** `perMinute` requests in each of `minutes`, each an entry span of a trace of its own. */
async function sendRequests(project: ProjectWithDsn, environment: string, release: string, minutes: number[], perMinute: number, durationOf: (index: number) => number = () => 100) {
  const spans: OtlpSpan[] = [];
  for (const minute of minutes) {
    for (let i = 0; i < perMinute; i++) {
      const startMs = at(minute, i * 5);
      spans.push({ traceId: hex(16), id: hex(8), name: 'GET /cart', kind: 'server', startMs, durationMs: durationOf(spans.length), attributes: { 'deployment.environment': environment, 'sentry.release': release, 'http.request.method': 'GET', 'http.route': '/cart', 'http.response.status_code': 200 } });
      planted.push({ project: project.id, environment, release, atMs: startMs, kind: 'request' });
    }
  }
  for (let i = 0; i < spans.length; i += 200) {
    const reply = await h.ingest.request('POST', '/v1/traces', JSON.stringify(otlpTraces({ shop: spans.slice(i, i + 200) })), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
    expect(reply.status).toBe(200);
  }
}

/** One error event in each of `minutes` (at second 30), all of one exception type (one issue). */
async function sendErrors(project: ProjectWithDsn, environment: string, release: string, minutes: number[], type: string, value: string) {
  const events = minutes.map((minute) => {
    planted.push({ project: project.id, environment, release, atMs: at(minute, 30), kind: 'error' });
    return errorEvent({ timestamp: at(minute, 30) / 1000, environment, release }, { type, value });
  });
  for (let i = 0; i < events.length; i += 10) {
    await Promise.all(
      events.slice(i, i + 10).map(async (event) => {
        const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
        expect(reply.status).toBe(200);
      }),
    );
  }
}

/** Request-mode session aggregates: `perMinute` sessions started in each minute, `crashedIn` minutes with one crash. */
async function sendSessions(project: ProjectWithDsn, environment: string, release: string, minutes: number[], perMinute: number, crashedIn: number[]) {
  const aggregates = minutes.map((minute) => {
    const crashed = crashedIn.includes(minute) ? 1 : 0;
    for (let i = 0; i < perMinute; i++) planted.push({ project: project.id, environment, release, atMs: at(minute), kind: i < crashed ? 'crash' : 'session' });
    return { started: iso(at(minute)), exited: perMinute - crashed, crashed };
  });
  const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ sent_at: new Date().toISOString() }, [{ type: 'sessions', payload: { attrs: { release, environment }, aggregates } }]));
  expect(reply.status).toBe(200);
}

/** What the release rollups must add up to once the pipeline has counted everything planted. */
function expectedTotals() {
  const totals = new Map<string, { requests: number; errors: number; sessions: number; crashed: number }>();
  for (const p of planted) {
    const key = `${p.project}|${p.environment}`;
    const total = totals.get(key) ?? { requests: 0, errors: 0, sessions: 0, crashed: 0 };
    if (p.kind === 'request') total.requests += 1;
    if (p.kind === 'error') total.errors += 1;
    if (p.kind === 'session' || p.kind === 'crash') total.sessions += 1;
    if (p.kind === 'crash') total.crashed += 1;
    totals.set(key, total);
  }
  return Object.fromEntries([...totals].sort());
}

async function rollupTotals() {
  const ids = Object.values(projects).map((p) => new Types.ObjectId(p.id));
  const docs = await ReleaseRollup.collection.find({ projectId: { $in: ids } }).toArray();
  const totals = new Map<string, { requests: number; errors: number; sessions: number; crashed: number }>();
  for (const doc of docs) {
    const key = `${doc.projectId.toHexString()}|${doc.environment}`;
    const total = totals.get(key) ?? { requests: 0, errors: 0, sessions: 0, crashed: 0 };
    for (const field of ['requests', 'sessions', 'crashed'] as const) total[field] += doc[field] ?? 0;
    total.errors += doc.errorEvents ?? 0;
    totals.set(key, total);
  }
  return Object.fromEntries([...totals].sort());
}

// ---------------------------------------------------------------------------------------------------------
// The arithmetic, done here independently of src/shared/features/deployments/stats.ts

/** The pooled two-proportion z of `after` against `before`, and its one-sided p. */
function zTest(before: [number, number], after: [number, number]) {
  const pooled = (before[0] + after[0]) / (before[1] + after[1]);
  const z = (after[0] / after[1] - before[0] / before[1]) / Math.sqrt(pooled * (1 - pooled) * (1 / before[1] + 1 / after[1]));
  return { z, p: normalTail(z) };
}

/** The API's statistic is z to 4 decimals and its p-value 4 significant digits. */
function expectTest(metric: { test: string | null; statistic: number | null; p_value: number | null }, expected: { z: number; p: number }) {
  expect(metric.test).toBe('two_proportion_z');
  expect(Math.abs(metric.statistic! - expected.z)).toBeLessThanOrEqual(5e-5 + 1e-12);
  expect(Math.abs(metric.p_value! - expected.p) / expected.p).toBeLessThan(1e-3);
}

/** The p95 the API answers: the representative of the histogram bucket, to 2 decimals. */
const p95 = (durations: number[]) => Number(percentile(bucketsOf(durations), 95)!.toFixed(2));

// ---------------------------------------------------------------------------------------------------------

async function deploy(account: Account, body: Record<string, unknown>) {
  const reply = await account.client.post('/v1/deployments', body);
  expect(reply.status).toBe(201);
  return reply.body as { id: string; version: string; environment: string; deployed_at: string; verdict: string | null };
}

const health = async (id: string, query = '') => {
  const reply = await owner.client.get(`/v1/deployments/${id}/health${query}`);
  expect(reply.status).toBe(200);
  return reply.body;
};

const degradedAlertsAbout = async (id: string) =>
  (await owner.client.get('/v1/alerts?kind=deployment.degraded&limit=200')).body.data.filter((alert: { subject: { id: string } }) => alert.subject.id === id);

const deployments = {} as Record<'errors' | 'staging' | 'steady' | 'quiet' | 'slow' | 'crashes', { id: string }>;

beforeAll(async () => {
  owner = await signUp(h);
  stranger = await signUp(h, 'stranger');
  for (const name of ['errors', 'other', 'steady', 'quiet', 'slow', 'crashes'] as const) projects[name] = await projectWithDsn(owner, h.ingest.baseUrl);
  const { errors, other, steady, quiet, slow, crashes } = projects;

  await sendRequests(errors, 'production', 'shop@1.9.0', range(-50, -1), 4);
  await sendRequests(errors, 'production', 'shop@2.0.0', range(0, 49), 4);
  await sendErrors(errors, 'production', 'shop@1.9.0', [-40, -35, -20, -10], 'RangeError', 'cart index out of range');
  await sendErrors(errors, 'production', 'shop@2.0.0', range(0, 29), 'TypeError', 'price is undefined since 2.0');
  await sendRequests(errors, 'staging', 'shop@2.0.0', range(-25, 24), 2);
  await sendErrors(errors, 'staging', 'shop@2.0.0', [...range(-45, -36), ...range(5, 14)], 'StagingError', 'fixture missing');
  await sendRequests(other, 'production', 'shop@2.0.0', range(-25, 24), 2);
  await sendErrors(other, 'production', 'shop@2.0.0', range(0, 39), 'OtherError', 'another project');

  await sendRequests(steady, 'production', 'web@5.0.0', range(-50, 49), 4);
  await sendErrors(steady, 'production', 'web@5.0.0', [-45, -38, -30, -22, -15, -5, 2, 9, 17, 25, 33, 41], 'TimeoutError', 'upstream timed out');

  await sendRequests(quiet, 'production', 'tiny@1.0.0', range(-20, 19), 1);
  await sendErrors(quiet, 'production', 'tiny@1.0.0', [3, 4, 5], 'TypeError', 'quiet failure');

  await sendRequests(slow, 'production', 'api@6.9.0', range(-50, -1), 4, (i) => (i % 20 === 0 ? 150 : 100));
  await sendRequests(slow, 'production', 'api@7.0.0', range(0, 49), 4, (i) => (i % 5 < 2 ? 400 : 100));

  await sendSessions(crashes, 'production', 'app@2.9.0', range(-50, -1), 2, [-20]);
  await sendSessions(crashes, 'production', 'app@3.0.0', range(0, 49), 2, range(1, 10));

  const expected = expectedTotals();
  await eventually(async () => (JSON.stringify(await rollupTotals()) === JSON.stringify(expected) ? true : undefined), 'every planted record counted into the release rollups', 60_000);

  deployments.staging = await deploy(owner, { project_id: errors.id, version: 'shop@2.0.0', environment: 'staging', deployed_at: iso(T - 2 * HOUR) });
  deployments.errors = await deploy(owner, { project_id: errors.id, version: 'shop@2.0.0', deployed_at: iso(T), commit_sha: 'ABCDEF1234567' });
  deployments.steady = await deploy(owner, { project_id: steady.id, version: 'web@5.0.0', deployed_at: iso(T) });
  deployments.quiet = await deploy(owner, { project_id: quiet.id, version: 'tiny@1.0.0', deployed_at: iso(T) });
  deployments.slow = await deploy(owner, { project_id: slow.id, version: 'api@7.0.0', deployed_at: iso(T) });
  deployments.crashes = await deploy(owner, { project_id: crashes.id, version: 'app@3.0.0', deployed_at: iso(T) });
}, 120_000);

describe('deployment health', () => {
  test('a rise in the error rate: counts, rates, z-test and p-value as computed by hand; degraded with the numbers', async () => {
    const answer = await health(deployments.errors.id);
    expect(answer).toMatchObject({
      deployment_id: deployments.errors.id,
      project_id: projects.errors.id,
      version: 'shop@2.0.0',
      environment: 'production',
      deployed_at: iso(T),
      window_minutes: 60,
      before: { from: iso(T - HOUR), to: iso(T) },
      after: { from: iso(T), to: iso(T + HOUR) },
    });
    // staging and the other project's traffic and errors are not counted
    expect(answer.error_rate).toMatchObject({
      denominator: 'requests',
      before: { errors: 4, requests: 200, rate: 0.02 },
      after: { errors: 30, requests: 200, rate: 0.15 },
      difference: 0.13,
      minimum_sample: 30,
      verdict: 'degraded',
    });
    // pooled 34/400; z = 0.13 / √(0.085 · 0.915 · 2/200) ≈ 4.66
    const expected = zTest([4, 200], [30, 200]);
    expect(expected.z).toBeCloseTo(4.6615, 3);
    expectTest(answer.error_rate, expected);
    expect(answer.error_rate.rule).toContain('p < 0.05');
    expect(answer.error_rate.rule).toContain('0.01');

    // every request took 100 ms: nobody is slower than the before p95 on either side
    expect(answer.p95_latency).toMatchObject({ before: { requests: 200, p95_ms: p95([100]), slower: 0 }, after: { requests: 200, p95_ms: p95([100]), slower: 0 }, difference: 0, verdict: 'healthy', p_value: 1 });
    expect(answer.crash_free_sessions).toBeNull();

    expect(answer.verdict).toBe('degraded');
    expect(answer.reasons).toHaveLength(1);
    const [reason] = answer.reasons;
    for (const figure of ['2% (4/200 requests)', '15% (30/200)', `z = ${answer.error_rate.statistic}`, '< 0.05']) expect(reason).toContain(figure);
  });

  test('new issues are those first seen after the deployment in its version and project', async () => {
    const answer = await health(deployments.errors.id);
    // not the RangeError (shop@1.9.0), not the StagingError (shop@2.0.0 but first seen at −45), not the other project's
    expect(answer.new_issues).toEqual([{ id: expect.any(String), title: 'TypeError: price is undefined since 2.0', first_seen: iso(at(0, 30)), count: 30 }]);
    const issue = await owner.client.get(`/v1/issues/${answer.new_issues[0].id}`);
    expect(issue.body).toMatchObject({ project_id: projects.errors.id, count: 30 });
  });

  test('a degraded verdict raises one deployment.degraded alert, however often it is read', async () => {
    await health(deployments.errors.id);
    await health(deployments.errors.id);
    const alerts = await degradedAlertsAbout(deployments.errors.id);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ kind: 'deployment.degraded', status: 'open', project_id: projects.errors.id, subject: { type: 'deployment', id: deployments.errors.id } });
    expect(alerts[0].title).toContain('shop@2.0.0');
    expect(alerts[0].details.reasons).toContain('4/200 requests');
  });

  test('`window` sets the length of both windows', async () => {
    const answer = await health(deployments.errors.id, '?window=30');
    expect(answer).toMatchObject({ window_minutes: 30, before: { from: iso(T - 30 * MINUTE), to: iso(T) }, after: { from: iso(T), to: iso(T + 30 * MINUTE) } });
    // minutes −30…−1 hold 120 requests and the errors of −20 and −10; minutes 0…29 hold 120 and all 30
    expect(answer.error_rate).toMatchObject({ before: { errors: 2, requests: 120 }, after: { errors: 30, requests: 120 }, verdict: 'degraded' });
    expectTest(answer.error_rate, zTest([2, 120], [30, 120]));
    for (const window of ['4', '1441', 'abc']) {
      const refused = await owner.client.get(`/v1/deployments/${deployments.errors.id}/health?window=${window}`);
      expect({ window, status: refused.status, code: refused.body.code }).toEqual({ window, status: 400, code: 'validation_failed' });
    }
  });

  test('the same error rate on both sides is healthy: z = 0, p = 0.5', async () => {
    const answer = await health(deployments.steady.id);
    expect(answer.error_rate).toMatchObject({ before: { errors: 6, requests: 200, rate: 0.03 }, after: { errors: 6, requests: 200, rate: 0.03 }, difference: 0, test: 'two_proportion_z', statistic: 0, p_value: 0.5, verdict: 'healthy' });
    expect(answer.verdict).toBe('healthy');
    expect(answer.reasons).toEqual(['no judged metric rose significantly']);
    expect(await degradedAlertsAbout(deployments.steady.id)).toEqual([]);
  });

  test('fewer than 30 requests a window: insufficient data, no test', async () => {
    const answer = await health(deployments.quiet.id);
    expect(answer.error_rate).toMatchObject({ before: { errors: 0, requests: 20 }, after: { errors: 3, requests: 20 }, test: null, statistic: null, p_value: null, verdict: 'insufficient_data' });
    expect(answer.p95_latency).toMatchObject({ verdict: 'insufficient_data', test: null });
    expect(answer.verdict).toBe('insufficient_data');
    expect(answer.reasons[0]).toContain('too little traffic');
  });

  test('a slower p95: the share of requests slower than the before p95, tested; degraded with before/after p95 and threshold', async () => {
    const before = Array.from({ length: 200 }, (_, i) => (i % 20 === 0 ? 150 : 100));
    const after = Array.from({ length: 200 }, (_, i) => (i % 5 < 2 ? 400 : 100));
    const answer = await health(deployments.slow.id);
    const threshold = p95(before);
    expect(threshold).toBe(p95([100]));
    expect(answer.p95_latency).toMatchObject({
      before: { requests: 200, p95_ms: threshold, slower: 10, rate: 0.05 },
      after: { requests: 200, p95_ms: p95(after), slower: 80, rate: 0.4 },
      threshold_ms: threshold,
      difference: Number((p95(after) - threshold).toFixed(2)),
      verdict: 'degraded',
    });
    expect(p95(after)).toBeGreaterThan(380);
    expectTest(answer.p95_latency, zTest([10, 200], [80, 200]));
    expect(answer.error_rate).toMatchObject({ before: { errors: 0, requests: 200 }, after: { errors: 0, requests: 200 }, verdict: 'healthy' });
    expect(answer.verdict).toBe('degraded');
    expect(answer.reasons).toHaveLength(1);
    for (const figure of [`${threshold} ms`, `${p95(after)} ms`, '10/200', '80/200']) expect(answer.reasons[0]).toContain(figure);
  });

  test('crash-free sessions from session aggregates: a fall is degraded; without spans the error rate is per session', async () => {
    const answer = await health(deployments.crashes.id);
    expect(answer.crash_free_sessions).toMatchObject({
      before: { sessions: 100, crashed: 1, crash_free_rate: 0.99 },
      after: { sessions: 100, crashed: 10, crash_free_rate: 0.9 },
      difference: -0.09,
      minimum_sample: 30,
      verdict: 'degraded',
    });
    expectTest(answer.crash_free_sessions, zTest([1, 100], [10, 100]));
    expect(answer.error_rate).toMatchObject({ denominator: 'sessions', before: { errors: 0, sessions: 100 }, after: { errors: 0, sessions: 100 }, verdict: 'healthy' });
    expect(answer.p95_latency).toMatchObject({ before: { requests: 0, p95_ms: null }, verdict: 'insufficient_data' });
    expect(answer.verdict).toBe('degraded');
    expect(answer.reasons.join(' ')).toContain('1 of 100 crashed');
    expect(answer.reasons.join(' ')).toContain('10 of 100');
  });

  test('a deployment in the future, or recorded just now, has no windows yet: insufficient data', async () => {
    const future = await deploy(owner, { project_id: projects.steady.id, version: 'web@5.1.0', deployed_at: iso(Date.now() + HOUR) });
    const now = await deploy(owner, { project_id: projects.steady.id, version: 'web@5.2.0' });
    for (const id of [future.id, now.id]) {
      const answer = await health(id);
      expect(answer.verdict).toBe('insufficient_data');
      expect(answer.window_minutes).toBeLessThan(0.1);
      expect(answer.error_rate).toMatchObject({ before: { requests: 0 }, after: { requests: 0 } });
    }
  });

  test('the evaluator judges deployments whose windows have passed, keeps the verdict and raises no second alert', async () => {
    const judgedAt = new Date(T + 61 * MINUTE);
    await evaluateDeployments(judgedAt);
    const verdictOf = async (id: string) => (await owner.client.get(`/v1/deployments/${id}`)).body.verdict;
    expect(await verdictOf(deployments.errors.id)).toBe('degraded');
    expect(await verdictOf(deployments.steady.id)).toBe('healthy');
    expect(await verdictOf(deployments.quiet.id)).toBe('insufficient_data');
    expect(await verdictOf(deployments.slow.id)).toBe('degraded');
    expect(await verdictOf(deployments.crashes.id)).toBe('degraded');
    expect(await degradedAlertsAbout(deployments.errors.id)).toHaveLength(1);
    // once judged, never again
    await evaluateDeployments(new Date(T + 90 * MINUTE));
    expect(await verdictOf(deployments.errors.id)).toBe('degraded');
    expect(await degradedAlertsAbout(deployments.errors.id)).toHaveLength(1);
    for (const id of [deployments.slow.id, deployments.crashes.id]) expect(await degradedAlertsAbout(id)).toHaveLength(1);
  });

  test('the evaluator waits for the 60-minute windows to pass, and leaves a deployment older than a day unjudged', async () => {
    const now = Date.now();
    const recent = await deploy(owner, { project_id: projects.quiet.id, version: 'tiny@1.1.0', deployed_at: iso(now - 10 * MINUTE) });
    const old = await deploy(owner, { project_id: projects.quiet.id, version: 'tiny@0.9.0', deployed_at: iso(now - 48 * HOUR) });
    const verdictOf = async (id: string) => (await owner.client.get(`/v1/deployments/${id}`)).body.verdict;
    await evaluateDeployments(new Date(now));
    expect(await verdictOf(recent.id)).toBeNull();
    expect(await verdictOf(old.id)).toBeNull();
    await evaluateDeployments(new Date(now + 51 * MINUTE));
    // no traffic around it: judged, and the judgement is that there was too little to judge
    expect(await verdictOf(recent.id)).toBe('insufficient_data');
    expect(await verdictOf(old.id)).toBeNull();
  });

  test('another organisation cannot read the health; a malformed id is 404 too', async () => {
    expect((await stranger.client.get(`/v1/deployments/${deployments.errors.id}/health`)).status).toBe(404);
    expect((await owner.client.get('/v1/deployments/not-an-id/health')).status).toBe(404);
  });
});

describe('deployments', () => {
  test('recording one answers 201 with its fields; environment defaults to production and deployed_at to now', async () => {
    const project = await createProject(owner);
    const before = Date.now();
    const reply = await owner.client.post('/v1/deployments', { project_id: project.id, version: 'api@1.0.0', commit_sha: 'ABCDEF0123456789', repository: 'acme/api', url: 'https://ci.example.test/runs/42' });
    const after = Date.now();
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(String),
      project_id: project.id,
      version: 'api@1.0.0',
      environment: 'production',
      commit_sha: 'abcdef0123456789',
      repository: 'acme/api',
      url: 'https://ci.example.test/runs/42',
      commit_url: null,
      deployed_at: expect.any(String),
      created_at: reply.body.deployed_at,
      verdict: null,
    });
    expect(Date.parse(reply.body.deployed_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(reply.body.deployed_at)).toBeLessThanOrEqual(after);
    expect((await owner.client.get(`/v1/deployments/${reply.body.id}`)).body).toEqual(reply.body);
    const withOffset = await owner.client.post('/v1/deployments', { project_id: project.id, version: 'api@1.0.1', environment: 'staging', deployed_at: '2026-03-01T12:00:00+02:00' });
    expect(withOffset.body).toMatchObject({ environment: 'staging', deployed_at: '2026-03-01T10:00:00.000Z' });
    const audit = await owner.client.get('/v1/audit-log');
    expect(audit.body.data.find((entry: { target: { id: string } }) => entry.target.id === reply.body.id)).toMatchObject({ action: 'deployment.create', target: { type: 'deployment' } });
  });

  test('the list is newest first, filtered by project, environment, version and deployment time, and paged', async () => {
    const project = await createProject(owner);
    const k1 = await deploy(owner, { project_id: project.id, version: 'api@1.0.0', deployed_at: iso(T - 2 * HOUR) });
    const k2 = await deploy(owner, { project_id: project.id, version: 'api@1.1.0', environment: 'staging', deployed_at: iso(T - HOUR) });
    const k3 = await deploy(owner, { project_id: project.id, version: 'api@1.1.0', deployed_at: iso(T - 30 * MINUTE) });
    const ids = async (query: string) => {
      const reply = await owner.client.get(`/v1/deployments?project=${project.id}${query}`);
      expect(reply.status).toBe(200);
      return reply.body.data.map((d: { id: string }) => d.id);
    };
    expect(await ids('')).toEqual([k3.id, k2.id, k1.id]);
    expect(await ids('&environment=staging')).toEqual([k2.id]);
    expect(await ids('&version=api@1.1.0')).toEqual([k3.id, k2.id]);
    expect(await ids(`&from=${iso(T - 90 * MINUTE)}&to=${iso(T - 45 * MINUTE)}`)).toEqual([k2.id]);
    expect(await ids(`&from=${iso(T - HOUR)}`)).toEqual([k3.id, k2.id]);
    const first = await owner.client.get(`/v1/deployments?project=${project.id}&limit=2`);
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual([k3.id, k2.id]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await owner.client.get(`/v1/deployments?project=${project.id}&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: k1.id, version: 'api@1.0.0' })], next_cursor: null });
    const backwards = await owner.client.get(`/v1/deployments?project=${project.id}&from=${iso(T)}&to=${iso(T - HOUR)}`);
    expect({ status: backwards.status, code: backwards.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    // the organisation-wide list holds other projects' deployments too, never another organisation's
    const all = await owner.client.get('/v1/deployments?limit=200');
    expect(all.body.data.map((d: { id: string }) => d.id)).toEqual(expect.arrayContaining([k1.id, deployments.errors.id]));
    expect((await stranger.client.get('/v1/deployments')).body.data).toEqual([]);
  });

  test('a bad commit hash, an unknown field, a bad time or a missing version is refused with validation_failed', async () => {
    const project = await createProject(owner);
    const bodies = [
      { project_id: project.id, version: 'v1', commit_sha: 'not-a-sha' },
      { project_id: project.id, version: 'v1', commit_sha: 'abc12' },
      { project_id: project.id, version: 'v1', branch: 'main' },
      { project_id: project.id, version: 'v1', deployed_at: 'yesterday' },
      { project_id: project.id, version: 'v1', deployed_at: '2026-01-01T10:00:00' },
      { project_id: project.id, version: '   ' },
      { project_id: project.id },
      { project_id: project.id, version: 'v1', url: 'not a url' },
    ];
    for (const body of bodies) {
      const reply = await owner.client.post('/v1/deployments', body);
      expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect((await owner.client.get(`/v1/deployments?project=${project.id}`)).body.data).toEqual([]);
  });

  test("another organisation's project or deployment is 404; a DSN is 403; a member may record one", async () => {
    const project = await createProject(owner);
    const mine = await deploy(owner, { project_id: project.id, version: 'v1' });
    expect((await stranger.client.post('/v1/deployments', { project_id: project.id, version: 'v2' })).status).toBe(404);
    expect((await stranger.client.get(`/v1/deployments/${mine.id}`)).status).toBe(404);
    expect((await owner.client.post('/v1/deployments', { project_id: new Types.ObjectId().toHexString(), version: 'v2' })).status).toBe(404);
    const dsn = h.api.with({ authorization: `DSN ${projects.errors.publicKey}` });
    for (const reply of [await dsn.post('/v1/deployments', { project_id: project.id, version: 'v3' }), await dsn.get('/v1/deployments'), await dsn.get('/v1/releases')]) {
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 403, code: 'forbidden' });
    }
    const member = await addMember(h, owner, 'member');
    expect((await member.client.post('/v1/deployments', { project_id: project.id, version: 'v4' })).status).toBe(201);
  });
});

describe('releases', () => {
  type Release = Record<string, unknown> & { version: string };
  const releases = async (query: string) => {
    const reply = await owner.client.get(`/v1/releases?${query}`);
    expect(reply.status).toBe(200);
    return reply.body as { data: Release[]; next_cursor: string | null };
  };
  const span = (project: ProjectWithDsn, release: string, environment?: string) => {
    const times = planted.filter((p) => p.project === project.id && p.release === release && (!environment || p.environment === environment)).map((p) => p.atMs);
    return { first_seen: iso(Math.min(...times)), last_seen: iso(Math.max(...times)) };
  };

  test('versions come from telemetry and from deployments, newest activity first, with their counts and latest verdict', async () => {
    // after the evaluator test: the production deployment of shop@2.0.0 is judged degraded
    const { data, next_cursor } = await releases(`project=${projects.errors.id}`);
    expect(next_cursor).toBeNull();
    expect(data).toEqual([
      {
        version: 'shop@2.0.0',
        projects: [projects.errors.id],
        environments: ['production', 'staging'],
        ...span(projects.errors, 'shop@2.0.0'),
        first_deployed_at: iso(T - 2 * HOUR),
        last_deployed_at: iso(T),
        deployment_count: 2,
        // the TypeError (after T) and the StagingError (before T): both first appeared in this release
        new_issues: 2,
        events: 50,
        crash_free_rate: null,
        latest_verdict: 'degraded',
        latest_commit_url: null,
        finalized_at: null,
        commits: [],
      },
      {
        // from telemetry alone
        version: 'shop@1.9.0',
        projects: [projects.errors.id],
        environments: ['production'],
        ...span(projects.errors, 'shop@1.9.0'),
        first_deployed_at: null,
        last_deployed_at: null,
        deployment_count: 0,
        new_issues: 1,
        events: 4,
        crash_free_rate: null,
        latest_verdict: null,
        latest_commit_url: null,
        finalized_at: null,
        commits: [],
      },
    ]);
  });

  test('an environment filter narrows the counts, deployments and environments', async () => {
    const { data } = await releases(`project=${projects.errors.id}&environment=production`);
    expect(data[0]).toMatchObject({ version: 'shop@2.0.0', environments: ['production'], ...span(projects.errors, 'shop@2.0.0', 'production'), events: 30, deployment_count: 1, first_deployed_at: iso(T) });
  });

  test('without a project filter a release spans projects; paging walks the list', async () => {
    const both = `project=${projects.errors.id}&project=${projects.other.id}`;
    const { data } = await releases(both);
    expect(data.map((r) => r.version)).toEqual(['shop@2.0.0', 'shop@1.9.0']);
    expect(data[0]).toMatchObject({ projects: [projects.errors.id, projects.other.id].sort(), events: 90, new_issues: 3 });
    const first = await releases(`${both}&limit=1`);
    expect(first.data.map((r) => r.version)).toEqual(['shop@2.0.0']);
    const second = await releases(`${both}&limit=1&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second).toEqual({ data: [expect.objectContaining({ version: 'shop@1.9.0' })], next_cursor: null });
    const everything = await releases('limit=200');
    expect(everything.data.map((r) => r.version)).toEqual(expect.arrayContaining(['shop@2.0.0', 'shop@1.9.0', 'web@5.0.0', 'app@3.0.0', 'api@7.0.0']));
    expect((await stranger.client.get('/v1/releases')).body.data).toEqual([]);
  });

  test('crash-free rate comes from the sessions of the release; a deployment alone makes a release', async () => {
    const { data } = await releases(`project=${projects.crashes.id}`);
    expect(data.map((r) => [r.version, r.crash_free_rate, r.deployment_count, r.latest_verdict])).toEqual([
      ['app@3.0.0', 0.9, 1, 'degraded'],
      ['app@2.9.0', 0.99, 0, null],
    ]);
    const project = await createProject(owner);
    await deploy(owner, { project_id: project.id, version: 'cli@0.1.0', deployed_at: iso(T) });
    expect((await releases(`project=${project.id}`)).data).toEqual([
      expect.objectContaining({ version: 'cli@0.1.0', first_seen: null, last_seen: null, first_deployed_at: iso(T), deployment_count: 1, events: 0, new_issues: 0, environments: ['production'] }),
    ]);
  });
});

describe('an issue new in a release', () => {
  test('is new in the release of its earliest event, even when that event arrives after later ones', async () => {
    const project = await createProject(owner);
    const stamp = (release: string, timeMs: number) => ({
      orgId: owner.organization.id,
      projectId: project.id,
      record: { eventId: hex(16), timeMs, event: { platform: 'node', release, exception: { values: [{ type: 'LateError', value: 'arrived out of order' }] } } },
    });
    const now = Date.now();
    // the later event (release 2) is processed first, the earlier one (release 1) a batch after
    await ingestErrorEvents([stamp('late@2.0.0', now)], `late-${project.id}-1`);
    await ingestErrorEvents([stamp('late@1.0.0', now - 60_000)], `late-${project.id}-2`);
    const releases = (await owner.client.get(`/v1/releases?project=${project.id}`)).body.data as { version: string; new_issues: number }[];
    expect(Object.fromEntries(releases.map((release) => [release.version, release.new_issues]))).toEqual({ 'late@1.0.0': 1, 'late@2.0.0': 0 });
  });
});
