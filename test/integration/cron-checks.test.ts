/**
 * Cron checks through the front door: the check CRUD routes, check-ins as curl and scripts send them
 * (no credential but the token in the ping URL), the state machine driven with an injected clock, a
 * Sentry SDK check-in through the ingest service and the workers, and tenancy.
 *
 * The state machine's times are fixed instants in 2026 before today: the test calls the feature's
 * `checkInByToken` and `sweepChecks(now)` (this process is connected to the harness's database) and
 * reads the verdicts back over HTTP. A sweep judges every check in the database, so each of those
 * tests deletes its checks afterwards, and the checks of the HTTP tests (checked in at the real time)
 * have deadlines after every instant swept here. The SDK test has a harness (and database) of its
 * own: its workers run the real sweep every 10 seconds against the real clock.
 */
import { randomBytes } from 'node:crypto';
import { Types } from 'mongoose';
import { checkInByToken, sweepChecks, type CheckInInput } from '../../src/shared/features/cron/service.js';
import { nextRun } from '../../src/shared/features/cron/schedule.js';
import { createProject, signUp, type Account } from '../support/factories/accounts.js';
import { envelope, hex, projectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, startHarness, useHarness, type Harness } from '../support/harness.js';
import type { Client, Reply } from '../support/http.js';
import { eventually } from '../support/wait.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const BASE62_TOKEN = /^[0-9A-Za-z]{43}$/;

interface CheckJson {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  schedule: { type: 'crontab'; value: string } | { type: 'interval'; value: number; unit: string };
  timezone: string;
  checkin_margin: number;
  max_runtime: number;
  state: string;
  down_reason: string | null;
  last_checkin_at: string | null;
  next_expected_at: string | null;
  ping_url: string;
  created_at: string;
}

interface PingJson {
  id: string;
  received_at: string;
  status: string;
  duration_ms: number | null;
  run_id: string | null;
  excerpt: string | null;
  source: string;
}

const tokenOf = (check: CheckJson) => new URL(check.ping_url).pathname.split('/').at(-1)!;
/** The ping URL's path, to call on a harness's API as a script would (no credential). */
const pingPath = (check: CheckJson) => new URL(check.ping_url).pathname;
const iso = (ms: number) => new Date(ms).toISOString();
const unknownToken = () => randomBytes(40).toString('base64').replace(/[^0-9A-Za-z]/g, '').slice(0, 43).padEnd(43, 'x');

describe('cron checks through the API', () => {
  let h: Harness;
  let owner: Account;
  let projectId: string;
  useHarness((started) => (h = started));

  /** Tokens used in check-ins: none may reach a log line. */
  const tokensUsed = new Set<string>();

  beforeAll(async () => {
    owner = await signUp(h);
    projectId = (await createProject(owner)).id;
  });

  async function createCheck(body: Record<string, unknown>, client: Client = owner.client): Promise<CheckJson> {
    const reply = await client.post('/v1/cron/checks', { project_id: projectId, schedule: { type: 'crontab', value: '0 * * * *' }, ...body });
    expect(reply.status).toBe(201);
    tokensUsed.add(tokenOf(reply.body));
    return reply.body;
  }

  const getCheck = async (check: CheckJson): Promise<CheckJson> => {
    const reply = await owner.client.get(`/v1/cron/checks/${check.id}`);
    expect(reply.status).toBe(200);
    return reply.body;
  };

  const pingsOf = async (check: CheckJson): Promise<PingJson[]> => {
    const reply = await owner.client.get(`/v1/cron/checks/${check.id}/pings?limit=200`);
    expect(reply.status).toBe(200);
    return reply.body.data;
  };

  /** The organisation's cron.down alerts about one check, newest first. */
  const alertsOf = async (check: CheckJson) => {
    const reply = await owner.client.get(`/v1/alerts?kind=cron.down&limit=200`);
    expect(reply.status).toBe(200);
    return reply.body.data.filter((alert: { subject: { id: string } }) => alert.subject.id === check.id);
  };

  /** A check-in as a script sends it: no credential, only the ping URL. */
  function ping(check: CheckJson, suffixAndQuery = '', init: { method?: 'GET' | 'POST'; body?: string | object; contentType?: string } = {}): Promise<Reply> {
    const body = typeof init.body === 'object' ? JSON.stringify(init.body) : init.body;
    const contentType = init.contentType ?? (typeof init.body === 'object' ? 'application/json' : 'text/plain');
    return h.api.request(init.method ?? (body === undefined ? 'GET' : 'POST'), `${pingPath(check)}${suffixAndQuery}`, body, body === undefined ? {} : { 'content-type': contentType });
  }

  function expectAccepted(reply: Reply) {
    expect({ status: reply.status, body: reply.body }).toEqual({ status: 200, body: { ok: true } });
  }

  // -------------------------------------------------------------------------------------------------
  describe('managing checks', () => {
    test('create answers 201 with the defaults, a slug from the name and an absolute ping URL on the host called', async () => {
      const before = new Date();
      const reply = await owner.client.post('/v1/cron/checks', { project_id: projectId, name: 'Nightly Backup', schedule: { type: 'crontab', value: '30 2 * * *' } });
      expect(reply.status).toBe(201);
      const check: CheckJson = reply.body;
      tokensUsed.add(tokenOf(check));
      expect(check).toEqual({
        id: expect.any(String),
        project_id: projectId,
        name: 'Nightly Backup',
        slug: 'nightly-backup',
        schedule: { type: 'crontab', value: '30 2 * * *' },
        timezone: 'UTC',
        checkin_margin: 1,
        max_runtime: 30,
        state: 'new',
        down_reason: null,
        last_checkin_at: null,
        next_expected_at: expect.stringMatching(/T02:30:00\.000Z$/),
        ping_url: expect.stringMatching(new RegExp(`^${h.api.baseUrl.replace(/[.:/]/g, '\\$&')}/v1/checkins/[0-9A-Za-z]{43}$`)),
        created_at: expect.any(String),
      });
      // a new check shows when its schedule next runs
      const nextExpected = Date.parse(check.next_expected_at!);
      expect(nextExpected).toBeGreaterThan(before.getTime());
      expect(nextExpected).toBeLessThanOrEqual(before.getTime() + 24 * HOUR);

      expect(await getCheck(check)).toEqual({ ...check, next_expected_at: expect.stringMatching(/T02:30:00\.000Z$/) });
      // each check has a token of its own
      const other = await createCheck({ name: 'Nightly Backup 2' });
      expect(tokenOf(other)).toMatch(BASE62_TOKEN);
      expect(tokenOf(other)).not.toBe(tokenOf(check));
    });

    test('with API_PUBLIC_URL set, ping URLs are built from it instead of the host called', async () => {
      const publicApi = await startHarness({ API_PUBLIC_URL: 'https://sluice.example.com/' });
      try {
        const client = publicApi.api.with({ cookie: owner.cookie, origin: DASHBOARD_ORIGIN });
        const check = await createCheck({ name: 'Behind the proxy' }, client);
        expect(check.ping_url).toMatch(/^https:\/\/sluice\.example\.com\/v1\/checkins\/[0-9A-Za-z]{43}$/);
        expect((await client.get(`/v1/cron/checks/${check.id}`)).body.ping_url).toBe(check.ping_url);
        // the same check read through an API without the setting points at that API's host
        expect((await getCheck(check)).ping_url).toBe(`${h.api.baseUrl}/v1/checkins/${tokenOf(check)}`);
      } finally {
        await publicApi.close();
      }
    });

    test('the list: oldest first, filtered by project and state, paged by cursor', async () => {
      const mine = (await createProject(owner)).id;
      const theirs = (await createProject(owner)).id;
      const a = await createCheck({ project_id: mine, name: 'list a' });
      const b = await createCheck({ project_id: mine, name: 'list b' });
      const c = await createCheck({ project_id: mine, name: 'list c' });
      const d = await createCheck({ project_id: theirs, name: 'list d' });
      expectAccepted(await ping(b));
      expect((await owner.client.patch(`/v1/cron/checks/${c.id}`, { paused: true })).status).toBe(200);

      const names = (reply: Reply) => reply.body.data.map((check: CheckJson) => check.name);
      const first = await owner.client.get(`/v1/cron/checks?project=${mine}&limit=2`);
      expect(names(first)).toEqual(['list a', 'list b']);
      expect(first.body.next_cursor).toEqual(expect.any(String));
      const second = await owner.client.get(`/v1/cron/checks?project=${mine}&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
      expect(names(second)).toEqual(['list c']);
      expect(second.body.next_cursor).toBeNull();

      expect(names(await owner.client.get(`/v1/cron/checks?project=${mine}&state=up`))).toEqual(['list b']);
      expect(names(await owner.client.get(`/v1/cron/checks?project=${mine}&state=new`))).toEqual(['list a']);
      expect(names(await owner.client.get(`/v1/cron/checks?project=${mine}&state=paused`))).toEqual(['list c']);
      expect(names(await owner.client.get(`/v1/cron/checks?project=${mine}&state=down`))).toEqual([]);
      expect(names(await owner.client.get(`/v1/cron/checks?project=${theirs}`))).toEqual(['list d']);
      expect(names(await owner.client.get(`/v1/cron/checks?project_id=${theirs}`))).toEqual(['list d']);
      expect(names(await owner.client.get(`/v1/cron/checks?project=${mine}&project=${theirs}`))).toEqual(['list a', 'list b', 'list c', 'list d']);
      // the whole organisation, without a filter
      const all = (await owner.client.get('/v1/cron/checks?limit=200')).body.data.map((check: CheckJson) => check.id);
      expect(all).toEqual(expect.arrayContaining([a.id, b.id, c.id, d.id]));

      const badState = await owner.client.get('/v1/cron/checks?state=sleeping');
      expect(badState.status).toBe(400);
      expect(badState.body.code).toBe('validation_failed');
      const unknownProject = await owner.client.get(`/v1/cron/checks?project=${new Types.ObjectId().toHexString()}`);
      expect(unknownProject.status).toBe(404);
      expect(unknownProject.body.code).toBe('not_found');
    });

    test('PATCH changes schedule, margin and name; a new schedule applies from the last check-in; paused, then resumed as new', async () => {
      const check = await createCheck({ name: 'hourly sync', schedule: { type: 'interval', value: 1, unit: 'hour' } });
      expectAccepted(await ping(check));
      const up = await getCheck(check);
      expect(up.state).toBe('up');
      const lastCheckIn = Date.parse(up.last_checkin_at!);
      expect(up.next_expected_at).toBe(iso(lastCheckIn + HOUR));

      const changed = await owner.client.patch(`/v1/cron/checks/${check.id}`, { schedule: { type: 'interval', value: 2, unit: 'hour' }, checkin_margin: 15, max_runtime: 90, name: 'two-hourly sync' });
      expect(changed.status).toBe(200);
      expect(changed.body).toMatchObject({ name: 'two-hourly sync', slug: 'hourly-sync', schedule: { type: 'interval', value: 2, unit: 'hour' }, checkin_margin: 15, max_runtime: 90, state: 'up' });
      expect(changed.body.next_expected_at).toBe(iso(lastCheckIn + 2 * HOUR));
      expect(await getCheck(check)).toEqual(changed.body);

      const paused = await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: true });
      expect(paused.body.state).toBe('paused');
      expect((await getCheck(check)).state).toBe('paused');
      // a paused check still records check-ins, and stays paused
      expectAccepted(await ping(check, '/fail'));
      expect((await getCheck(check)).state).toBe('paused');
      expect((await pingsOf(check)).map((p) => p.status)).toEqual(['fail', 'ok']);

      const resumed = await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: false });
      expect(resumed.body).toMatchObject({ state: 'new', down_reason: null });
      expect((await getCheck(check)).state).toBe('new');
    });

    test('DELETE answers 204; then the check, its history and its ping URL answer 404', async () => {
      const check = await createCheck({ name: 'to delete' });
      expectAccepted(await ping(check));
      const deleted = await owner.client.delete(`/v1/cron/checks/${check.id}`);
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe('');
      for (const reply of [await owner.client.get(`/v1/cron/checks/${check.id}`), await owner.client.get(`/v1/cron/checks/${check.id}/pings`), await owner.client.delete(`/v1/cron/checks/${check.id}`), await ping(check)]) {
        expect(reply.status).toBe(404);
        expect(reply.body.code).toBe('not_found');
      }
    });

    test('a slug is unique per project: 409 conflict on create and on PATCH; another project may reuse it', async () => {
      await createCheck({ name: 'Billing export' });
      const again = await owner.client.post('/v1/cron/checks', { project_id: projectId, name: 'Billing Export!', schedule: { type: 'crontab', value: '@daily' } });
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('conflict');
      const explicit = await owner.client.post('/v1/cron/checks', { project_id: projectId, name: 'Something else', slug: 'billing-export', schedule: { type: 'crontab', value: '@daily' } });
      expect(explicit.status).toBe(409);

      const other = await createCheck({ name: 'Invoice export' });
      const renamed = await owner.client.patch(`/v1/cron/checks/${other.id}`, { slug: 'billing-export' });
      expect(renamed.status).toBe(409);
      expect(renamed.body.code).toBe('conflict');
      expect((await getCheck(other)).slug).toBe('invoice-export');

      const elsewhere = await createCheck({ project_id: (await createProject(owner)).id, name: 'Billing export' });
      expect(elsewhere.slug).toBe('billing-export');
    });

    test('validation failures name the field in details', async () => {
      const valid = { project_id: projectId, name: 'valid', schedule: { type: 'crontab', value: '0 * * * *' } };
      const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
        [{ schedule: { type: 'crontab', value: 'every night' } }, 'body.schedule.value', /five fields/],
        [{ schedule: { type: 'crontab', value: '0 0 31 2 *' } }, 'body.schedule.value', /never runs/],
        [{ schedule: { type: 'crontab', value: '0 30 2 * * *' } }, 'body.schedule.value', /five fields/],
        [{ schedule: { type: 'interval', value: 2, unit: 'fortnight' } }, 'body.schedule.unit'],
        [{ schedule: { type: 'interval', value: 0, unit: 'hour' } }, 'body.schedule.value'],
        [{ checkin_margin: 0 }, 'body.checkin_margin'],
        [{ max_runtime: 0 }, 'body.max_runtime'],
        [{ timezone: 'Mars/Olympus_Mons' }, 'body.timezone', /unknown time zone/],
        [{ slug: 'Has Spaces' }, 'body.slug'],
        [{ colour: 'red' }, 'body', /colour/],
      ];
      for (const [change, path, message] of cases) {
        const reply = await owner.client.post('/v1/cron/checks', { ...valid, ...change });
        expect({ change, status: reply.status, code: reply.body.code }).toEqual({ change, status: 400, code: 'validation_failed' });
        expect(reply.body.details).toEqual(expect.arrayContaining([{ path, message: message ? expect.stringMatching(message) : expect.any(String) }]));
      }
      const check = await createCheck({ name: 'to change badly' });
      for (const [change, path] of [[{ timezone: 'Nowhere/Special' }, 'body.timezone'], [{ checkin_margin: 0 }, 'body.checkin_margin'], [{ token: 'mine' }, 'body']] as const) {
        const reply = await owner.client.patch(`/v1/cron/checks/${check.id}`, change);
        expect(reply.status).toBe(400);
        expect(reply.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
      }
      expect(await getCheck(check)).toMatchObject({ timezone: 'UTC', checkin_margin: 1 });

      for (const project of [new Types.ObjectId().toHexString(), 'not-an-id']) {
        const reply = await owner.client.post('/v1/cron/checks', { ...valid, project_id: project });
        expect(reply.status).toBe(404);
        expect(reply.body.code).toBe('not_found');
      }
    });
  });

  // -------------------------------------------------------------------------------------------------
  describe('checking in', () => {
    test('a GET with no credential is a success', async () => {
      const check = await createCheck({ name: 'plain get' });
      const reply = await fetch(check.ping_url);
      expect(reply.status).toBe(200);
      expect(await reply.json()).toEqual({ ok: true });
      expect(await getCheck(check)).toMatchObject({ state: 'up', last_checkin_at: expect.any(String) });
      expect(await pingsOf(check)).toEqual([{ id: expect.any(String), received_at: expect.any(String), status: 'ok', duration_ms: null, run_id: null, excerpt: null, source: 'http' }]);
    });

    test('a run: start, then an end with a text or form body, paired by run id; newest first with duration and excerpt', async () => {
      const check = await createCheck({ name: 'backup run' });
      expectAccepted(await ping(check, '?status=start&run_id=r1'));
      expectAccepted(await ping(check, '?run_id=r1', { body: 'backed up 3 databases\nall good\n', contentType: 'text/plain' }));
      // curl -d sends application/x-www-form-urlencoded: still the job's text
      expectAccepted(await ping(check, '?status=start&rid=r2'));
      expectAccepted(await ping(check, '?rid=r2', { body: 'rows=42&table=orders', contentType: 'application/x-www-form-urlencoded' }));

      const pings = await pingsOf(check);
      expect(pings.map((p) => [p.status, p.run_id, p.excerpt, p.source])).toEqual([
        ['ok', 'r2', 'rows=42&table=orders', 'http'],
        ['start', 'r2', null, 'http'],
        ['ok', 'r1', 'backed up 3 databases\nall good\n', 'http'],
        ['start', 'r1', null, 'http'],
      ]);
      const runs: Array<[end: PingJson, start: PingJson]> = [[pings[0]!, pings[1]!], [pings[2]!, pings[3]!]];
      for (const [end, start] of runs) {
        expect(start.duration_ms).toBeNull();
        expect(end.duration_ms).toBeGreaterThanOrEqual(0);
        expect(end.duration_ms).toBe(Date.parse(end.received_at) - Date.parse(start.received_at));
      }
      expect((await getCheck(check)).state).toBe('up');
    });

    test('a text body with NUL bytes (a binary tool\'s output) is kept with U+FFFD in their place; a JSON body with one is refused', async () => {
      const check = await createCheck({ name: 'dump' });
      expectAccepted(await ping(check, '', { body: 'dumped\u0000 3 tables\n', contentType: 'text/plain' }));
      expect((await pingsOf(check)).map((p) => [p.status, p.excerpt])).toEqual([['ok', 'dumped\uFFFD 3 tables\n']]);
      const refused = await ping(check, '', { body: { status: 'fail', message: 'disk\u0000full' } });
      expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 400, code: 'invalid_request' });
      expect(await pingsOf(check)).toHaveLength(1);
    });

    test('exit codes, JSON bodies and path suffixes say ok or fail; a failure is down at once', async () => {
      const check = await createCheck({ name: 'signals' });
      const steps: Array<[string, Parameters<typeof ping>[2], string]> = [
        ['?exit_code=0', {}, 'ok'],
        ['?exit_code=3', {}, 'fail'],
        ['', { body: { status: 'fail', message: 'disk full' } }, 'fail'],
        ['', { body: { status: 'start', run_id: 'j1' } }, 'start'],
        ['', { body: { exit_code: 0, run_id: 'j1' } }, 'ok'],
        ['/start', {}, 'start'],
        ['/0', {}, 'ok'],
        ['/2', {}, 'fail'],
        ['/fail', { method: 'POST' }, 'fail'],
        ['/ok', {}, 'ok'],
      ];
      const states: string[] = [];
      for (const [suffix, init] of steps) {
        expectAccepted(await ping(check, suffix, init));
        states.push((await getCheck(check)).state);
      }
      expect(states).toEqual(['up', 'down', 'down', 'down', 'up', 'up', 'up', 'down', 'down', 'up']);
      const pings = await pingsOf(check);
      expect(pings.map((p) => p.status)).toEqual(steps.map(([, , status]) => status).reverse());
      expect(pings.find((p) => p.excerpt === 'disk full')?.status).toBe('fail');
      expect(pings.filter((p) => p.run_id === 'j1').map((p) => p.status)).toEqual(['ok', 'start']);

      // each incident (from ?exit_code=3, from /2) opened one alert, and the ok after it resolved it
      const alerts = await alertsOf(check);
      expect(alerts.map((a: { status: string; details: { reason: string } }) => [a.status, a.details.reason])).toEqual([
        ['resolved', 'failed'],
        ['resolved', 'failed'],
      ]);
    });

    test('a JSON body whose fields have the wrong type is refused, not recorded', async () => {
      const check = await createCheck({ name: 'bad json' });
      for (const body of [{ status: 'sleeping' }, { message: 42 }, { exit_code: 300 }, { run_id: 7 }]) {
        const reply = await ping(check, '', { body });
        expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
      }
      expect(await pingsOf(check)).toEqual([]);
      expect((await getCheck(check)).state).toBe('new');
      // other JSON is the job's output, kept as text
      expectAccepted(await ping(check, '', { body: { rows: 42, table: 'orders' } }));
      expect((await pingsOf(check))[0]).toMatchObject({ status: 'ok', excerpt: '{"rows":42,"table":"orders"}' });
    });

    test('the excerpt keeps the first 10,000 bytes, never half a character', async () => {
      const check = await createCheck({ name: 'long output' });
      expectAccepted(await ping(check, '', { body: 'x'.repeat(12_000) }));
      expectAccepted(await ping(check, '', { body: '€'.repeat(4_000) })); // 3 bytes each: 3,333 fit
      // output that itself ends in U+FFFD (an undecodable byte) and fits is kept whole
      expectAccepted(await ping(check, '', { body: 'tail: \uFFFD' }));
      const [replacement, euros, xs] = await pingsOf(check);
      expect(xs!.excerpt).toBe('x'.repeat(10_000));
      expect(euros!.excerpt).toBe('€'.repeat(3_333));
      expect(replacement!.excerpt).toBe('tail: \uFFFD');
    });

    test('an unknown token answers 404 with the error body, on every check-in form', async () => {
      const token = unknownToken();
      tokensUsed.add(token);
      for (const reply of [
        await h.api.get(`/v1/checkins/${token}`),
        await h.api.post(`/v1/checkins/${token}`, 'done', { 'content-type': 'text/plain' }),
        await h.api.get(`/v1/checkins/${token}/start`),
        await h.api.get(`/v1/checkins/${token}/1`),
        await h.api.get('/v1/checkins/short'),
      ]) {
        expect(reply.status).toBe(404);
        expect(reply.body).toEqual({ code: 'not_found', message: expect.any(String), request_id: reply.headers.get('x-request-id') });
      }
    });

    test('rotate: the new ping URL works and the old one answers 404 at once', async () => {
      const check = await createCheck({ name: 'rotated' });
      expectAccepted(await ping(check));
      const rotated = await owner.client.post(`/v1/cron/checks/${check.id}/rotate`);
      expect(rotated.status).toBe(200);
      tokensUsed.add(tokenOf(rotated.body));
      expect(rotated.body).toMatchObject({ id: check.id, name: 'rotated', state: 'up' });
      expect(tokenOf(rotated.body)).toMatch(BASE62_TOKEN);
      expect(rotated.body.ping_url).not.toBe(check.ping_url);
      expect((await ping(check)).status).toBe(404);
      expectAccepted(await ping(rotated.body, '/fail'));
      expect((await pingsOf(check)).map((p) => p.status)).toEqual(['fail', 'ok']);
      expect((await getCheck(check)).ping_url).toBe(rotated.body.ping_url);
    });

    test('check-ins are rate limited per token: 429 rate_limited with Retry-After; another token is unaffected', async () => {
      const limited = await startHarness({ CHECKIN_RATE_LIMIT_PER_MINUTE: '3' });
      try {
        const client = limited.api.with({ cookie: owner.cookie, origin: DASHBOARD_ORIGIN });
        const busy = await createCheck({ name: 'busy job' }, client);
        const quiet = await createCheck({ name: 'quiet job' }, client);
        const call = (check: CheckJson, suffix = '') => limited.api.get(`${pingPath(check)}${suffix}`);
        for (const suffix of ['', '/start', '/0']) expectAccepted(await call(busy, suffix));
        const refused = await call(busy);
        expect(refused.status).toBe(429);
        expect(refused.body).toMatchObject({ code: 'rate_limited' });
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
        // a POST counts against the same token
        expect((await limited.api.post(pingPath(busy), 'late output', { 'content-type': 'text/plain' })).status).toBe(429);
        // the refused check-ins were not recorded
        expect((await pingsOf(busy)).map((p) => p.status)).toEqual(['ok', 'start', 'ok']);
        expectAccepted(await call(quiet));
        expect(limited.logs.text).not.toContain(tokenOf(busy));
      } finally {
        await limited.close();
      }
    });

    test('no check-in token reaches the logs, whatever the check-in answered', async () => {
      const check = await createCheck({ name: 'quiet logs' });
      const unknown = unknownToken();
      tokensUsed.add(unknown);
      const answers = [
        await ping(check, '?status=start&run_id=log-1'),
        await ping(check, '?run_id=log-1', { body: 'done' }),
        await ping(check, '/2'),
        await ping(check, '?exit_code=999'), // 400
        await ping(check, '?colour=red'), // 400
        await ping(check, '/sideways'), // 404
        await h.api.get(`/v1/checkins/${unknown}`), // 404
        // Express routes paths case-insensitively; a doubled slash reaches no route
        await h.api.get(`/v1/Checkins/${tokenOf(check)}`),
        await h.api.get(`/v1/checkins//${tokenOf(check)}`), // 404
      ];
      expect(answers.map((reply) => reply.status)).toEqual([200, 200, 200, 400, 400, 404, 404, 200, 404]);
      // the check-ins were logged, with the token replaced
      expect(h.logs.text).toContain('/v1/checkins/[redacted]');
      // neither these nor any other test's tokens
      for (const token of tokensUsed) expect(h.logs.text).not.toContain(token);
    });
  });

  // -------------------------------------------------------------------------------------------------
  describe('the state machine, with an injected clock', () => {
    const created: CheckJson[] = [];
    afterEach(async () => {
      for (const check of created.splice(0)) await owner.client.delete(`/v1/cron/checks/${check.id}`);
    });

    async function stateCheck(body: Record<string, unknown>) {
      const check = await createCheck(body);
      created.push(check);
      return check;
    }
    const checkIn = (check: CheckJson, at: string, status: CheckInInput['status'] = 'ok', extra: Partial<CheckInInput> = {}) =>
      checkInByToken(tokenOf(check), { status, source: 'http', ...extra }, new Date(at));
    const sweep = (at: string) => sweepChecks(new Date(at));

    test('up, late once the deadline passes, down (missed) once the margin passes: one alert however often it is swept; an ok resolves it', async () => {
      const check = await stateCheck({ name: 'hourly report', schedule: { type: 'crontab', value: '0 * * * *' }, checkin_margin: 5 });
      await checkIn(check, '2026-06-01T10:00:10Z');
      expect(await getCheck(check)).toMatchObject({ state: 'up', last_checkin_at: '2026-06-01T10:00:10.000Z', next_expected_at: '2026-06-01T11:00:00.000Z' });

      await sweep('2026-06-01T10:59:59Z');
      expect((await getCheck(check)).state).toBe('up');
      await sweep('2026-06-01T11:00:00Z');
      expect(await getCheck(check)).toMatchObject({ state: 'late', down_reason: null, next_expected_at: '2026-06-01T11:00:00.000Z' });
      await sweep('2026-06-01T11:04:59Z');
      expect((await getCheck(check)).state).toBe('late');
      expect(await alertsOf(check)).toEqual([]);

      // two sweeps at once (two worker processes) judge the same deadline
      await Promise.all([sweep('2026-06-01T11:05:00Z'), sweep('2026-06-01T11:05:00Z')]);
      expect(await getCheck(check)).toMatchObject({ state: 'down', down_reason: 'missed', next_expected_at: '2026-06-01T12:00:00.000Z' });
      for (const at of ['2026-06-01T11:05:01Z', '2026-06-01T11:06:00Z', '2026-06-01T11:30:00Z']) await sweep(at);
      await Promise.all([sweep('2026-06-01T11:31:00Z'), sweep('2026-06-01T11:31:00Z')]);

      const alerts = await alertsOf(check);
      expect(alerts).toEqual([
        expect.objectContaining({
          kind: 'cron.down',
          status: 'open',
          project_id: projectId,
          subject: { type: 'cron_check', id: check.id },
          title: expect.stringContaining('hourly report'),
          details: expect.objectContaining({ reason: 'missed', expected_at: '2026-06-01T11:00:00.000Z' }),
          opened_at: '2026-06-01T11:05:00.000Z',
          resolved_at: null,
        }),
      ]);
      expect((await pingsOf(check)).map((p) => [p.status, p.source, p.received_at])).toEqual([
        ['missed', 'monitor', '2026-06-01T11:05:00.000Z'],
        ['ok', 'http', '2026-06-01T10:00:10.000Z'],
      ]);

      // still silent at the next run: another missed ping, no second alert
      await Promise.all([sweep('2026-06-01T12:05:00Z'), sweep('2026-06-01T12:05:00Z')]);
      expect(await getCheck(check)).toMatchObject({ state: 'down', down_reason: 'missed', next_expected_at: '2026-06-01T13:00:00.000Z' });
      expect((await pingsOf(check)).map((p) => p.status)).toEqual(['missed', 'missed', 'ok']);
      expect(await alertsOf(check)).toHaveLength(1);

      await checkIn(check, '2026-06-01T12:10:00Z');
      expect(await getCheck(check)).toMatchObject({ state: 'up', down_reason: null, next_expected_at: '2026-06-01T13:00:00.000Z' });
      const [resolved] = await alertsOf(check);
      expect(resolved).toMatchObject({ status: 'resolved', resolved_at: '2026-06-01T12:10:00.000Z' });
      expect((await owner.client.get('/v1/alerts?kind=cron.down&status=open&limit=200')).body.data.filter((a: { subject: { id: string } }) => a.subject.id === check.id)).toEqual([]);
    });

    test('a fail check-in is down at once with one alert; deleting the check resolves it', async () => {
      const check = await stateCheck({ name: 'etl', schedule: { type: 'interval', value: 1, unit: 'day' } });
      await checkIn(check, '2026-06-02T08:00:00Z');
      await checkIn(check, '2026-06-03T08:00:00Z', 'fail', { excerpt: 'psql: connection refused' });
      expect(await getCheck(check)).toMatchObject({ state: 'down', down_reason: 'failed', next_expected_at: '2026-06-04T08:00:00.000Z' });
      await checkIn(check, '2026-06-03T08:05:00Z', 'fail');
      await sweep('2026-06-03T08:06:00Z');
      const alerts = await alertsOf(check);
      expect(alerts).toEqual([expect.objectContaining({ status: 'open', opened_at: '2026-06-03T08:00:00.000Z', details: expect.objectContaining({ reason: 'failed', excerpt: 'psql: connection refused' }) })]);

      expect((await owner.client.delete(`/v1/cron/checks/${check.id}`)).status).toBe(204);
      expect(await alertsOf(check)).toEqual([expect.objectContaining({ id: alerts[0].id, status: 'resolved' })]);
    });

    test('failures arriving at the same moment take the check down once: one alert, resolved by the next ok', async () => {
      const check = await stateCheck({ name: 'fan-out', schedule: { type: 'interval', value: 1, unit: 'hour' } });
      await checkIn(check, '2026-06-02T09:00:00Z');
      await Promise.all(Array.from({ length: 5 }, () => checkIn(check, '2026-06-02T09:30:00Z', 'fail')));
      expect(await alertsOf(check)).toEqual([expect.objectContaining({ status: 'open', details: expect.objectContaining({ reason: 'failed' }) })]);
      await checkIn(check, '2026-06-02T09:40:00Z');
      expect(await alertsOf(check)).toEqual([expect.objectContaining({ status: 'resolved', resolved_at: '2026-06-02T09:40:00.000Z' })]);
      const pings = (await owner.client.get(`/v1/cron/checks/${check.id}/pings?limit=10`)).body.data;
      expect(pings.map((p: { status: string }) => p.status)).toEqual(['ok', 'fail', 'fail', 'fail', 'fail', 'fail', 'ok']);
    });

    test('a start never ended is down (timed out) after max_runtime, with a timeout ping; one alert', async () => {
      const check = await stateCheck({ name: 'long job', schedule: { type: 'crontab', value: '0 * * * *' }, max_runtime: 20, checkin_margin: 5 });
      await checkIn(check, '2026-06-05T10:00:00Z');
      await checkIn(check, '2026-06-05T11:00:05Z', 'start', { runId: 'run-7' });
      expect((await getCheck(check)).state).toBe('up');
      await sweep('2026-06-05T11:20:04Z');
      expect((await getCheck(check)).state).toBe('up');
      await Promise.all([sweep('2026-06-05T11:20:05Z'), sweep('2026-06-05T11:20:05Z')]);
      expect(await getCheck(check)).toMatchObject({ state: 'down', down_reason: 'timed_out' });
      await sweep('2026-06-05T11:40:00Z');
      const pings = await pingsOf(check);
      expect(pings.map((p) => [p.status, p.source, p.run_id, p.duration_ms])).toEqual([
        ['timeout', 'monitor', 'run-7', 20 * MINUTE],
        ['start', 'http', 'run-7', null],
        ['ok', 'http', null, null],
      ]);
      expect(await alertsOf(check)).toEqual([expect.objectContaining({ status: 'open', details: expect.objectContaining({ reason: 'timed_out', started_at: '2026-06-05T11:00:05.000Z' }) })]);
      // the end, when it finally comes, brings it back up
      await checkIn(check, '2026-06-05T11:45:00Z', 'ok', { runId: 'run-7' });
      expect((await getCheck(check)).state).toBe('up');
      expect((await pingsOf(check))[0]).toMatchObject({ status: 'ok', run_id: 'run-7', duration_ms: 45 * MINUTE - 5_000 });
      expect((await alertsOf(check))[0].status).toBe('resolved');
    });

    test('a new check is never late or down before its first check-in', async () => {
      const check = await stateCheck({ name: 'not deployed yet', schedule: { type: 'interval', value: 5, unit: 'minute' } });
      for (const at of ['2026-06-06T00:00:00Z', '2026-06-07T00:00:00Z', '2026-07-06T00:00:00Z']) await sweep(at);
      expect(await getCheck(check)).toMatchObject({ state: 'new', last_checkin_at: null });
      expect(await pingsOf(check)).toEqual([]);
      expect(await alertsOf(check)).toEqual([]);
    });

    test('a paused check is never late or down, and check-ins while paused raise nothing', async () => {
      const check = await stateCheck({ name: 'paused job', schedule: { type: 'interval', value: 1, unit: 'hour' } });
      await checkIn(check, '2026-06-08T10:00:00Z');
      expect((await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: true })).body.state).toBe('paused');
      for (const at of ['2026-06-08T11:00:00Z', '2026-06-08T11:30:00Z', '2026-06-09T10:00:00Z']) await sweep(at);
      await checkIn(check, '2026-06-09T10:05:00Z', 'fail');
      await checkIn(check, '2026-06-09T10:06:00Z', 'start');
      await sweep('2026-06-09T12:00:00Z');
      expect((await getCheck(check)).state).toBe('paused');
      expect((await pingsOf(check)).map((p) => p.status)).toEqual(['start', 'fail', 'ok']);
      expect(await alertsOf(check)).toEqual([]);
      // resumed: new again, waiting for the next check-in
      expect((await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: false })).body.state).toBe('new');
      await sweep('2026-06-10T12:00:00Z');
      expect((await getCheck(check)).state).toBe('new');
      expect(await alertsOf(check)).toEqual([]);
    });

    test('a check down with an open alert, paused and resumed, does not leave that alert open behind a new incident', async () => {
      const check = await stateCheck({ name: 'flaky job', schedule: { type: 'interval', value: 1, unit: 'hour' } });
      await checkIn(check, '2026-06-11T10:00:00Z', 'fail');
      expect((await alertsOf(check)).map((a: { status: string }) => a.status)).toEqual(['open']);
      await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: true });
      await owner.client.patch(`/v1/cron/checks/${check.id}`, { paused: false });
      await checkIn(check, '2026-06-11T12:00:00Z', 'fail');
      await checkIn(check, '2026-06-11T13:00:00Z', 'ok');
      expect((await getCheck(check)).state).toBe('up');
      // the check is up: both incidents' alerts are resolved, none is left open
      expect((await alertsOf(check)).map((a: { status: string; opened_at: string }) => [a.opened_at, a.status])).toEqual([
        ['2026-06-11T12:00:00.000Z', 'resolved'],
        ['2026-06-11T10:00:00.000Z', 'resolved'],
      ]);
    });

    test('a daily 02:30 Europe/Berlin job checking in at its actual runs stays up across both 2026 daylight-saving changes', async () => {
      const check = await stateCheck({ name: 'berlin nightly', schedule: { type: 'crontab', value: '30 2 * * *' }, timezone: 'Europe/Berlin' });
      /**
       * Checks in at each night's actual run and sweeps from the first run to two hours after the last:
       * every 5 minutes (at 2 past) within 3 hours of a run, every 30 minutes in between.
       */
      async function nights(runs: Array<[run: string, expectedNext: string]>) {
        const [first, ...rest] = runs;
        await checkIn(check, first![0]);
        expect((await getCheck(check)).next_expected_at).toBe(first![1]);
        const pending = [...rest];
        const runTimes = runs.map(([run]) => Date.parse(run));
        const nearRun = (t: number) => runTimes.some((run) => Math.abs(t - run) <= 3 * HOUR);
        const end = runTimes.at(-1)! + 2 * HOUR;
        for (let t = runTimes[0]! + 2 * MINUTE; t <= end; t += nearRun(t) ? 5 * MINUTE : 30 * MINUTE) {
          while (pending.length > 0 && Date.parse(pending[0]![0]) <= t) {
            const [run, expectedNext] = pending.shift()!;
            await checkIn(check, run);
            expect({ run, next_expected_at: (await getCheck(check)).next_expected_at }).toEqual({ run, next_expected_at: expectedNext });
          }
          const verdicts = await sweepChecks(new Date(t));
          if (verdicts.late + verdicts.down > 0) throw new Error(`a sweep at ${iso(t)} judged ${JSON.stringify(verdicts)}: ${JSON.stringify(await getCheck(check))}`);
        }
        expect(await getCheck(check)).toMatchObject({ state: 'up', down_reason: null });
      }

      // spring forward on 29 March: 02:30 does not exist; the run is at 03:00 CEST
      await nights([
        ['2026-03-27T01:30:00Z', '2026-03-28T01:30:00.000Z'],
        ['2026-03-28T01:30:00Z', '2026-03-29T01:00:00.000Z'],
        ['2026-03-29T01:00:00Z', '2026-03-30T00:30:00.000Z'],
        ['2026-03-30T00:30:00Z', '2026-03-31T00:30:00.000Z'],
      ]);
      // fall back on 25 October: 02:30 happens twice; the run is at the first
      await nights([
        ['2026-10-24T00:30:00Z', '2026-10-25T00:30:00.000Z'],
        ['2026-10-25T00:30:00Z', '2026-10-26T01:30:00.000Z'],
        ['2026-10-26T01:30:00Z', '2026-10-27T01:30:00.000Z'],
      ]);
      const pings = await pingsOf(check);
      expect(pings.map((p) => p.status)).toEqual(Array(7).fill('ok'));
      expect(await alertsOf(check)).toEqual([]);
    }, 60_000);
  });

  // -------------------------------------------------------------------------------------------------
  describe('tenancy', () => {
    test("another organisation's check answers 404 exactly like a missing id", async () => {
      const check = await createCheck({ name: 'private job' });
      expectAccepted(await ping(check));
      const stranger = await signUp(h, 'stranger');
      const missing = new Types.ObjectId().toHexString();
      const attempts: Array<(id: string) => Promise<Reply>> = [
        (id) => stranger.client.get(`/v1/cron/checks/${id}`),
        (id) => stranger.client.patch(`/v1/cron/checks/${id}`, { name: 'mine now', paused: true }),
        (id) => stranger.client.get(`/v1/cron/checks/${id}/pings`),
        (id) => stranger.client.post(`/v1/cron/checks/${id}/rotate`),
        (id) => stranger.client.delete(`/v1/cron/checks/${id}`),
      ];
      for (const attempt of attempts) {
        const foreign = await attempt(check.id);
        const absent = await attempt(missing);
        expect(foreign.status).toBe(404);
        expect({ ...foreign.body, request_id: undefined }).toEqual({ ...absent.body, request_id: undefined });
      }
      expect((await stranger.client.get('/v1/cron/checks')).body.data).toEqual([]);
      expect((await stranger.client.get(`/v1/cron/checks?project=${projectId}`)).status).toBe(404);
      // nothing changed: same name, not paused, same token, history kept
      expect(await getCheck(check)).toMatchObject({ name: 'private job', state: 'up', ping_url: check.ping_url });
      expect(await pingsOf(check)).toHaveLength(1);
    });

    test('a DSN may not read or manage checks: 403 forbidden', async () => {
      const check = await createCheck({ name: 'dsn probe' });
      const [dsn] = (await owner.client.get(`/v1/projects/${projectId}/dsns`)).body.data;
      const withDsn = h.api.with({ authorization: `DSN ${dsn.public_key}` });
      for (const reply of [
        await withDsn.get('/v1/cron/checks'),
        await withDsn.get(`/v1/cron/checks/${check.id}`),
        await withDsn.get(`/v1/cron/checks/${check.id}/pings`),
        await withDsn.post('/v1/cron/checks', { project_id: projectId, name: 'by dsn', schedule: { type: 'crontab', value: '@daily' } }),
        await withDsn.post(`/v1/cron/checks/${check.id}/rotate`),
      ]) {
        expect(reply.status).toBe(403);
        expect(reply.body.code).toBe('forbidden');
      }
      expect((await getCheck(check)).ping_url).toBe(check.ping_url);
    });
  });
});

// ---------------------------------------------------------------------------------------------------
describe('Sentry SDK check-ins through the ingest service', () => {
  let h: Harness;
  useHarness((started) => (h = started), {}, { workers: true });

  test('a monitor_config creates the check; in_progress then ok are one run of two sdk pings; an unknown slug without a usable config creates nothing', async () => {
    const owner = await signUp(h);
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const send = async (items: Array<Record<string, unknown>>) => {
      const body = envelope({ sent_at: new Date().toISOString() }, items.map((payload) => ({ type: 'check_in', payload })));
      const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, body, { 'content-type': 'application/x-sentry-envelope' });
      expect(reply.status).toBe(200);
    };
    const monitorConfig = { schedule: { type: 'crontab', value: '0 3 * * *' }, checkin_margin: 7, max_runtime: 45, timezone: 'America/New_York' };
    const checkInId = hex(16);
    const ghostId = hex(16);
    await send([
      { check_in_id: ghostId, monitor_slug: 'ghost-job', status: 'ok' },
      // configs no check could run on are ignored: these slugs are unknown, so dropped too
      { check_in_id: hex(16), monitor_slug: 'unreadable-schedule', status: 'in_progress', monitor_config: { schedule: { type: 'crontab', value: '0 3 * *' } } },
      { check_in_id: hex(16), monitor_slug: 'eons-apart', status: 'ok', monitor_config: { schedule: { type: 'interval', value: 1e9, unit: 'year' } } },
      { check_in_id: checkInId, monitor_slug: 'billing-sync', status: 'in_progress', monitor_config: monitorConfig },
    ]);
    // the job's end comes after its start was stored, as an SDK's does
    await eventually(async () => {
      const found = ((await owner.client.get(`/v1/cron/checks?project=${project.id}`)).body.data as CheckJson[]).find((c) => c.slug === 'billing-sync');
      return found && (await owner.client.get(`/v1/cron/checks/${found.id}/pings`)).body.data.length === 1 ? true : undefined;
    }, 'the start stored');
    await send([{ check_in_id: checkInId, monitor_slug: 'billing-sync', status: 'ok', duration: 2.5, monitor_config: monitorConfig }]);

    const check = await eventually(async () => {
      const reply = await owner.client.get(`/v1/cron/checks?project=${project.id}`);
      if (reply.status !== 200) throw new Error(`the list answered ${reply.status} ${reply.text}`);
      const found = (reply.body.data as CheckJson[]).find((c) => c.slug === 'billing-sync');
      if (!found) return undefined;
      const pings = (await owner.client.get(`/v1/cron/checks/${found.id}/pings`)).body.data;
      return pings.length >= 2 ? found : undefined;
    }, 'the check and its two check-ins');
    expect(check).toMatchObject({
      project_id: project.id,
      slug: 'billing-sync',
      schedule: { type: 'crontab', value: '0 3 * * *' },
      timezone: 'America/New_York',
      checkin_margin: 7,
      max_runtime: 45,
      state: 'up',
    });
    // the next run is 03:00 in New York after the check-in
    expect(check.next_expected_at).toBe(nextRun({ type: 'crontab', value: '0 3 * * *' }, 'America/New_York', new Date(check.last_checkin_at!)).toISOString());
    const pings: PingJson[] = (await owner.client.get(`/v1/cron/checks/${check.id}/pings`)).body.data;
    expect(pings.map((p) => [p.status, p.source, p.run_id, p.duration_ms])).toEqual([
      ['ok', 'sdk', checkInId, 2500],
      ['start', 'sdk', checkInId, null],
    ]);
    // the others came in the first envelope, before the check's start: long handled by now
    const all = await owner.client.get(`/v1/cron/checks?project=${project.id}`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((c: CheckJson) => c.slug)).toEqual(['billing-sync']);
  }, 30_000);
});
