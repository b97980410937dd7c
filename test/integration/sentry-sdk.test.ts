import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Types } from 'mongoose';
import { bucketOf, representative } from '../../src/shared/telemetry/histogram.js';
import { createBlobStore } from '../../src/shared/clients/blob.js';
import { CronCheck, CronPing } from '../../src/shared/features/cron/model.js';
import { Log } from '../../src/shared/features/logs/model.js';
import { MetricName } from '../../src/shared/features/metrics/model.js';
import { Replay, ReplaySegment } from '../../src/shared/features/replays/model.js';
import { Span, Trace } from '../../src/shared/features/traces/model.js';
import { Usage } from '../../src/shared/features/usage/model.js';
import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { eventId, projectWithDsn, replayEnvelope, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { eventually } from '../support/wait.js';

const run = promisify(execFile);

/** Runs the stock SDK in its own process against this harness's ingest, returning the ids it reported. */
async function sentryApp(scenario: string, project: ProjectWithDsn): Promise<Record<string, string>> {
  const { stdout } = await run(process.execPath, ['test/support/sentry-scenario.mjs', scenario], {
    env: { ...process.env, NODE_OPTIONS: '', SENTRY_DSN: project.dsn },
    timeout: 20_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!);
}

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
});

describe('@sentry/node 11 pointed at the ingest service', () => {
  let project: ProjectWithDsn;
  let sent: Record<string, string>;
  let issues: any[];

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    sent = await sentryApp('errors', project);
    issues = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues?project=${project.id}`);
      const total = reply.body.data.reduce((sum: number, issue: { count: number }) => sum + issue.count, 0);
      return total >= 6 ? reply.body.data : undefined;
    }, 'six events counted into issues');
  }, 60_000);

  test('captureException becomes an issue with title, culprit, frames, release and environment', async () => {
    const issue = issues.find((i) => i.type === 'TypeError');
    expect(issue).toMatchObject({
      title: expect.stringMatching(/^TypeError: Cannot read properties of undefined/),
      level: 'error',
      platform: 'node',
      status: 'unresolved',
      count: 1,
      environments: ['staging'],
      releases: ['shop@2.4.1'],
    });
    expect(issue.culprit).toMatch(/failInCheckout/);
    const detail = await owner.client.get(`/v1/issues/${issue.id}`);
    expect(detail.body.latest_event.event_id).toBe(sent.exception);
    const frames = detail.body.latest_event.exception.at(-1).frames;
    expect(frames.at(-1)).toMatchObject({ function: 'failInCheckout', in_app: true, lineno: expect.any(Number) });
    const events = await owner.client.get(`/v1/issues/${issue.id}/events`);
    expect(events.body.data.map((e: { event_id: string }) => e.event_id)).toEqual([sent.exception]);
  });

  test('messages differing only in numbers group into one issue', () => {
    const timeouts = issues.filter((i) => i.title.startsWith('Payment provider timed out'));
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toMatchObject({ count: 2, level: 'info' });
  });

  test('a custom fingerprint groups different exception types together', () => {
    const gateway = issues.filter((i) => i.title === 'Error: gateway 502' || i.title === 'RangeError: completely different');
    expect(gateway).toHaveLength(1);
    expect(gateway[0].count).toBe(2);
  });

  test('user context becomes an end user and the issue counts them', async () => {
    const issue = issues.find((i) => i.type === 'SyntaxError');
    expect(issue.user_count).toBe(1);
    // the workers write the end users their flushes saw every few seconds
    const users = await eventually(async () => {
      const listed = (await owner.client.get(`/v1/users?project=${project.id}`)).body.data as unknown[];
      return listed.length > 0 ? listed : undefined;
    }, 'the end user listed');
    expect(users).toEqual([expect.objectContaining({ user_id: 'user-42', email: 'ada@example.com', username: 'ada', event_count: 1 })]);
  });

  test('resolve, then a new occurrence regresses the issue', async () => {
    const issue = issues.find((i) => i.type === 'TypeError');
    const resolved = await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'resolve' });
    expect(resolved.body).toMatchObject({ status: 'resolved', resolved_at: expect.any(String) });
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'resolve' })).body.status).toBe('resolved');
    await sentryApp('errors', project);
    // the worker counts the event, then flips the issue: wait for both
    const regressed = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues/${issue.id}`);
      return reply.body.count === 2 && reply.body.status !== 'resolved' ? reply.body : undefined;
    }, 'the regression');
    expect(regressed).toMatchObject({ status: 'unresolved', regressed_at: expect.any(String) });
  }, 60_000);

  test('filters: status, level, text and sort', async () => {
    const byLevel = await owner.client.get(`/v1/issues?project=${project.id}&level=info`);
    expect(byLevel.body.data.map((i: { title: string }) => i.title)).toEqual([expect.stringMatching(/^Payment provider timed out/)]);
    const byText = await owner.client.get(`/v1/issues?project=${project.id}&q=COUPON`);
    expect(byText.body.data).toHaveLength(1);
    const byEvents = await owner.client.get(`/v1/issues?project=${project.id}&sort=events`);
    const counts = byEvents.body.data.map((i: { count: number }) => i.count);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
    const unresolved = await owner.client.get(`/v1/issues?project=${project.id}&status=resolved`);
    expect(unresolved.body.data).toEqual([]);
  });
});

describe('the rest of what the SDK sends arrives and is stored', () => {
  test('streamed spans, logs, a check-in and a metric from @sentry/node 11, counted in usage', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    await sentryApp('telemetry', project);
    const projectId = new Types.ObjectId(project.id);
    const spans = await eventually(async () => {
      const found = await Span.find({ projectId }).lean();
      return found.length >= 4 ? found : undefined;
    }, 'four spans');
    const server = spans.find((s) => s.name === 'GET /cart')!;
    const db = spans.find((s) => s.name === 'SELECT * FROM carts WHERE id = ?')!;
    expect(server).toMatchObject({ kind: 'server', category: 'http', service: 'shop', environment: 'staging', release: 'shop@2.4.1' });
    expect(db).toMatchObject({ parentSpanId: server.spanId, traceId: server.traceId, category: 'db' });
    const trace = await eventually(async () => (await Trace.findOne({ projectId, traceId: server.traceId }).lean()) ?? undefined, 'the trace summary');
    // root spans share the scope's trace: the cart request and the queue spans
    expect(trace.spanCount).toBe(4);

    const logs = await eventually(async () => {
      const found = await Log.find({ projectId }).lean();
      return found.length >= 2 ? found : undefined;
    }, 'two logs');
    expect(logs.map((l) => [l.level, l.body]).sort()).toEqual([['info', 'cart c-77 loaded with 3 items'], ['warn', 'inventory low for sku-9']]);
    expect(logs.find((l) => l.level === 'info')!.traceId).toBe(server.traceId);

    // the check-in's monitor_config creates the check, which the check-in then pings
    const check = await eventually(async () => (await CronCheck.findOne({ projectId, slug: 'nightly-report' }).lean()) ?? undefined, 'the cron check');
    expect(check).toMatchObject({ schedule: { type: 'crontab', value: '30 2 * * *' }, timezone: 'Europe/Berlin', checkinMargin: 5, maxRuntime: 10 });
    const ping = await eventually(async () => (await CronPing.findOne({ checkId: check._id }).lean()) ?? undefined, 'the check-in');
    expect(ping).toMatchObject({ status: 'ok', durationMs: 12_500, source: 'sdk' });
    await eventually(async () => (await MetricName.findOne({ projectId, name: 'cart.loaded' }).lean()) ?? undefined, 'the metric name');

    const usage = await eventually(async () => {
      const rows = await Usage.find({ projectId }).lean();
      return rows.some((r) => r.category === 'spans') && rows.some((r) => r.category === 'logs') ? rows : undefined;
    }, 'usage counters');
    expect(usage.find((r) => r.category === 'spans')!.quantity).toBe(4);

    // the views read Sentry's db and queue spans like OTel's
    const window = `project=${project.id}&from=${Date.now() - 600_000}&to=${Date.now() + 60_000}`;
    const slow = await owner.client.get(`/v1/database/slow-queries?${window}`);
    expect(slow.body.data).toEqual([expect.objectContaining({ statement: 'select * from carts where id = ?', system: 'postgresql', calls: 1, services: ['shop'] })]);
    const queues = await owner.client.get(`/v1/queues?${window}`);
    expect(queues.body.data).toEqual([
      expect.objectContaining({ queue: 'orders', system: 'bullmq', published: 1, processed: 1, waits_measured: 1, p95_wait_ms: Number(representative(bucketOf(250)).toFixed(2)) }),
    ]);
  }, 60_000);

  test('a browser replay is kept only while the project captures replays', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const send = async (replayId: string) => {
      const response = await fetch(`${h.ingest.baseUrl}/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, { method: 'POST', body: replayEnvelope(replayId), headers: { 'content-type': 'text/plain;charset=UTF-8' } });
      expect(response.status).toBe(200);
    };
    const projectId = new Types.ObjectId(project.id);
    const refused = eventId();
    await send(refused);

    expect((await owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: true })).status).toBe(200);
    await new Promise((r) => setTimeout(r, Number(h.config.INGEST_DSN_CACHE_MS) + 100));
    const kept = eventId();
    await send(kept);
    const segment = await eventually(async () => (await ReplaySegment.findOne({ projectId, replayId: kept }).lean()) ?? undefined, 'the kept segment');
    const bytes = await createBlobStore(h.config).get(segment.blobKey);
    expect(JSON.parse(gunzipSync(bytes!).toString())[0].data.href).toBe('https://shop.example/cart');
    expect(await ReplaySegment.countDocuments({ projectId, replayId: refused })).toBe(0);
    expect(await Replay.countDocuments({ projectId, replayId: refused })).toBe(0);
  }, 30_000);
});
