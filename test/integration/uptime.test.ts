/**
 * Uptime monitors: the API (create, list, change, pause, delete, probe results) and probes of loopback
 * services started here, through the real outbound guard. Three harnesses, one after the other (each
 * drops its database when done):
 *
 * - the guard at the door: default configuration (nothing allow-listed), so every loopback, private,
 *   metadata and oddly spelled address is refused when a monitor is created or changed;
 * - monitors and probes: OUTBOUND_ALLOWLIST=127.0.0.1 and no workers, so nothing probes but the test:
 *   it runs the probe job's function (`probeMonitor`) itself with an injected clock, which makes
 *   threshold sequences, re-probe times and concurrent turns exact;
 * - the probe scheduler: workers on, monitors created over HTTP and probed by the real 5-second tick.
 */
import type { z } from 'zod';
import type { alertJson } from '../../src/shared/features/alerts/schemas.js';
import { Types } from 'mongoose';
import { createOutbound, parseAllowlist } from '../../src/shared/clients/outbound.js';
import { createSecretBox } from '../../src/shared/clients/secret-box.js';
import { UptimeCheck, UptimeMonitor } from '../../src/shared/features/uptime/model.js';
import { probeMonitor, sealStoredHeaders } from '../../src/shared/features/uptime/service.js';
import { addMember, createProject, signUp, type Account } from '../support/factories/accounts.js';
import { type Harness, useHarness } from '../support/harness.js';
import { selfSignedCertificate, targetPool, type Target } from '../support/targets.js';
import { eventually } from '../support/wait.js';

interface MonitorJson {
  id: string;
  project_id: string;
  url: string;
  state: 'pending' | 'up' | 'down' | 'paused';
  last_checked_at: string | null;
  last_error: string | null;
  next_check_at: string | null;
  tls_expires_at: string | null;
  created_at: string;
  [field: string]: unknown;
}
interface ProbeResultJson {
  id: string;
  checked_at: string;
  ok: boolean;
  status_code: number | null;
  latency_ms: number | null;
  error: string | null;
  tls_days_left: number | null;
}
type AlertJson = z.infer<typeof alertJson>;

const SECOND = 1000;
const DAY_MS = 86_400_000;
const targets = targetPool();
afterAll(() => targets.closeAll());

async function createMonitor(account: Account, projectId: string, fields: Record<string, unknown>): Promise<MonitorJson> {
  const reply = await account.client.post('/v1/uptime/monitors', { project_id: projectId, name: 'storefront', ...fields });
  if (reply.status !== 201) throw new Error(`create monitor failed: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function monitorOf(account: Account, id: string): Promise<MonitorJson> {
  const reply = await account.client.get(`/v1/uptime/monitors/${id}`);
  expect(reply.status).toBe(200);
  return reply.body;
}

async function probeResults(account: Account, id: string): Promise<ProbeResultJson[]> {
  const reply = await account.client.get(`/v1/uptime/monitors/${id}/checks`);
  expect(reply.status).toBe(200);
  return reply.body.data;
}

async function alertsAbout(account: Account, monitorId: string, kind: 'uptime.down' | 'uptime.tls_expiring'): Promise<AlertJson[]> {
  const reply = await account.client.get(`/v1/alerts?kind=${kind}&limit=200`);
  expect(reply.status).toBe(200);
  return (reply.body.data as AlertJson[]).filter((alert) => alert.subject.type === 'uptime_monitor' && alert.subject.id === monitorId);
}

/** The details paths of a 400 validation_failed answer (anything else fails the test). */
function failedPaths(reply: { status: number; body: { code?: string; details?: { path: string }[] } }) {
  return { status: reply.status, code: reply.body.code, paths: (reply.body.details ?? []).map((detail) => detail.path) };
}

describe('the outbound guard at the door (nothing allow-listed)', () => {
  let h: Harness;
  let owner: Account;
  let project: { id: string };
  useHarness((started) => (h = started));
  beforeAll(async () => {
    owner = await signUp(h);
    project = await createProject(owner);
  });

  const forbidden = [
    'http://127.0.0.1/',
    'http://localhost/',
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://192.168.1.1/',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/',
    'http://0.0.0.0/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[64:ff9b::7f00:1]/',
    'http://[fd00:ec2::254]/',
    'http://224.0.0.1/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://017700000001/',
  ];

  test('a monitor of a loopback, private, metadata or multicast address is refused, however it is spelled', async () => {
    for (const url of forbidden) {
      const reply = await owner.client.post('/v1/uptime/monitors', { project_id: project.id, name: 'internal', url });
      expect({ url, ...failedPaths(reply) }).toEqual({ url, status: 400, code: 'validation_failed', paths: ['body.url'] });
    }
    const listed = await owner.client.get(`/v1/uptime/monitors?project_id=${project.id}`);
    expect(listed.body.data).toEqual([]);
  });

  test('changing a monitor to such an address is refused and leaves it as it was', async () => {
    const monitor = await createMonitor(owner, project.id, { url: 'https://status.example.com/health' });
    for (const url of forbidden) {
      const reply = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { url });
      expect({ url, ...failedPaths(reply) }).toEqual({ url, status: 400, code: 'validation_failed', paths: ['body.url'] });
    }
    expect(await monitorOf(owner, monitor.id)).toEqual(monitor);
  });
});

describe('monitors and their probes (OUTBOUND_ALLOWLIST=127.0.0.1, probes run by the test)', () => {
  let h: Harness;
  let owner: Account;
  let stranger: Account;
  let project: { id: string };
  let up: Target;
  // The probe job's own function, with the guard the workers build from OUTBOUND_ALLOWLIST=127.0.0.1 and their secret box.
  let deps: Parameters<typeof probeMonitor>[2];
  useHarness((started) => (h = started), { OUTBOUND_ALLOWLIST: '127.0.0.1' });
  beforeAll(async () => {
    deps = { outbound: createOutbound({ allowlist: parseAllowlist('127.0.0.1') }), secrets: createSecretBox(h.config), tlsWarnDays: 14 };
    [owner, stranger] = await Promise.all([signUp(h), signUp(h, 'stranger')]);
    project = await createProject(owner);
    up = await targets.start({ body: 'all systems operational' });
  });

  /** Probe times a minute apart, after anything created in real time. */
  let clock = Date.now();
  const nextMinute = () => new Date((clock += 60 * SECOND));
  const dueOf = async (id: string) => (await UptimeMonitor.findById(id).lean())!.nextProbeAt.getTime();
  /** Runs the monitor's due turn as the worker would, at `at`. */
  const probeAt = async (id: string, at = nextMinute()) => probeMonitor(id, await dueOf(id), deps, () => at);

  describe('the API', () => {
    test('a new monitor answers 201 with the defaults, pending and due at once', async () => {
      const before = Date.now();
      const reply = await owner.client.post('/v1/uptime/monitors', { project_id: project.id, name: 'storefront', url: `${up.url}/health` });
      expect(reply.status).toBe(201);
      expect(reply.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{24}$/),
        project_id: project.id,
        name: 'storefront',
        url: `${up.url}/health`,
        method: 'GET',
        headers: {},
        body: null,
        interval_seconds: 60,
        timeout_ms: 10_000,
        expected_status: ['200-299'],
        keyword: null,
        keyword_absent: null,
        max_redirects: 10,
        failure_threshold: 2,
        recovery_threshold: 1,
        verify_tls: true,
        state: 'pending',
        last_checked_at: null,
        last_error: null,
        next_check_at: reply.body.created_at,
        tls_expires_at: null,
        created_at: expect.any(String),
      });
      expect(Date.parse(reply.body.created_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(reply.body.created_at)).toBeLessThanOrEqual(Date.now() + 1000);
      expect(await monitorOf(owner, reply.body.id)).toEqual(reply.body);
      expect(await probeResults(owner, reply.body.id)).toEqual([]);
    });

    test('every field given is kept, header names with dots included (header values read back masked)', async () => {
      const fields = {
        name: 'orders API',
        url: `${up.url}/orders?probe=1`,
        method: 'POST',
        headers: { 'X-Probe.Token': 'abc', Accept: 'text/plain' },
        body: '{"ping":true}',
        interval_seconds: 30,
        timeout_ms: 2500,
        expected_status: [200, '3xx', '400-404'],
        keyword: 'operational',
        keyword_absent: 'maintenance',
        max_redirects: 0,
        failure_threshold: 3,
        recovery_threshold: 2,
        verify_tls: false,
      };
      const monitor = await createMonitor(owner, project.id, fields);
      const masked = { ...fields, headers: { 'X-Probe.Token': '[Filtered]', Accept: '[Filtered]' } };
      expect(monitor).toMatchObject({ ...masked, state: 'pending' });
      expect(await monitorOf(owner, monitor.id)).toMatchObject(masked);
    });

    test('the list filters by project and state and pages with a cursor, oldest first', async () => {
      // One after the other: two projects created at once clash on their ingest number (see the report).
      const listed = await createProject(owner);
      const other = await createProject(owner);
      const failing = await targets.start({ status: 500 });
      const created: MonitorJson[] = [];
      for (const [name, url] of [['pending', up.url], ['up', up.url], ['down', failing.url], ['paused', up.url]] as const) {
        created.push(await createMonitor(owner, listed.id, { name, url, failure_threshold: 1 }));
      }
      const elsewhere = await createMonitor(owner, other.id, { url: up.url });
      const [pending, isUp, down, paused] = created as [MonitorJson, MonitorJson, MonitorJson, MonitorJson];
      expect((await probeAt(isUp.id))?.ok).toBe(true);
      expect((await probeAt(down.id))?.ok).toBe(false);
      expect((await owner.client.patch(`/v1/uptime/monitors/${paused.id}`, { paused: true })).body.state).toBe('paused');

      const ids = async (query: string) => {
        const reply = await owner.client.get(`/v1/uptime/monitors?${query}`);
        expect(reply.status).toBe(200);
        return (reply.body.data as MonitorJson[]).map((m) => m.id);
      };
      expect(await ids(`project_id=${listed.id}`)).toEqual(created.map((m) => m.id));
      expect(await ids(`project_id=${other.id}`)).toEqual([elsewhere.id]);
      expect(await ids(`project=${listed.id}&project=${other.id}`)).toEqual([...created.map((m) => m.id), elsewhere.id]);
      expect(await ids(`project_id=${listed.id}&state=pending`)).toEqual([pending.id]);
      expect(await ids(`project_id=${listed.id}&state=up`)).toEqual([isUp.id]);
      expect(await ids(`project_id=${listed.id}&state=down`)).toEqual([down.id]);
      expect(await ids(`project_id=${listed.id}&state=paused`)).toEqual([paused.id]);

      const first = await owner.client.get(`/v1/uptime/monitors?project_id=${listed.id}&limit=3`);
      expect(first.body.data.map((m: MonitorJson) => m.id)).toEqual(created.slice(0, 3).map((m) => m.id));
      expect(first.body.next_cursor).toEqual(expect.any(String));
      const second = await owner.client.get(`/v1/uptime/monitors?project_id=${listed.id}&limit=3&cursor=${first.body.next_cursor}`);
      expect({ ids: second.body.data.map((m: MonitorJson) => m.id), next: second.body.next_cursor }).toEqual({ ids: [paused.id], next: null });

      expect((await owner.client.get('/v1/uptime/monitors?state=sideways')).status).toBe(400);
      expect((await owner.client.get(`/v1/uptime/monitors?project_id=${new Types.ObjectId().toHexString()}`)).status).toBe(404);
    });

    test('pausing stops probes and clears the next check; resuming makes it due at once', async () => {
      const monitor = await createMonitor(owner, project.id, { url: up.url });
      const paused = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { paused: true });
      expect(paused.status).toBe(200);
      expect(paused.body).toMatchObject({ state: 'paused', next_check_at: null });
      expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'paused', next_check_at: null });

      // A probe job for the turn it had before the pause finds nothing to do.
      const requestsBefore = up.requests.length;
      expect(await probeMonitor(monitor.id, Date.parse(monitor.next_check_at!), deps, nextMinute)).toBeUndefined();
      expect(await probeResults(owner, monitor.id)).toEqual([]);
      expect(up.requests.length).toBe(requestsBefore);

      const before = Date.now();
      const resumed = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { paused: false });
      expect(resumed.body.state).toBe('pending');
      expect(Date.parse(resumed.body.next_check_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(resumed.body.next_check_at)).toBeLessThanOrEqual(Date.now() + 1000);
    });

    test('a new URL starts the monitor over: pending, due at once', async () => {
      const monitor = await createMonitor(owner, project.id, { url: up.url });
      await probeAt(monitor.id);
      expect((await monitorOf(owner, monitor.id)).state).toBe('up');

      const before = Date.now();
      const moved = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { url: `${up.url}/v2/health`, name: 'storefront v2' });
      expect(moved.status).toBe(200);
      expect(moved.body).toMatchObject({ url: `${up.url}/v2/health`, name: 'storefront v2', state: 'pending' });
      expect(Date.parse(moved.body.next_check_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(moved.body.next_check_at)).toBeLessThanOrEqual(Date.now() + 1000);

      // A change that is not the target keeps the state.
      const renamed = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { name: 'shop', timeout_ms: 5000 });
      expect(renamed.body).toMatchObject({ name: 'shop', timeout_ms: 5000, state: 'pending', next_check_at: moved.body.next_check_at });
    });

    test('a shorter interval brings the next probe forward; a longer one does not put it off', async () => {
      const monitor = await createMonitor(owner, project.id, { url: up.url, interval_seconds: 86_400 });
      const at = nextMinute();
      await probeAt(monitor.id, at);
      const plus = (seconds: number) => new Date(at.getTime() + seconds * SECOND).toISOString();
      expect((await monitorOf(owner, monitor.id)).next_check_at).toBe(plus(86_400));

      const shorter = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { interval_seconds: 60 });
      expect(shorter.body).toMatchObject({ interval_seconds: 60, state: 'up', next_check_at: plus(60) });
      const longer = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { interval_seconds: 3600 });
      expect(longer.body).toMatchObject({ interval_seconds: 3600, next_check_at: plus(60) });
    });

    test('deleting a monitor removes it and its probe results, and ends its open alert', async () => {
      const failing = await targets.start({ status: 503 });
      const monitor = await createMonitor(owner, project.id, { url: failing.url, failure_threshold: 1 });
      await probeAt(monitor.id);
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['open']);

      expect((await owner.client.delete(`/v1/uptime/monitors/${monitor.id}`)).status).toBe(204);
      expect((await owner.client.get(`/v1/uptime/monitors/${monitor.id}`)).status).toBe(404);
      expect((await owner.client.get(`/v1/uptime/monitors/${monitor.id}/checks`)).status).toBe(404);
      expect((await owner.client.delete(`/v1/uptime/monitors/${monitor.id}`)).status).toBe(404);
      const listed = await owner.client.get(`/v1/uptime/monitors?project_id=${project.id}&limit=200`);
      expect(listed.body.data.map((m: MonitorJson) => m.id)).not.toContain(monitor.id);
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['resolved']);
    });

    test('a probe outlived by a change of URL or a delete leaves no trace: no state, no alert, no result of a deleted monitor', async () => {
      const slow = await targets.start({ status: 500, delayMs: 400 });
      const moved = await createMonitor(owner, project.id, { url: slow.url, failure_threshold: 1 });
      const probing = probeAt(moved.id);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await owner.client.patch(`/v1/uptime/monitors/${moved.id}`, { url: `${up.url}/health` })).status).toBe(200);
      await probing;
      expect(await monitorOf(owner, moved.id)).toMatchObject({ state: 'pending', url: `${up.url}/health`, last_checked_at: null });
      expect(await alertsAbout(owner, moved.id, 'uptime.down')).toEqual([]);

      const removed = await createMonitor(owner, project.id, { url: slow.url, failure_threshold: 1 });
      const probingRemoved = probeAt(removed.id);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await owner.client.delete(`/v1/uptime/monitors/${removed.id}`)).status).toBe(204);
      await probingRemoved;
      expect(await UptimeCheck.countDocuments({ monitorId: removed.id })).toBe(0);
      expect(await alertsAbout(owner, removed.id, 'uptime.down')).toEqual([]);
    });

    test('invalid fields answer validation_failed naming each field', async () => {
      const base = { project_id: project.id, name: 'storefront', url: up.url };
      const cases: [Record<string, unknown>, string][] = [
        [{ ...base, interval_seconds: 29 }, 'body.interval_seconds'],
        [{ ...base, expected_status: ['abc'] }, 'body.expected_status.0'],
        [{ ...base, expected_status: [700] }, 'body.expected_status.0'],
        [{ ...base, expected_status: [] }, 'body.expected_status'],
        [{ ...base, colour: 'red' }, 'body'],
        [{ ...base, url: 'ftp://files.example.com/' }, 'body.url'],
        [{ ...base, url: 'not a url' }, 'body.url'],
        [{ ...base, timeout_ms: 50 }, 'body.timeout_ms'],
        // a range that matches no status would keep the monitor down whatever the service answers
        [{ ...base, expected_status: ['299-200'] }, 'body.expected_status.0'],
        // "the keyword must not appear" without a keyword would check nothing
        [{ ...base, keyword_absent: true }, 'body.keyword_absent'],
        // a HEAD answer has no body: a keyword rule would fail every probe
        [{ ...base, method: 'HEAD', keyword: 'ok' }, 'body.method'],
        // Node refuses such a header on every request: the monitor could never pass
        [{ ...base, headers: { 'X-Note': 'a\r\nHost: internal' } }, 'body.headers.X-Note'],
      ];
      for (const [body, path] of cases) {
        const reply = await owner.client.post('/v1/uptime/monitors', body);
        expect({ body, ...failedPaths(reply) }).toEqual({ body, status: 400, code: 'validation_failed', paths: [path] });
      }
      const unknown = await owner.client.post('/v1/uptime/monitors', { ...base, colour: 'red' });
      expect(unknown.body.details).toEqual([{ path: 'body', message: 'unknown colour' }]);

      const monitor = await createMonitor(owner, project.id, { url: up.url });
      const patches = [
        [{ interval_seconds: 29 }, 'body.interval_seconds'],
        [{ state: 'up' }, 'body'],
        [{ url: 'file:///etc/passwd' }, 'body.url'],
        [{ keyword_absent: true }, 'body.keyword_absent'],
        [{ method: 'HEAD', keyword_absent: 'error' }, 'body.method'],
      ] as const;
      for (const [body, path] of patches) {
        const reply = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, body);
        expect({ body, ...failedPaths(reply) }).toEqual({ body, status: 400, code: 'validation_failed', paths: [path] });
      }
      expect(await monitorOf(owner, monitor.id)).toEqual(monitor);

      // With a keyword, `true` is fine; dropping the keyword it refers to is not.
      const absent = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { keyword: 'error', keyword_absent: true });
      expect(absent.body).toMatchObject({ keyword: 'error', keyword_absent: true });
      expect(failedPaths(await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { keyword: null }))).toEqual({ status: 400, code: 'validation_failed', paths: ['body.keyword_absent'] });
    });

    test("another organisation's monitor is not found, exactly like a missing one", async () => {
      const monitor = await createMonitor(owner, project.id, { url: up.url });
      const missing = new Types.ObjectId().toHexString();
      const answer = async (account: Account, method: string, path: string, body?: unknown) => {
        const reply = await account.client.request(method, path, body);
        return { status: reply.status, code: reply.body?.code, message: reply.body?.message };
      };
      for (const [method, suffix, body] of [['GET', ''], ['PATCH', '', { name: 'mine now' }], ['DELETE', ''], ['GET', '/checks']] as const) {
        const theirs = await answer(stranger, method, `/v1/uptime/monitors/${monitor.id}${suffix}`, body);
        expect(theirs).toEqual(await answer(stranger, method, `/v1/uptime/monitors/${missing}${suffix}`, body));
        expect(theirs.status).toBe(404);
      }
      expect((await stranger.client.get('/v1/uptime/monitors')).body.data).toEqual([]);
      expect((await stranger.client.post('/v1/uptime/monitors', { project_id: project.id, name: 'x', url: up.url })).status).toBe(404);
      expect(await monitorOf(owner, monitor.id)).toEqual(monitor);
    });
  });

  describe('header values (credentials a member must not read)', () => {
    const SECRET = 'Bearer s3cret-probe-credential';
    const storedText = async (id: string) => JSON.stringify(await UptimeMonitor.findById(id).lean());

    test('every role reads header values masked, they are sealed at rest, and the probe sends the real value', async () => {
      const member = await addMember(h, owner, 'member');
      const monitor = await createMonitor(owner, project.id, { url: `${up.url}/private`, headers: { Authorization: SECRET, 'X-Team': 'checkout' } });
      const masked = { Authorization: '[Filtered]', 'X-Team': '[Filtered]' };
      expect(monitor.headers).toEqual(masked);
      expect((await monitorOf(member, monitor.id)).headers).toEqual(masked);
      const listed = await member.client.get(`/v1/uptime/monitors?project_id=${project.id}`);
      expect(listed.status).toBe(200);
      expect(listed.text).not.toContain('s3cret');
      expect(await storedText(monitor.id)).not.toContain('s3cret');
      expect(await storedText(monitor.id)).not.toContain('checkout');

      expect(await probeAt(monitor.id)).toMatchObject({ ok: true });
      const seen = up.requests.at(-1)!;
      expect([seen.path, seen.headers.authorization, seen.headers['x-team']]).toEqual(['/private', SECRET, 'checkout']);
    });

    test('an update that sends a masked value back keeps the stored value; a new value replaces it; a mask for a header never stored is refused', async () => {
      const monitor = await createMonitor(owner, project.id, { url: `${up.url}/round-trip`, headers: { Authorization: SECRET, 'X-Team': 'checkout' } });
      // what a form does: the monitor as read, sent back with one field changed
      const { headers } = await monitorOf(owner, monitor.id);
      const renamed = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { name: 'renamed', headers });
      expect(renamed.status).toBe(200);
      expect(renamed.body.headers).toEqual({ Authorization: '[Filtered]', 'X-Team': '[Filtered]' });
      await probeAt(monitor.id);
      expect([up.requests.at(-1)!.headers.authorization, up.requests.at(-1)!.headers['x-team']]).toEqual([SECRET, 'checkout']);

      // the mask keeps a header whatever the case of its name; X-Team is dropped; X-Region is new
      const changed = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { headers: { authorization: '[Filtered]', 'X-Region': 'eu-west' } });
      expect(changed.body.headers).toEqual({ authorization: '[Filtered]', 'X-Region': '[Filtered]' });
      await probeAt(monitor.id);
      const seen = up.requests.at(-1)!.headers;
      expect([seen.authorization, seen['x-region'], seen['x-team']]).toEqual([SECRET, 'eu-west', undefined]);

      const refused = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { headers: { 'X-Api-Key': '[Filtered]' } });
      expect(failedPaths(refused)).toEqual({ status: 400, code: 'validation_failed', paths: ['body.headers.X-Api-Key'] });
      expect(refused.body.request_id).toEqual(expect.any(String));
      expect((await monitorOf(owner, monitor.id)).headers).toEqual({ authorization: '[Filtered]', 'X-Region': '[Filtered]' });
    });

    test('a monitor stored before sealing keeps probing with its plain value, reads masked, and is sealed at its next change', async () => {
      const monitor = await createMonitor(owner, project.id, { url: `${up.url}/legacy` });
      // as a release before sealing stored it
      await UptimeMonitor.updateOne({ _id: monitor.id }, { $set: { headers: [{ name: 'Authorization', value: 'Bearer legacy-credential' }] } });
      expect((await monitorOf(owner, monitor.id)).headers).toEqual({ Authorization: '[Filtered]' });
      await probeAt(monitor.id);
      expect(up.requests.at(-1)!.headers.authorization).toBe('Bearer legacy-credential');

      expect((await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { name: 'legacy' })).status).toBe(200);
      expect(await storedText(monitor.id)).not.toContain('legacy-credential');
      await probeAt(monitor.id);
      expect(up.requests.at(-1)!.headers.authorization).toBe('Bearer legacy-credential');
    });

    test('what workers do once at start after an upgrade: plaintext header values are sealed in place, and probes still send them', async () => {
      const monitor = await createMonitor(owner, project.id, { url: `${up.url}/upgraded` });
      await UptimeMonitor.updateOne({ _id: monitor.id }, { $set: { headers: [{ name: 'X-Api-Key', value: 'plain-upgrade-key' }] } });
      expect(await sealStoredHeaders(createSecretBox(h.config))).toBeGreaterThanOrEqual(1);
      expect(await storedText(monitor.id)).not.toContain('plain-upgrade-key');
      expect((await monitorOf(owner, monitor.id)).headers).toEqual({ 'X-Api-Key': '[Filtered]' });
      await probeAt(monitor.id);
      expect(up.requests.at(-1)!.headers['x-api-key']).toBe('plain-upgrade-key');
      expect(await sealStoredHeaders(createSecretBox(h.config))).toBe(0);
    });
  });

  describe('probes', () => {
    test('a healthy service: the probe records status and latency and the monitor is up at its first success', async () => {
      // recovery_threshold is for coming back from down: a new monitor is up on its first success
      const monitor = await createMonitor(owner, project.id, { url: `${up.url}/health`, keyword: 'operational', headers: { 'X-Probe.Token': 'abc' }, recovery_threshold: 3 });
      const at = nextMinute();
      expect(await probeAt(monitor.id, at)).toMatchObject({ ok: true, statusCode: 200 });

      const [result, ...older] = await probeResults(owner, monitor.id);
      expect(older).toEqual([]);
      expect(result).toEqual({ id: expect.any(String), checked_at: at.toISOString(), ok: true, status_code: 200, latency_ms: expect.any(Number), error: null, tls_days_left: null });
      expect(result!.latency_ms).toBeGreaterThanOrEqual(0);
      expect(result!.latency_ms).toBeLessThan(5000);
      expect(await monitorOf(owner, monitor.id)).toMatchObject({
        state: 'up',
        last_checked_at: at.toISOString(),
        last_error: null,
        next_check_at: new Date(at.getTime() + 60 * SECOND).toISOString(),
      });
      const seen = up.requests.at(-1)!;
      expect({ method: seen.method, path: seen.path, agent: seen.headers['user-agent'], token: seen.headers['x-probe.token'] }).toEqual({
        method: 'GET',
        path: '/health',
        agent: 'Sluice-Uptime/1',
        token: 'abc',
      });
    });

    test('a failing service goes down with one alert naming the error, and recovers when it answers again', async () => {
      const service = await targets.start({ status: 500, body: 'internal error' });
      const monitor = await createMonitor(owner, project.id, { name: 'checkout', url: service.url, failure_threshold: 1 });
      await probeAt(monitor.id);
      expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'down', last_error: 'status 500 is not one of 200-299' });
      const [result] = await probeResults(owner, monitor.id);
      expect(result).toMatchObject({ ok: false, status_code: 500, error: 'status 500 is not one of 200-299' });

      // Still down on the next probe: the same incident, no second alert.
      await probeAt(monitor.id);
      const [alert, ...more] = await alertsAbout(owner, monitor.id, 'uptime.down');
      expect(more).toEqual([]);
      expect(alert).toMatchObject({
        kind: 'uptime.down',
        status: 'open',
        project_id: project.id,
        subject: { type: 'uptime_monitor', id: monitor.id },
        title: 'checkout is down: status 500 is not one of 200-299',
        details: { url: service.url, error: 'status 500 is not one of 200-299', status_code: 500 },
        resolved_at: null,
      });

      service.answer({ status: 200, body: 'back' });
      const recoveredAt = nextMinute();
      await probeAt(monitor.id, recoveredAt);
      expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'up', last_error: null });
      expect(await alertsAbout(owner, monitor.id, 'uptime.down')).toEqual([{ ...alert, status: 'resolved', resolved_at: recoveredAt.toISOString(), details: expect.objectContaining({ status_code: 200 }) }]);

      // The next outage is a new incident with its own alert.
      service.answer({ status: 502 });
      await probeAt(monitor.id);
      const alerts = await alertsAbout(owner, monitor.id, 'uptime.down');
      expect(alerts.map((a) => [a.status, a.title])).toEqual([
        ['open', 'checkout is down: status 502 is not one of 200-299'],
        ['resolved', 'checkout is down: status 500 is not one of 200-299'],
      ]);
    });

    test('pointing a down monitor at a new URL ends the old incident: one open alert at a time', async () => {
      const [before, after] = await Promise.all([targets.start({ status: 500 }), targets.start({ status: 503 })]);
      const monitor = await createMonitor(owner, project.id, { name: 'search', url: before.url, failure_threshold: 1 });
      await probeAt(monitor.id);
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['open']);

      expect((await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { url: after.url })).body.state).toBe('pending');
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['resolved']);
      // The new URL fails too: a new incident, and the old one is not left open beside it.
      await probeAt(monitor.id);
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => [a.status, a.title])).toEqual([
        ['open', 'search is down: status 503 is not one of 200-299'],
        ['resolved', 'search is down: status 500 is not one of 200-299'],
      ]);
      // …and recovering closes it.
      after.answer({ status: 200 });
      await probeAt(monitor.id);
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['resolved', 'resolved']);
    });

    test('failure and recovery thresholds: down after 3 failures in a row, failing probes re-run 10 s later, up after 2 successes', async () => {
      const service = await targets.start({ status: 500 });
      const monitor = await createMonitor(owner, project.id, { url: service.url, failure_threshold: 3, recovery_threshold: 2, interval_seconds: 120 });
      const state = async () => {
        const m = await monitorOf(owner, monitor.id);
        return { state: m.state, next: m.next_check_at };
      };
      const plus = (at: Date, ms: number) => new Date(at.getTime() + ms).toISOString();

      // Not yet down: each failure is confirmed 10 s later instead of after the 120 s interval.
      for (const failure of [1, 2]) {
        const at = nextMinute();
        await probeAt(monitor.id, at);
        expect({ failure, ...(await state()) }).toEqual({ failure, state: 'pending', next: plus(at, 10 * SECOND) });
      }
      expect(await alertsAbout(owner, monitor.id, 'uptime.down')).toEqual([]);

      const downAt = nextMinute();
      await probeAt(monitor.id, downAt);
      expect(await state()).toEqual({ state: 'down', next: plus(downAt, 120 * SECOND) });
      const [opened] = await alertsAbout(owner, monitor.id, 'uptime.down');
      expect(opened).toMatchObject({ status: 'open', opened_at: downAt.toISOString(), details: { failures: 3, status_code: 500 } });

      service.answer({ status: 200 });
      const firstSuccess = nextMinute();
      await probeAt(monitor.id, firstSuccess);
      expect(await state()).toEqual({ state: 'down', next: plus(firstSuccess, 120 * SECOND) });
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => a.status)).toEqual(['open']);

      const upAt = nextMinute();
      await probeAt(monitor.id, upAt);
      expect(await state()).toEqual({ state: 'up', next: plus(upAt, 120 * SECOND) });
      expect((await alertsAbout(owner, monitor.id, 'uptime.down')).map((a) => [a.status, a.resolved_at])).toEqual([['resolved', upAt.toISOString()]]);

      expect((await probeResults(owner, monitor.id)).map((r) => r.ok)).toEqual([true, true, false, false, false]);
    });

    test('an up monitor that fails fewer times than its threshold stays up', async () => {
      const service = await targets.start({ status: 200 });
      const monitor = await createMonitor(owner, project.id, { url: service.url, failure_threshold: 2 });
      await probeAt(monitor.id);
      service.answer({ status: 404 });
      await probeAt(monitor.id);
      service.answer({ status: 200 });
      await probeAt(monitor.id);
      service.answer({ status: 404 });
      await probeAt(monitor.id);
      expect((await monitorOf(owner, monitor.id)).state).toBe('up');
      expect(await alertsAbout(owner, monitor.id, 'uptime.down')).toEqual([]);
    });

    test('expected statuses: a listed code or range passes, anything else fails', async () => {
      const service = await targets.start({ status: 301, headers: { location: '/elsewhere' } });
      const accepting = await createMonitor(owner, project.id, { url: service.url, max_redirects: 0, expected_status: ['3xx'] });
      const strict = await createMonitor(owner, project.id, { url: service.url, max_redirects: 0, expected_status: [200, '204-206'] });
      const successOnly = await createMonitor(owner, project.id, { url: service.url, max_redirects: 0, expected_status: ['2xx'] });
      const ranged = await createMonitor(owner, project.id, { url: service.url, max_redirects: 0, expected_status: ['300-301'] });
      expect(await probeAt(accepting.id)).toMatchObject({ ok: true, statusCode: 301 });
      expect(await probeAt(ranged.id)).toMatchObject({ ok: true, statusCode: 301 });
      expect(await probeAt(strict.id)).toMatchObject({ ok: false, statusCode: 301, error: 'status 301 is not one of 200, 204-206' });
      expect(await probeAt(successOnly.id)).toMatchObject({ ok: false, statusCode: 301, error: 'status 301 is not one of 2xx' });
    });

    test('keywords: a missing keyword or a forbidden one present fails the probe, naming it', async () => {
      const page = await targets.start({ body: '<h1>Status: degraded</h1><p>maintenance window until 18:00</p>' });
      const expectations: [Record<string, unknown>, boolean, string | null][] = [
        [{ keyword: 'degraded' }, true, null],
        [{ keyword: 'operational' }, false, 'keyword "operational" not found in the body'],
        [{ keyword_absent: 'maintenance' }, false, '"maintenance" found in the body'],
        [{ keyword: 'maintenance', keyword_absent: true }, false, '"maintenance" found in the body'],
        [{ keyword: 'outage', keyword_absent: true }, true, null],
      ];
      for (const [fields, ok, error] of expectations) {
        const monitor = await createMonitor(owner, project.id, { url: page.url, ...fields });
        await probeAt(monitor.id);
        const [result] = await probeResults(owner, monitor.id);
        expect({ fields, ok: result!.ok, status: result!.status_code, error: result!.error }).toEqual({ fields, ok, status: 200, error });
      }
    });

    test('a service slower than the timeout fails the probe as timed out, without waiting for it', async () => {
      const slow = await targets.start({ body: 'finally', delayMs: 2000 });
      const monitor = await createMonitor(owner, project.id, { url: slow.url, timeout_ms: 300 });
      const started = Date.now();
      await probeAt(monitor.id);
      expect(Date.now() - started).toBeLessThan(1500);
      const [result] = await probeResults(owner, monitor.id);
      expect(result).toMatchObject({ ok: false, status_code: null, latency_ms: null, error: 'timed out after 300 ms' });
      expect(slow.requests).toHaveLength(1);
    });

    test('a redirect to a private or loopback address is refused, naming it, and never requested', async () => {
      const loopback6 = await targets.start({ body: 'internal admin' }, { host: '::1' });
      const toPrivate = await targets.start({ status: 302, headers: { location: 'http://10.0.0.1/' } });
      const toLoopback = await targets.start({ status: 307, headers: { location: `${loopback6.url}/admin` } });

      const privateMonitor = await createMonitor(owner, project.id, { url: toPrivate.url });
      await probeAt(privateMonitor.id);
      expect((await probeResults(owner, privateMonitor.id))[0]).toMatchObject({
        ok: false,
        status_code: null,
        error: 'redirect to http://10.0.0.1/ refused: address 10.0.0.1 is not allowed (private network)',
      });

      const loopbackMonitor = await createMonitor(owner, project.id, { url: toLoopback.url });
      await probeAt(loopbackMonitor.id);
      expect((await probeResults(owner, loopbackMonitor.id))[0]).toMatchObject({
        ok: false,
        error: `redirect to ${loopback6.url}/admin refused: address ::1 is not allowed (loopback)`,
      });
      expect(loopback6.requests).toEqual([]);
      expect([toPrivate.requests.length, toLoopback.requests.length]).toEqual([1, 1]);

      // Allowed redirects are followed.
      const hop = await targets.start({ status: 302, headers: { location: `${up.url}/landed` } });
      const following = await createMonitor(owner, project.id, { url: hop.url, keyword: 'operational' });
      expect(await probeAt(following.id)).toMatchObject({ ok: true, statusCode: 200 });
      expect(up.requests.at(-1)!.path).toBe('/landed');
    });

    test('workers picking up the same turn at once probe it once; a retried job of a past turn does nothing', async () => {
      const service = await targets.start({ body: 'ok' });
      const monitor = await createMonitor(owner, project.id, { url: service.url });
      // Several turns, four workers each: a claim that is not atomic lets two through now and then.
      for (const turn of [1, 2, 3, 4, 5]) {
        const due = await dueOf(monitor.id);
        const at = nextMinute();
        const outcomes = await Promise.all([1, 2, 3, 4].map(() => probeMonitor(monitor.id, due, deps, () => at)));
        expect({ turn, probed: outcomes.filter((outcome) => outcome !== undefined).length }).toEqual({ turn, probed: 1 });
        expect(await probeMonitor(monitor.id, due, deps, () => at)).toBeUndefined();
      }
      expect(await probeResults(owner, monitor.id)).toHaveLength(5);
      expect(service.requests).toHaveLength(5);
    });

    describe('TLS', () => {
      let tls: Target;
      /** Whole seconds: certificates carry no milliseconds. */
      const validTo = new Date(Math.floor(Date.now() / SECOND) * SECOND + 5 * DAY_MS);
      beforeAll(async () => {
        tls = await targets.start({ body: 'secure hello' }, { tls: await selfSignedCertificate(validTo) });
      });

      test('a certificate expiring in 5 days is reported and raises one alert however often it is probed', async () => {
        const monitor = await createMonitor(owner, project.id, { name: 'billing', url: `${tls.url}/`, verify_tls: false });
        await probeAt(monitor.id);
        await probeAt(monitor.id);
        const results = await probeResults(owner, monitor.id);
        expect(results).toHaveLength(2);
        for (const result of results) {
          expect(result).toMatchObject({ ok: true, status_code: 200, error: null });
          expect([4, 5]).toContain(result.tls_days_left);
        }
        expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'up', tls_expires_at: validTo.toISOString() });
        const alerts = await alertsAbout(owner, monitor.id, 'uptime.tls_expiring');
        expect(alerts).toEqual([
          expect.objectContaining({
            status: 'open',
            project_id: project.id,
            title: `billing: the TLS certificate expires in ${results[0]!.tls_days_left} days`,
            details: expect.objectContaining({ expires_at: validTo.toISOString(), days_left: results[0]!.tls_days_left, warn_days: 14 }),
          }),
        ]);
      });

      test('a replaced certificate ends the old one\'s alert; one expiring soon again raises its own', async () => {
        const renewing = await targets.start({ body: 'ok' }, { tls: await selfSignedCertificate(validTo) });
        const monitor = await createMonitor(owner, project.id, { name: 'api', url: renewing.url, verify_tls: false });
        const openAlerts = async () =>
          (await alertsAbout(owner, monitor.id, 'uptime.tls_expiring')).filter((a) => a.status === 'open').map((a) => a.details.expires_at);
        await probeAt(monitor.id);
        expect(await openAlerts()).toEqual([validTo.toISOString()]);

        // Replaced by a certificate with 10 days left: still within the 14-day warning, a new alert, the old one over.
        const tenDays = new Date(validTo.getTime() + 5 * DAY_MS);
        renewing.setCertificate(await selfSignedCertificate(tenDays));
        await probeAt(monitor.id);
        expect(await openAlerts()).toEqual([tenDays.toISOString()]);
        expect(await alertsAbout(owner, monitor.id, 'uptime.tls_expiring')).toHaveLength(2);

        // Renewed for 90 days: nothing open.
        const ninetyDays = new Date(validTo.getTime() + 85 * DAY_MS);
        renewing.setCertificate(await selfSignedCertificate(ninetyDays));
        await probeAt(monitor.id);
        expect(await openAlerts()).toEqual([]);
        expect(await monitorOf(owner, monitor.id)).toMatchObject({ tls_expires_at: ninetyDays.toISOString() });
        expect((await probeResults(owner, monitor.id))[0]!.tls_days_left).toBeGreaterThanOrEqual(89);
      });

      test('moving a monitor from https to http forgets the certificate and ends its alert', async () => {
        const monitor = await createMonitor(owner, project.id, { url: `${tls.url}/`, verify_tls: false });
        await probeAt(monitor.id);
        expect((await alertsAbout(owner, monitor.id, 'uptime.tls_expiring')).map((a) => a.status)).toEqual(['open']);

        const moved = await owner.client.patch(`/v1/uptime/monitors/${monitor.id}`, { url: `${up.url}/` });
        expect(moved.body).toMatchObject({ state: 'pending', tls_expires_at: null });
        await probeAt(monitor.id);
        expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'up', tls_expires_at: null });
        expect((await alertsAbout(owner, monitor.id, 'uptime.tls_expiring')).map((a) => a.status)).toEqual(['resolved']);
      });

      test('with verification on, a self-signed certificate fails the probe', async () => {
        const monitor = await createMonitor(owner, project.id, { url: `${tls.url}/`, failure_threshold: 1 });
        await probeAt(monitor.id);
        const [result] = await probeResults(owner, monitor.id);
        expect(result).toMatchObject({ ok: false, status_code: null, error: 'certificate is self-signed', tls_days_left: null });
        expect(await monitorOf(owner, monitor.id)).toMatchObject({ state: 'down', last_error: 'certificate is self-signed', tls_expires_at: null });
        expect(await alertsAbout(owner, monitor.id, 'uptime.tls_expiring')).toEqual([]);
        expect((await alertsAbout(owner, monitor.id, 'uptime.down'))[0]!.title).toMatch(/certificate is self-signed/);
      });
    });
  });
});

describe('the probe scheduler (workers running)', () => {
  let h: Harness;
  let owner: Account;
  let project: { id: string };
  let healthy: Target;
  let failing: Target;
  let idle: Target;
  const monitors = {} as Record<'healthy' | 'failing' | 'paused', MonitorJson>;
  useHarness((started) => (h = started), { OUTBOUND_ALLOWLIST: '127.0.0.1' }, { workers: true });
  beforeAll(async () => {
    owner = await signUp(h);
    project = await createProject(owner);
    [healthy, failing, idle] = await Promise.all([targets.start({ body: 'all systems operational' }), targets.start({ status: 503 }), targets.start({ body: 'ok' })]);
    // Created together, so their waits overlap.
    monitors.healthy = await createMonitor(owner, project.id, { url: `${healthy.url}/health`, keyword: 'operational', headers: { Authorization: 'Bearer worker-probe' } });
    monitors.failing = await createMonitor(owner, project.id, { name: 'payments', url: failing.url });
    monitors.paused = await createMonitor(owner, project.id, { url: idle.url, paused: true });
  });

  test('a new monitor is probed within 10 s of creation and comes up', async () => {
    const [result] = await eventually(async () => {
      const results = await probeResults(owner, monitors.healthy.id);
      return results.length > 0 ? results : undefined;
    }, 'the first probe result', 12_000);
    expect(result).toMatchObject({ ok: true, status_code: 200, error: null });
    expect(result!.latency_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(result!.checked_at) - Date.parse(monitors.healthy.created_at)).toBeLessThanOrEqual(10 * SECOND);
    const monitor = await monitorOf(owner, monitors.healthy.id);
    expect(monitor).toMatchObject({ state: 'up', last_checked_at: result!.checked_at });
    // The next probe is a whole interval on.
    expect(Date.parse(monitor.next_check_at!) - Date.parse(result!.checked_at)).toBeGreaterThan(55 * SECOND);
    // the workers open the sealed header value for the probe
    expect(healthy.requests.map((r) => [r.path, r.headers['user-agent'], r.headers.authorization])).toEqual([['/health', 'Sluice-Uptime/1', 'Bearer worker-probe']]);
  });

  test('a failing monitor is probed again about 10 s later, not after its interval, and goes down with one alert', async () => {
    const results = await eventually(async () => {
      const found = await probeResults(owner, monitors.failing.id);
      return found.length >= 2 ? found : undefined;
    }, 'a confirming second probe', 30_000);
    const [second, first] = results as [ProbeResultJson, ProbeResultJson];
    expect([first.ok, second.ok, second.error]).toEqual([false, false, 'status 503 is not one of 200-299']);
    const gap = Date.parse(second.checked_at) - Date.parse(first.checked_at);
    expect(gap).toBeGreaterThanOrEqual(10 * SECOND);
    expect(gap).toBeLessThan(20 * SECOND);
    const monitor = await eventually(async () => {
      const m = await monitorOf(owner, monitors.failing.id);
      return m.state === 'down' ? m : undefined;
    }, 'the monitor down');
    expect(monitor.last_error).toBe('status 503 is not one of 200-299');
    const alerts = await alertsAbout(owner, monitors.failing.id, 'uptime.down');
    expect(alerts.map((a) => [a.status, a.title])).toEqual([['open', 'payments is down: status 503 is not one of 200-299']]);
  });

  test('a paused monitor is never probed', async () => {
    // By now the scheduler has ticked several times (the tests above waited on it).
    expect(await probeResults(owner, monitors.paused.id)).toEqual([]);
    expect(idle.requests).toEqual([]);
    expect((await monitorOf(owner, monitors.paused.id)).state).toBe('paused');
  });
});
