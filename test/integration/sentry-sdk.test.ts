import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
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
beforeAll(async () => {
  h = await startHarness({}, { workers: true });
  owner = await signUp(h);
});
afterAll(async () => {
  await h.close();
  await dropTestDatabase();
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
    const users = await owner.client.get(`/v1/users?project=${project.id}`);
    expect(users.body.data).toEqual([expect.objectContaining({ user_id: 'user-42', email: 'ada@example.com', username: 'ada', event_count: 1 })]);
  });

  test('resolve, then a new occurrence regresses the issue', async () => {
    const issue = issues.find((i) => i.type === 'TypeError');
    const resolved = await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'resolve' });
    expect(resolved.body).toMatchObject({ status: 'resolved', resolved_at: expect.any(String) });
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'resolve' })).body.status).toBe('resolved');
    await sentryApp('errors', project);
    const regressed = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues/${issue.id}`);
      return reply.body.count === 2 ? reply.body : undefined;
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
