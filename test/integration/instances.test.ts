/**
 * A scaled-out install: two api, two ingest and two worker processes started from source on one
 * database and one Redis prefix, as users run them behind a load balancer, with one SMTP server and a
 * local HTTP service to probe. Together they behave as one service:
 *
 * - rate limits count in Redis, so requests alternated between two processes share one budget;
 * - job schedulers are shared, so each tick (cron sweep, probe scheduler, digest, alert dispatch) runs
 *   once between the workers: an incident is one alert and one email, a monitor's turn one probe, a
 *   digest one email;
 * - telemetry sent to both ingest processes (an SDK retrying through the balancer) is stored once and
 *   counted once.
 *
 * The processes read the wall clock, so what only time would bring (a missed check-in, a digest's send
 * time) is arranged by moving the stored time back rather than by waiting minutes.
 */
import { Types } from 'mongoose';
import { createApiKey, createProject, PASSWORD, register, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, otlpTraces, projectWithDsn, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import type { Harness } from '../support/harness.js';
import type { Client, Reply } from '../support/http.js';
import { startInstall, type Install } from '../support/instances.js';
import { confirmAddresses, isConfirmation, startMailCatcher, type MailCatcher, type ReceivedMail } from '../support/smtp.js';
import { targetPool, type Target } from '../support/targets.js';
import { eventually } from '../support/wait.js';

const API_LIMIT = 30;
const API_WINDOW_SECONDS = 10;
const LOGIN_LIMIT = 3;
const INGEST_LIMIT_PER_SECOND = 8;
/** Events sent to both ingest processes each second: under the per-DSN limit. */
const EVENTS_PER_ROUND = 3;
const PROBE_INTERVAL_SECONDS = 30;
const MINUTE_MS = 60_000;

const targets = targetPool();
let install: Install;
let catcher: MailCatcher;
let owner: Account;
let project: { id: string };
let target: Target;
let monitorId: string;
let monitorCreatedAt: number;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Polls at most once a second: the owner's requests count against the low API limit too. */
const paced = <T>(check: () => Promise<T | undefined>) => async () => (await sleep(1000), check());
/** The same credentials against the other api process. */
const onOtherApi = (account: Account) => install.api[1]!.with(account.client.options);
const subjects = (mails: ReceivedMail[]) => mails.map((mail) => mail.subject);

beforeAll(async () => {
  catcher = await startMailCatcher();
  install = await startInstall(['api', 'api', 'ingest', 'ingest', 'workers', 'workers'], {
    SMTP_URL: catcher.url,
    OUTBOUND_ALLOWLIST: '127.0.0.1',
    RATE_LIMIT_API: String(API_LIMIT),
    RATE_LIMIT_API_WINDOW_SECONDS: String(API_WINDOW_SECONDS),
    RATE_LIMIT_LOGIN: String(LOGIN_LIMIT),
    INGEST_RATE_LIMIT_PER_SECOND: String(INGEST_LIMIT_PER_SECOND),
  });
  owner = await signUp({ api: install.api[0]! } as Harness);
  project = await createProject(owner);
  const destination = await owner.client.post('/v1/alert-destinations', { type: 'email', emails: ['oncall@example.test'], kinds: ['cron.down', 'uptime.down', 'issue.new'] });
  expect(destination.status).toBe(201);
  // Started now, judged later: a monitor's turns take its interval, whatever else the file does meanwhile.
  target = await targets.start({ status: 503, body: 'down for maintenance' });
  const monitor = await onOtherApi(owner).post('/v1/uptime/monitors', { project_id: project.id, name: 'Storefront', url: target.url, interval_seconds: PROBE_INTERVAL_SECONDS, failure_threshold: 1 });
  expect(monitor.status).toBe(201);
  monitorId = monitor.body.id;
  monitorCreatedAt = Date.now();
  // The digest's send time already passed: the next send-due-reports tick (once a minute) sends it.
  expect((await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 9, recipients: ['digest@example.test'] })).status).toBe(200);
  await install.db.collection('report_schedules').updateOne({ _id: new Types.ObjectId(owner.organization.id) }, { $set: { nextSendAt: new Date(Date.now() - 1000) } });
  // alerts and digests reach only confirmed addresses
  await confirmAddresses(catcher, install.api[1]!, 'oncall@example.test', 'digest@example.test');
}, 120_000);

afterAll(async () => {
  await install?.stop();
  await targets.closeAll();
  await catcher?.close();
});

describe('rate limits are counted once for every process', () => {
  const expectRefused = (reply: Reply, windowSeconds: number) => {
    expect(reply.status).toBe(429);
    expect(reply.body.code).toBe('rate_limited');
    expect(Number(reply.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(reply.headers.get('retry-after'))).toBeLessThanOrEqual(windowSeconds);
  };

  test('the API limit: requests alternated between the two api processes get the limit in all, then 429', async () => {
    const { secret } = await createApiKey(owner);
    const clients = install.api.map((api) => api.with({ bearer: secret }));
    const remaining: (string | null)[] = [];
    for (let i = 0; i < API_LIMIT; i++) {
      const reply = await clients[i % 2]!.get('/v1/projects');
      expect(reply.status).toBe(200);
      remaining.push(reply.headers.get('ratelimit-remaining'));
    }
    expect(remaining).toEqual(Array.from({ length: API_LIMIT }, (_, i) => String(API_LIMIT - 1 - i)));
    for (const client of clients) expectRefused(await client.get('/v1/projects'), API_WINDOW_SECONDS);
  });

  test('the login limit: wrong passwords alternated between the processes count against one email', async () => {
    const email = uniqueEmail('victim');
    await register({ api: install.api[0]! } as Harness, email);
    const statuses: number[] = [];
    for (let i = 0; i < LOGIN_LIMIT; i++) statuses.push((await install.api[i % 2]!.post('/v1/auth/login', { email, password: 'a wrong guess' })).status);
    expect(statuses).toEqual(Array.from({ length: LOGIN_LIMIT }, () => 401));
    // even the right password waits now, on either process
    for (const api of install.api) expectRefused(await api.post('/v1/auth/login', { email, password: PASSWORD }), 900);
  });

  test('the ingest limit per DSN: a burst across the two ingest processes gets the limit in all, the rest 429', async () => {
    const dsnProject = await projectWithDsn(owner, install.ingest[0]!.baseUrl);
    const post = (ingest: Client) => {
      const event = errorEvent({}, { type: 'BurstError' });
      return ingest.request('POST', `/api/${dsnProject.number}/envelope/?sentry_key=${dsnProject.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    };
    // each process looks the DSN up once; then the second they spent passes
    for (const ingest of install.ingest) expect((await post(ingest)).status).toBe(200);
    await sleep(1100);
    const replies = await Promise.all(Array.from({ length: 2 * INGEST_LIMIT_PER_SECOND }, (_, i) => post(install.ingest[i % 2]!)));
    const accepted = replies.filter((reply) => reply.status === 200);
    const refused = replies.filter((reply) => reply.status !== 200);
    expect(accepted).toHaveLength(INGEST_LIMIT_PER_SECOND);
    for (const reply of refused) {
      expectRefused(reply, 1);
      expect(reply.headers.get('x-sentry-rate-limits')).toMatch(/^1:/);
    }
  });
});

test('errors sent to both ingest processes, as an SDK retrying through a balancer, are stored once and counted once', async () => {
  const dsnProject: ProjectWithDsn = await projectWithDsn(owner, install.ingest[0]!.baseUrl);
  const users = ['ada', 'grace', 'edsger', 'barbara'];
  const events = Array.from({ length: 24 }, (_, i) => errorEvent({ user: { id: users[i % users.length] }, extra: { order: i } }, { type: 'CheckoutError', value: 'payment declined' }));
  const post = (ingest: Client, event: Record<string, unknown>) =>
    ingest.request('POST', `/api/${dsnProject.number}/envelope/?sentry_key=${dsnProject.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  // a round a second, under the per-DSN limit: each event to both processes at once, so both workers count into the issue together
  for (let round = 0; round < events.length; round += EVENTS_PER_ROUND) {
    const started = Date.now();
    const sent = events.slice(round, round + EVENTS_PER_ROUND).flatMap((event) => install.ingest.map((ingest) => post(ingest, event)));
    expect((await Promise.all(sent)).map((reply) => reply.status)).toEqual(sent.map(() => 200));
    await sleep(Math.max(0, started + 1200 - Date.now()));
  }
  const countOf = async () => (await owner.client.get(`/v1/issues?project=${dsnProject.id}`)).body.data as { id: string; count: number; user_count: number }[];
  const stored = await eventually(
    paced(async () => {
      const [issue] = await countOf();
      const listed = issue && ((await owner.client.get(`/v1/issues/${issue.id}/events?limit=200`)).body.data as { event_id: string }[]);
      return listed?.length === events.length ? listed : undefined;
    }),
    `${events.length} events stored`,
    30_000,
  );
  expect(stored.map((event) => event.event_id).sort()).toEqual(events.map((event) => event.event_id).sort());
  // the counts are written after the events: give the last batch its moment
  await sleep(3000);
  const issues = await countOf();
  expect(issues.map((issue) => [issue.count, issue.user_count])).toEqual([[events.length, users.length]]);
  // each workers process writes the end users its flushes saw every few seconds
  const perUser = await eventually(
    paced(async () => {
      const listed = (await owner.client.get(`/v1/users?project=${dsnProject.id}&limit=200`)).body.data as { event_count: number }[];
      return listed.reduce((sum, user) => sum + user.event_count, 0) === events.length ? listed : undefined;
    }),
    'every end user counted',
    20_000,
  );
  expect(perUser.map((user) => user.event_count)).toEqual(users.map(() => events.length / users.length));
  // usage counts records as the workers accept them: each copy of a retried event
  const usage = (await owner.client.get(`/v1/usage?project=${dsnProject.id}`)).body as { categories: { category: string; used: number }[] };
  expect(usage.categories.find((category) => category.category === 'errors')?.used).toBe(2 * events.length);
}, 90_000);

test('a trace of 4,500 spans sent in parts to both ingest processes is listed whole: every span once, no stored page over 2,000 spans', async () => {
  const dsnProject = await projectWithDsn(owner, install.ingest[0]!.baseUrl);
  const SPANS = 4_500;
  const PART = 500;
  const PAGE = 2_000;
  const traceId = hex(16);
  const root = hex(8);
  const t = Date.now() - 60_000;
  const spans: OtlpSpan[] = Array.from({ length: SPANS }, (_, i) => ({
    traceId,
    id: i === 0 ? root : hex(8),
    ...(i > 0 && { parent: root }),
    name: i === 0 ? 'GET /catalogue' : `load item ${i}`,
    kind: i === 0 ? 'server' : 'internal',
    startMs: t + (i % 500),
    durationMs: 2,
  }));
  // parts alternated between the processes, so both workers store spans of the trace, each without knowing what the other stored
  const parts = Array.from({ length: SPANS / PART }, (_, k) => spans.slice(k * PART, (k + 1) * PART));
  for (let round = 0; round < parts.length; round += EVENTS_PER_ROUND) {
    const started = Date.now();
    const sent = parts.slice(round, round + EVENTS_PER_ROUND).map((part, k) =>
      install.ingest[(round + k) % 2]!.request('POST', '/v1/traces', JSON.stringify(otlpTraces({ catalogue: part })), { 'content-type': 'application/json', authorization: `Bearer ${dsnProject.publicKey}` }),
    );
    expect((await Promise.all(sent)).map((reply) => reply.status)).toEqual(sent.map(() => 200));
    await sleep(Math.max(0, started + 1200 - Date.now()));
  }
  await eventually(paced(async () => ((await owner.client.get(`/v1/traces/${traceId}?limit=1`)).body.span_count === SPANS ? true : undefined)), 'every span stored', 60_000);
  // a flush counts its spans into the summary before it moves them to the pages that follow the other
  // process's: until then a span can be read on its first page and again on its own
  const listWhole = async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const reply: Reply = await owner.client.get(`/v1/traces/${traceId}${cursor ? `?cursor=${cursor}` : ''}`);
      expect(reply.status).toBe(200);
      seen.push(...(reply.body.spans as { span_id: string }[]).map((span) => span.span_id));
      cursor = reply.body.next_cursor;
    } while (cursor && seen.length <= SPANS);
    return seen;
  };
  const seen = await eventually(paced(async () => {
    const listed = await listWhole();
    return listed.length === SPANS ? listed : undefined;
  }), 'the trace listed once its spans are on their pages', 20_000);
  expect(new Set(seen)).toEqual(new Set(spans.map((span) => span.id)));
  // opening a trace reads one stored page per answer, so its cost stays that of 2,000 spans
  const pages = await install.db
    .collection('spans')
    .aggregate<{ _id: number; spans: number }>([{ $match: { traceId } }, { $group: { _id: '$page', spans: { $sum: 1 } } }])
    .toArray();
  expect(pages.map((page) => page.spans).sort((a, b) => b - a)).toEqual([PAGE, PAGE, SPANS - 2 * PAGE]);
}, 90_000);

describe('each schedule tick runs once between the two worker processes', () => {
  test('a failing cron check is one alert and one email, its recovery one more', async () => {
    const check = (await owner.client.post('/v1/cron/checks', { project_id: project.id, name: 'Nightly export', schedule: { type: 'interval', value: 1, unit: 'day' } })).body;
    // the job's wrapper reported the failure several times, and the balancer spread the reports over both processes
    const failUrls = [0, 1, 0, 1].map((i) => `${check.ping_url.replace(install.api[0]!.baseUrl, install.api[i]!.baseUrl)}/fail`);
    expect((await Promise.all(failUrls.map((url) => fetch(url)))).map((reply) => reply.status)).toEqual([200, 200, 200, 200]);
    await catcher.waitFor(1, (mail) => mail.subject.includes('Nightly export'));
    expect((await fetch(check.ping_url)).status).toBe(200);
    const mails = await catcher.waitFor(2, (mail) => mail.subject.includes('Nightly export'));
    expect(mails.map((mail) => [mail.subject, mail.to])).toEqual([
      ['[Sluice] Alert: Cron check "Nightly export" reported a failure', ['oncall@example.test']],
      ['[Sluice] Resolved: Cron check "Nightly export" reported a failure', ['oncall@example.test']],
    ]);
    const alerts = (await owner.client.get('/v1/alerts?kind=cron.down&limit=200')).body.data as { subject: { id: string }; status: string }[];
    expect(alerts.filter((alert) => alert.subject.id === check.id).map((alert) => alert.status)).toEqual(['resolved']);
  }, 60_000);

  test('a missed run is one alert and one email', async () => {
    const check = (await owner.client.post('/v1/cron/checks', { project_id: project.id, name: 'Minutely sync', schedule: { type: 'interval', value: 1, unit: 'minute' } })).body;
    expect((await fetch(check.ping_url)).status).toBe(200);
    // as if that check-in came three minutes ago: its next run and the minute of margin are over
    const checks = install.db.collection('cron_checks');
    const stored = await checks.findOne({ _id: new Types.ObjectId(check.id as string) });
    await checks.updateOne({ _id: stored!._id }, { $set: { lastCheckinAt: new Date(stored!.lastCheckinAt.getTime() - 3 * MINUTE_MS), nextExpectedAt: new Date(stored!.nextExpectedAt.getTime() - 3 * MINUTE_MS) } });
    const [mail] = await catcher.waitFor(1, (m) => m.subject.includes('Minutely sync'));
    expect(mail!.subject).toBe('[Sluice] Alert: Cron check "Minutely sync" missed a check-in');
    const judged = (await owner.client.get(`/v1/cron/checks/${check.id}`)).body;
    expect(judged).toMatchObject({ state: 'down', down_reason: 'missed' });
    // the sweep moved the deadline past now, so later sweeps have nothing more to judge
    expect(new Date(judged.next_expected_at).getTime()).toBeGreaterThan(Date.now());
  }, 30_000);

  test('an uptime monitor is probed once per turn, and its outage is one alert', async () => {
    // created at T, first probed by the next 5-second tick, then every interval (+ up to a tick)
    await eventually(async () => (target.requests.length >= 2 ? true : undefined), 'the second probe', monitorCreatedAt + (2 * PROBE_INTERVAL_SECONDS + 15) * 1000 - Date.now());
    const secondAt = Date.now();
    // the third turn is an interval away: until then, nothing more may reach the target
    await sleep(8000);
    expect(target.requests).toHaveLength(2);
    expect(Date.now() - secondAt).toBeLessThan(PROBE_INTERVAL_SECONDS * 1000);
    const checks = (await owner.client.get(`/v1/uptime/monitors/${monitorId}/checks`)).body.data;
    expect(checks.map((check: { ok: boolean; status_code: number }) => [check.ok, check.status_code])).toEqual([
      [false, 503],
      [false, 503],
    ]);
    expect((await owner.client.get(`/v1/uptime/monitors/${monitorId}`)).body.state).toBe('down');
  }, 100_000);

  test('the digest is sent once', async () => {
    const [digest] = await catcher.waitFor(1, (mail) => mail.to.includes('digest@example.test') && !isConfirmation(mail), 75_000);
    expect(digest!.subject).toMatch(/^Sluice daily digest for /);
    const schedule = (await owner.client.get('/v1/reports/schedule')).body;
    expect(schedule.last_sent_at).not.toBeNull();
    expect(new Date(schedule.next_send_at).getTime()).toBeGreaterThan(Date.now());
  }, 80_000);

  test('after the ticks have come round again: no alert or email twice', async () => {
    await sleep(12_000);
    const alerts = (await owner.client.get('/v1/alerts?limit=200')).body.data as { kind: string; title: string; status: string; deliveries: { event: string; status: string; attempts: number }[] }[];
    const watched = alerts.filter((alert) => ['cron.down', 'uptime.down', 'issue.new'].includes(alert.kind));
    expect(watched.map((alert) => [alert.kind, alert.title.replace(/:.*$/, ':…'), alert.status]).sort()).toEqual(
      [
        ['cron.down', 'Cron check "Nightly export" reported a failure', 'resolved'],
        ['cron.down', 'Cron check "Minutely sync" missed a check-in', 'open'],
        ['uptime.down', 'Storefront is down:…', 'open'],
        ['issue.new', 'New issue:…', 'open'],
        ['issue.new', 'New issue:…', 'open'],
      ].sort(),
    );
    for (const alert of watched) for (const delivery of alert.deliveries) expect(delivery).toMatchObject({ status: 'sent', attempts: 1 });
    // one email per event of each alert (a cron check's recovery is told too), and the digest
    const expected = watched.flatMap((alert) => [`[Sluice] Alert: ${alert.title}`, ...(alert.kind === 'cron.down' && alert.status === 'resolved' ? [`[Sluice] Resolved: ${alert.title}`] : [])]);
    const sent = catcher.mails.filter((mail) => !isConfirmation(mail));
    const [digest, ...others] = sent.filter((mail) => mail.to.includes('digest@example.test'));
    expect(others).toEqual([]);
    expect(subjects(sent).sort()).toEqual([...expected, digest!.subject].sort());
    const probes = (await owner.client.get(`/v1/uptime/monitors/${monitorId}/checks`)).body.data;
    expect(target.requests).toHaveLength(probes.length);
  }, 30_000);
});
