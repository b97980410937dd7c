import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { Types } from 'mongoose';
import type { Redis } from 'ioredis';
import { createMailer, type Mailer } from '../../src/shared/clients/mailer.js';
import { closeRedis, createRedis } from '../../src/shared/clients/redis.js';
import { createLogger } from '../../src/shared/logger.js';
import { openAlert } from '../../src/shared/features/alerts/service.js';
import { checkInByToken, sweepChecks } from '../../src/shared/features/cron/service.js';
import { ingestErrorEvents } from '../../src/shared/features/issues/store.js';
import { ReportSchedule } from '../../src/shared/features/reports/model.js';
import { claimDueReports, sendDigest } from '../../src/shared/features/reports/service.js';
import { UptimeCheck } from '../../src/shared/features/uptime/model.js';
import { addMember, createProject, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { errorEvent } from '../support/factories/telemetry.js';
import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { CONFIRMATION_SUBJECT, confirmAddresses as confirmEach, isConfirmation, startMailCatcher, type MailCatcher, type ReceivedMail } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

let catcher: MailCatcher;
/** The API with email on: SMTP_URL points at the mail catcher. */
let h: Harness;
const harnesses: Harness[] = [];
const mailers: Mailer[] = [];
/** The mail budget's counters, as a worker's mailer keeps them. */
let redis: Redis;

async function harness(env: Record<string, string>, options: { workers?: boolean } = {}) {
  const started = await startHarness(env, options);
  harnesses.push(started);
  return started;
}

async function closeHarness(done: Harness) {
  harnesses.splice(harnesses.indexOf(done), 1);
  await done.close();
}

function mailerOf(smtpUrl: string): Mailer {
  const mailer = createMailer({ ...h.config, SMTP_URL: smtpUrl }, redis)!;
  mailers.push(mailer);
  return mailer;
}

beforeAll(async () => {
  catcher = await startMailCatcher();
  h = await harness({ SMTP_URL: catcher.url });
  redis = createRedis(h.config.REDIS_URL!, 'fast', createLogger('silent'));
});

afterAll(async () => {
  for (const mailer of mailers) mailer.close();
  await closeRedis(redis);
  for (const started of [...harnesses]) await closeHarness(started);
  await dropTestDatabase();
  await catcher?.close();
});

const isDigest = (mail: ReceivedMail) => !isConfirmation(mail);
/** The digests mailed to an address (its confirmation mail aside). */
const mailsTo = (address: string) => catcher.mails.filter((mail) => mail.to.includes(address) && isDigest(mail));
const confirmAddresses = (...addresses: string[]) => confirmEach(catcher, h.api, ...addresses);

/**
 * The first instant after `after` whose wall clock in `zone` reads hour:minute (on `weekday`, 0 =
 * Sunday, when given), found by scanning every five minutes: independent of the service's crontab.
 */
function nextWallClock(zone: string, hour: number, minute: number, after: Date, weekday?: number): Date {
  const format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', weekday: 'short', hour: 'numeric', minute: 'numeric' });
  const names = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const step = 5 * MINUTE;
  for (let t = Math.floor(after.getTime() / step) * step + step; t < after.getTime() + 8 * DAY; t += step) {
    const parts = Object.fromEntries(format.formatToParts(new Date(t)).map((part) => [part.type, part.value]));
    if (Number(parts.hour) === hour && Number(parts.minute) === minute && (weekday === undefined || parts.weekday === names[weekday])) return new Date(t);
  }
  throw new Error(`no ${hour}:${minute} in ${zone} within 8 days`);
}

/** A daily UTC schedule whose next send is 11 to 12 hours away, so the period is about half over. */
async function scheduleHalfADayAhead(account: Account, recipients: string[]) {
  const hour = (new Date().getUTCHours() + 12) % 24;
  const reply = await account.client.put('/v1/reports/schedule', { cadence: 'daily', hour, minute: 0, timezone: 'UTC', recipients });
  expect(reply.status).toBe(200);
  return reply.body as { next_send_at: string };
}

let batches = 0;
/** Error events of one kind (one issue per type) stamped at `times`, as the telemetry worker stores them. */
async function errorsAt(account: Account, projectId: string, type: string, value: string, times: Date[], now = new Date()) {
  const items = times.map((at) => {
    const event = errorEvent({ timestamp: at.getTime() / 1000 }, { type, value, fn: `handle${type}` });
    return { orgId: account.organization.id, projectId, record: { eventId: event.event_id as string, timeMs: at.getTime(), event } };
  });
  await ingestErrorEvents(items, `reports-test-${++batches}`, now);
}

async function issueTitled(account: Account, projectId: string, title: string): Promise<{ id: string; title: string }> {
  const reply = await account.client.get(`/v1/issues?project=${projectId}`);
  expect(reply.status).toBe(200);
  const issue = reply.body.data.find((i: { title: string }) => i.title === title);
  if (!issue) throw new Error(`no issue "${title}" in ${JSON.stringify(reply.body.data.map((i: { title: string }) => i.title))}`);
  return issue;
}

async function createCronCheck(account: Account, projectId: string, name: string, schedule: Record<string, unknown>) {
  const reply = await account.client.post('/v1/cron/checks', { project_id: projectId, name, schedule });
  expect(reply.status).toBe(201);
  return { id: reply.body.id as string, token: (reply.body.ping_url as string).split('/').at(-1)! };
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('the digest schedule', () => {
  let owner: Account;
  let member: Account;
  beforeAll(async () => {
    owner = await signUp(h);
    member = await addMember(h, owner, 'member');
  });

  test('daily at 09:00 Europe/Berlin goes out at the next 09:00 Berlin time (08:00Z in winter, 07:00Z in summer); recipients are lower-cased once each', async () => {
    const before = new Date();
    const put = await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 9, timezone: 'Europe/Berlin', recipients: ['Ops@Example.test', 'ops@example.test', 'cto@example.test'] });
    expect(put.status).toBe(200);
    const expected = nextWallClock('Europe/Berlin', 9, 0, before);
    expect([7, 8]).toContain(expected.getUTCHours());
    expect(put.body).toEqual({
      cadence: 'daily',
      weekday: 'monday',
      hour: 9,
      minute: 0,
      timezone: 'Europe/Berlin',
      recipients: ['ops@example.test', 'cto@example.test'],
      addresses: [{ email: 'ops@example.test', verified: false }, { email: 'cto@example.test', verified: false }],
      next_send_at: expected.toISOString(),
      last_sent_at: null,
      last_error: null,
    });
    expect(Date.parse(put.body.next_send_at)).toBeGreaterThan(before.getTime());
    expect(Date.parse(put.body.next_send_at)).toBeLessThanOrEqual(before.getTime() + DAY);

    const got = await owner.client.get('/v1/reports/schedule');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(put.body);

    // The preview is the digest due then: the day up to that send.
    const preview = await member.client.get('/v1/reports/preview');
    expect(preview.status).toBe(200);
    expect(preview.body.period).toEqual({ from: new Date(expected.getTime() - DAY).toISOString(), to: expected.toISOString(), cadence: 'daily' });
  });

  test('weekly on friday at 17:30 goes out the next Friday at 17:30, and the preview covers the week before it', async () => {
    const before = new Date();
    const put = await owner.client.put('/v1/reports/schedule', { cadence: 'weekly', weekday: 'friday', hour: 17, minute: 30, recipients: ['ops@example.test'] });
    expect(put.status).toBe(200);
    const expected = nextWallClock('UTC', 17, 30, before, 5);
    expect(put.body).toMatchObject({ cadence: 'weekly', weekday: 'friday', hour: 17, minute: 30, timezone: 'UTC', next_send_at: expected.toISOString() });
    expect(new Date(put.body.next_send_at).getUTCDay()).toBe(5);
    expect((await owner.client.get('/v1/reports/schedule')).body).toEqual(put.body);
    const preview = await owner.client.get('/v1/reports/preview');
    expect(preview.body.period).toEqual({ from: new Date(expected.getTime() - 7 * DAY).toISOString(), to: expected.toISOString(), cadence: 'weekly' });
  });

  test('weekday 0 and weekday 7 both mean sunday', async () => {
    for (const weekday of [0, 7]) {
      const put = await owner.client.put('/v1/reports/schedule', { cadence: 'weekly', weekday, hour: 6, timezone: 'Asia/Tokyo', recipients: ['ops@example.test'] });
      expect(put.status).toBe(200);
      expect(put.body.weekday).toBe('sunday');
      // 06:00 in Tokyo (UTC+9, no daylight saving) is 21:00Z on the Saturday before.
      expect(put.body.next_send_at).toBe(nextWallClock('Asia/Tokyo', 6, 0, new Date(Date.now() - MINUTE), 0).toISOString());
      expect(new Date(put.body.next_send_at).getUTCDay()).toBe(6);
    }
  });

  test('a member may preview but not read, set or stop the schedule', async () => {
    for (const reply of [
      await member.client.get('/v1/reports/schedule'),
      await member.client.put('/v1/reports/schedule', { cadence: 'daily', recipients: ['member@example.test'] }),
      await member.client.delete('/v1/reports/schedule'),
    ]) {
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
    expect((await owner.client.get('/v1/reports/schedule')).body.recipients).toEqual(['ops@example.test']);
    expect((await member.client.get('/v1/reports/preview')).status).toBe(200);
  });

  test('invalid schedules are refused with validation_failed, naming the field, and change nothing', async () => {
    const valid = { cadence: 'daily', recipients: ['ops@example.test'] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...valid, hour: 24 }, 'body.hour'],
      [{ ...valid, minute: 60 }, 'body.minute'],
      [{ ...valid, weekday: 8 }, 'body.weekday'],
      [{ ...valid, weekday: 'someday' }, 'body.weekday'],
      [{ ...valid, recipients: ['not-an-email'] }, 'body.recipients.0'],
      [{ ...valid, recipients: [] }, 'body.recipients'],
      [{ ...valid, cadence: 'hourly' }, 'body.cadence'],
      [{ ...valid, format: 'pdf' }, 'body'],
      [{ ...valid, timezone: 'Mars/Olympus_Mons' }, 'body.timezone'],
    ];
    const before = (await owner.client.get('/v1/reports/schedule')).body;
    for (const [body, path] of cases) {
      const reply = await owner.client.put('/v1/reports/schedule', body);
      expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
      expect(reply.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const unknownField = await owner.client.put('/v1/reports/schedule', { ...valid, format: 'pdf' });
    expect(unknownField.body.details[0].message).toMatch(/format/);
    const unknownZone = await owner.client.put('/v1/reports/schedule', { ...valid, timezone: 'Mars/Olympus_Mons' });
    expect(unknownZone.body.message).toMatch(/Mars\/Olympus_Mons/);
    expect((await owner.client.get('/v1/reports/schedule')).body).toEqual(before);
  });

  test('another organisation never sees, changes or stops this one’s schedule', async () => {
    const mine = (await owner.client.get('/v1/reports/schedule')).body;
    const other = await signUp(h, 'other');
    const got = await other.client.get('/v1/reports/schedule');
    expect(got.status).toBe(404);
    expect(got.body.code).toBe('not_found');
    expect((await other.client.delete('/v1/reports/schedule')).status).toBe(404);
    const theirs = await other.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 3, recipients: ['theirs@example.test'] });
    expect(theirs.status).toBe(200);
    expect(theirs.body.recipients).toEqual(['theirs@example.test']);
    expect((await owner.client.get('/v1/reports/schedule')).body).toEqual(mine);
    expect((await other.client.get('/v1/reports/schedule')).body).toEqual(theirs.body);
  });

  test('DELETE stops the digest: 204, then GET and DELETE answer 404 and the preview falls back to the last day', async () => {
    const deleted = await owner.client.delete('/v1/reports/schedule');
    expect(deleted.status).toBe(204);
    const got = await owner.client.get('/v1/reports/schedule');
    expect(got.status).toBe(404);
    expect(got.body.code).toBe('not_found');
    expect((await owner.client.delete('/v1/reports/schedule')).status).toBe(404);
    const before = Date.now();
    const preview = await owner.client.get('/v1/reports/preview');
    const after = Date.now();
    expect(preview.status).toBe(200);
    expect(preview.body.period.cadence).toBe('daily');
    const to = Date.parse(preview.body.period.to);
    expect(to).toBeGreaterThanOrEqual(before);
    expect(to).toBeLessThanOrEqual(after);
    expect(Date.parse(preview.body.period.from)).toBe(to - DAY);
  });

  test('without SMTP_URL the schedule cannot be set: 400 validation_failed naming SMTP_URL, and nothing is stored', async () => {
    const noMail = await harness({});
    expect(noMail.config.SMTP_URL).toBeUndefined();
    const admin = await signUp(noMail, 'no-mail');
    const put = await admin.client.put('/v1/reports/schedule', { cadence: 'daily', recipients: ['ops@example.test'] });
    expect(put.status).toBe(400);
    expect(put.body.code).toBe('validation_failed');
    expect(put.body.message).toMatch(/SMTP_URL/);
    expect((await admin.client.get('/v1/reports/schedule')).status).toBe(404);
    // The preview needs no mail server.
    expect((await admin.client.get('/v1/reports/preview')).status).toBe(200);
  });
});

describe('the preview', () => {
  let owner: Account;
  let member: Account;
  let storefront: { id: string; name: string };
  let billing: { id: string; name: string };
  let from: Date;
  let to: Date;
  let regression: { before: number; after: number };
  let monitorId: string;
  let ids: Record<'checkout' | 'inventory' | 'legacy' | 'payment' | 'nightly' | 'ledger', string>;
  let mailsBefore: number;

  const CHECKOUT = 'CheckoutError: <b>cart</b> total is NaN';
  const INVENTORY = 'InventoryError: stock below zero';
  const LEGACY = 'LegacyError: coupon service unreachable';
  const PAYMENT = 'PaymentError: card declined';

  beforeAll(async () => {
    owner = await signUp(h);
    member = await addMember(h, owner, 'member');
    storefront = await createProject(owner, `Storefront ${randomBytes(2).toString('hex')}`);
    billing = await createProject(owner, `Billing ${randomBytes(2).toString('hex')}`);
    const schedule = await scheduleHalfADayAhead(owner, [uniqueEmail('digest')]);
    to = new Date(schedule.next_send_at);
    from = new Date(to.getTime() - DAY);
    const at = (offset: number) => new Date(from.getTime() + offset);
    mailsBefore = catcher.mails.length;

    // Storefront: 2 events in the previous period (one more before it), 6 in this one.
    await errorsAt(owner, storefront.id, 'LegacyError', 'coupon service unreachable', [at(-26 * HOUR), at(-3 * HOUR), at(-2 * HOUR), at(1 * HOUR)]);
    await errorsAt(owner, storefront.id, 'CheckoutError', '<b>cart</b> total is NaN', [at(2 * HOUR), at(3 * HOUR), at(4 * HOUR)]);
    await errorsAt(owner, storefront.id, 'InventoryError', 'stock below zero', [at(5 * HOUR)]);
    const legacy = await issueTitled(owner, storefront.id, LEGACY);
    expect((await owner.client.patch(`/v1/issues/${legacy.id}`, { action: 'resolve' })).status).toBe(200);
    regression = { before: Date.now(), after: 0 };
    await errorsAt(owner, storefront.id, 'LegacyError', 'coupon service unreachable', [at(6 * HOUR)]);
    regression.after = Date.now();

    // Billing: 4 events in the previous period, 1 in this one.
    await errorsAt(owner, billing.id, 'PaymentError', 'card declined', [at(-10 * HOUR), at(-9 * HOUR), at(-8 * HOUR), at(-7 * HOUR), at(1 * HOUR)]);

    // Cron: an hourly job that went silent (two runs missed in the period), a daily one that failed
    // once before the period and once in it, and a healthy one that is not listed.
    const nightly = await createCronCheck(owner, billing.id, 'nightly-invoices', { type: 'interval', value: 1, unit: 'hour' });
    const ledger = await createCronCheck(owner, billing.id, 'ledger-export', { type: 'interval', value: 1, unit: 'day' });
    const heartbeat = await createCronCheck(owner, storefront.id, 'heartbeat', { type: 'interval', value: 1, unit: 'day' });
    await checkInByToken(nightly.token, { status: 'ok', source: 'http' }, at(1 * HOUR));
    await checkInByToken(ledger.token, { status: 'fail', source: 'http' }, at(-1 * HOUR));
    await checkInByToken(ledger.token, { status: 'fail', source: 'http' }, at(3 * HOUR));
    await checkInByToken(heartbeat.token, { status: 'ok', source: 'http' }, at(1 * HOUR));
    const now = Date.now();
    await sweepChecks(new Date(now));
    await sweepChecks(new Date(now + 2 * HOUR));

    // Uptime: three probes in the period (two fine), one before it; one outage opened in it and one before.
    const monitor = await owner.client.post('/v1/uptime/monitors', { project_id: storefront.id, name: 'storefront home', url: 'https://shop.example/', paused: true });
    expect(monitor.status).toBe(201);
    monitorId = monitor.body.id;
    const orgId = new Types.ObjectId(owner.organization.id);
    const monitorObjectId = new Types.ObjectId(monitorId);
    await UptimeCheck.create([at(-1 * HOUR), at(1 * HOUR), at(2 * HOUR), at(3 * HOUR)].map((checkedAt, i) => ({ orgId, monitorId: monitorObjectId, checkedAt, ok: i !== 2 })));
    for (const [n, openedAt] of [at(-2 * HOUR), at(2 * HOUR)].entries()) {
      await openAlert({ key: `reports-test:${monitorId}:${n}`, orgId, projectId: new Types.ObjectId(storefront.id), kind: 'uptime.down', subject: { type: 'uptime_monitor', id: monitorId }, title: 'storefront home is down', at: openedAt });
    }

    // Deployments: one in the period (listed), one before it (not).
    for (const [version, deployedAt] of [['storefront@1.0.0', at(-5 * HOUR)], ['storefront@1.1.0', at(7 * HOUR)]] as const) {
      expect((await owner.client.post('/v1/deployments', { project_id: storefront.id, version, deployed_at: deployedAt.toISOString() })).status).toBe(201);
    }

    ids = {
      checkout: (await issueTitled(owner, storefront.id, CHECKOUT)).id,
      inventory: (await issueTitled(owner, storefront.id, INVENTORY)).id,
      legacy: legacy.id,
      payment: (await issueTitled(owner, billing.id, PAYMENT)).id,
      nightly: nightly.id,
      ledger: ledger.id,
    };
  });

  test('shows each project’s figures for the period ending at the next send, against the period before', async () => {
    const reply = await member.client.get('/v1/reports/preview');
    expect(reply.status).toBe(200);
    expect(reply.body.period).toEqual({ from: from.toISOString(), to: to.toISOString(), cadence: 'daily' });
    expect(reply.body.data.organization).toBe(owner.organization.name);
    const [first, second] = reply.body.data.projects;
    expect(reply.body.data.projects).toHaveLength(2);
    expect(first).toEqual({
      project_id: storefront.id,
      name: storefront.name,
      events: 6,
      previous_events: 2,
      change: 2,
      new_issues: [
        { id: ids.checkout, title: CHECKOUT, events: 3 },
        { id: ids.inventory, title: INVENTORY, events: 1 },
      ],
      regressed_issues: [{ id: ids.legacy, title: LEGACY, regressed_at: expect.any(String) }],
      top_issues: [
        { id: ids.checkout, title: CHECKOUT, events: 3 },
        { id: ids.legacy, title: LEGACY, events: 2 },
        { id: ids.inventory, title: INVENTORY, events: 1 },
      ],
      uptime: [{ monitor_id: monitorId, name: 'storefront home', probes: 3, uptime_percent: 66.667, incidents: 1 }],
      cron: [],
      slowest_endpoints: [],
      deployments: [{ id: expect.any(String), version: 'storefront@1.1.0', environment: 'production', deployed_at: new Date(from.getTime() + 7 * HOUR).toISOString(), verdict: null }],
    });
    const regressedAt = Date.parse(first.regressed_issues[0].regressed_at);
    expect(regressedAt).toBeGreaterThanOrEqual(regression.before);
    expect(regressedAt).toBeLessThanOrEqual(regression.after);
    expect(second).toEqual({
      project_id: billing.id,
      name: billing.name,
      events: 1,
      previous_events: 4,
      change: -0.75,
      new_issues: [],
      regressed_issues: [],
      top_issues: [{ id: ids.payment, title: PAYMENT, events: 1 }],
      uptime: [],
      cron: [
        { check_id: ids.nightly, name: 'nightly-invoices', missed: 2, failed: 0, timed_out: 0 },
        { check_id: ids.ledger, name: 'ledger-export', missed: 0, failed: 1, timed_out: 0 },
      ],
      slowest_endpoints: [],
      deployments: [],
    });
  });

  test('subject, text and HTML tell the same story, with titles escaped in HTML; nothing is mailed', async () => {
    const { body } = await owner.client.get('/v1/reports/preview');
    expect(body.subject).toBe(`Sluice daily digest for ${owner.organization.name}: ${to.toISOString().slice(0, 10)}`);
    const lines = body.text.split('\n');
    expect(lines[0]).toBe(body.subject);
    expect(lines).toContain(`Period: ${from.toISOString()} to ${to.toISOString()}`);
    expect(lines).toContain(`${storefront.name}: 6 error events, 2 in the previous period (+200% on the previous period)`);
    expect(lines).toContain(`${billing.name}: 1 error events, 4 in the previous period (-75% on the previous period)`);
    expect(lines).toContain(`    - ${CHECKOUT} (3 events)`);
    expect(lines).toContain(`    - ${LEGACY}: 2 events`);
    expect(lines.some((line: string) => line.startsWith(`    - ${LEGACY} (regressed `))).toBe(true);
    expect(lines).toContain('    - storefront home: 66.667% of 3 probes, 1 incidents');
    expect(lines).toContain('    - nightly-invoices: 2 missed, 0 failed, 0 timed out');
    expect(lines).toContain('    - ledger-export: 0 missed, 1 failed, 0 timed out');
    expect(body.text).not.toContain('heartbeat');
    // The storefront comes first (projects in the order they were created).
    expect(body.text.indexOf(storefront.name)).toBeLessThan(body.text.indexOf(billing.name));

    expect(body.html).toContain(`<h2>${storefront.name}</h2>`);
    expect(body.html).toContain(`<h2>${billing.name}</h2>`);
    expect(body.html).toContain('CheckoutError: &#60;b&#62;cart&#60;/b&#62; total is NaN (3 events)');
    expect(body.html).not.toContain('<b>cart</b>');
    expect(body.html).toContain('InventoryError: stock below zero');
    expect(body.html).toContain('PaymentError: card declined');

    expect(catcher.mails.length).toBe(mailsBefore);
  });

  test('another organisation’s preview shows its own projects only', async () => {
    const other = await signUp(h, 'other');
    const project = await createProject(other, `Elsewhere ${randomBytes(2).toString('hex')}`);
    await errorsAt(other, project.id, 'CheckoutError', '<b>cart</b> total is NaN', [new Date(Date.now() - HOUR)]);
    const theirs = (await other.client.get('/v1/reports/preview')).body;
    expect(theirs.data.projects.map((p: { name: string }) => p.name)).toEqual([project.name]);
    expect(theirs.data.projects[0].events).toBe(1);
    expect(theirs.text).not.toContain(storefront.name);
    const mine = (await owner.client.get('/v1/reports/preview')).body;
    expect(mine.data.projects.map((p: { name: string }) => p.name)).toEqual([storefront.name, billing.name]);
    expect(mine.data.projects[0].events).toBe(6);
  });
});

describe('sending', () => {
  test('a due schedule is claimed once; its digest reaches every recipient once, as previewed; the schedule moves to the next day', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner, `Checkout ${randomBytes(2).toString('hex')}`);
    const recipients = [uniqueEmail('ops'), uniqueEmail('cto')];
    const schedule = await scheduleHalfADayAhead(owner, recipients);
    await confirmAddresses(...recipients);
    await errorsAt(owner, project.id, 'TimeoutError', 'upstream took 30 s', [new Date(Date.now() - HOUR), new Date(Date.now() - 2 * HOUR)]);
    const preview = (await owner.client.get('/v1/reports/preview')).body;
    expect(preview.data.projects[0].events).toBe(2);
    const sendAt = Date.parse(schedule.next_send_at);

    // Not due yet: nothing is claimed.
    expect((await claimDueReports(new Date(sendAt - MINUTE))).filter((c) => c.orgId === owner.organization.id)).toEqual([]);
    // Ticks at once (several worker processes): one claims it.
    const ticks = await Promise.all(Array.from({ length: 4 }, () => claimDueReports(new Date(sendAt + MINUTE))));
    const claimed = ticks.flat().filter((c) => c.orgId === owner.organization.id);
    expect(claimed).toEqual([{ orgId: owner.organization.id, sendAt }]);
    const moved = (await owner.client.get('/v1/reports/schedule')).body;
    expect(moved.next_send_at).toBe(new Date(sendAt + DAY).toISOString());
    expect(moved.last_sent_at).toBeNull();

    const before = Date.now();
    expect(await sendDigest(new Types.ObjectId(owner.organization.id), new Date(claimed[0]!.sendAt), mailerOf(catcher.url))).toBe('sent');
    const mails = catcher.mails.filter((mail) => recipients.some((r) => mail.to.includes(r)) && isDigest(mail));
    expect(mails).toHaveLength(1);
    const [mail] = mails as [ReceivedMail];
    expect([...mail.to].sort()).toEqual([...recipients].sort());
    expect(mail.from).toBe('alerts@localhost');
    expect(mail.subject).toBe(preview.subject);
    expect(mail.text).toBe(preview.text);
    expect(mail.html).toContain(`<h2>${project.name}</h2>`);
    expect(mail.html).toContain('TimeoutError: upstream took 30 s: 2 events');

    const sent = (await owner.client.get('/v1/reports/schedule')).body;
    expect(sent.next_send_at).toBe(new Date(sendAt + DAY).toISOString());
    expect(Date.parse(sent.last_sent_at)).toBeGreaterThanOrEqual(before);
    expect(sent.last_error).toBeNull();
    // The preview now shows the next day's digest.
    expect((await owner.client.get('/v1/reports/preview')).body.period.to).toBe(new Date(sendAt + DAY).toISOString());

    // A send still queued after the digest was stopped mails nobody.
    expect((await owner.client.delete('/v1/reports/schedule')).status).toBe(204);
    expect(await sendDigest(new Types.ObjectId(owner.organization.id), new Date(sendAt + DAY), mailerOf(catcher.url))).toBe('skipped');
    expect(catcher.mails.filter((m) => recipients.some((r) => m.to.includes(r)) && isDigest(m))).toHaveLength(1);
  });

  test('a weekly digest that cannot be mailed records last_error; the retry delivers it and clears the error', async () => {
    const owner = await signUp(h);
    await createProject(owner, `Weekly ${randomBytes(2).toString('hex')}`);
    const recipient = uniqueEmail('weekly');
    const put = await owner.client.put('/v1/reports/schedule', { cadence: 'weekly', weekday: (new Date().getUTCDay() + 3) % 7, hour: 12, recipients: [recipient] });
    expect(put.status).toBe(200);
    await confirmAddresses(recipient);
    const sendAt = Date.parse(put.body.next_send_at);
    const claimed = (await claimDueReports(new Date(sendAt + MINUTE))).filter((c) => c.orgId === owner.organization.id);
    expect(claimed).toEqual([{ orgId: owner.organization.id, sendAt }]);
    expect((await owner.client.get('/v1/reports/schedule')).body.next_send_at).toBe(new Date(sendAt + 7 * DAY).toISOString());

    const orgId = new Types.ObjectId(owner.organization.id);
    const port = await closedPort();
    await expect(sendDigest(orgId, new Date(sendAt), mailerOf(`smtp://127.0.0.1:${port}`))).rejects.toThrow(/ECONNREFUSED/);
    const failed = (await owner.client.get('/v1/reports/schedule')).body;
    expect(failed.last_error).toMatch(/ECONNREFUSED/);
    expect(failed.last_sent_at).toBeNull();
    expect(mailsTo(recipient)).toHaveLength(0);

    // A worker without SMTP_URL says so.
    await expect(sendDigest(orgId, new Date(sendAt), undefined)).rejects.toThrow(/SMTP_URL/);
    expect((await owner.client.get('/v1/reports/schedule')).body.last_error).toMatch(/SMTP_URL/);

    expect(await sendDigest(orgId, new Date(sendAt), mailerOf(catcher.url))).toBe('sent');
    const [mail] = mailsTo(recipient) as [ReceivedMail];
    expect(mailsTo(recipient)).toHaveLength(1);
    expect(mail.subject).toMatch(/^Sluice weekly digest for /);
    expect(mail.text).toContain(`Period: ${new Date(sendAt - 7 * DAY).toISOString()} to ${new Date(sendAt).toISOString()}`);
    const recovered = (await owner.client.get('/v1/reports/schedule')).body;
    expect(recovered.last_error).toBeNull();
    expect(recovered.last_sent_at).not.toBeNull();
  });

  test('consecutive daily digests across a daylight-saving change meet: every event is in exactly one, and "previous period" is the digest before', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner, `Berlin ${randomBytes(2).toString('hex')}`);
    const recipient = uniqueEmail('berlin');
    expect((await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 9, timezone: 'Europe/Berlin', recipients: [recipient] })).status).toBe(200);
    await confirmAddresses(recipient);
    // Berlin leaves summer time on 2026-10-25: 09:00 is 07:00Z on the 24th and 08:00Z on the 25th.
    const sends = ['2026-10-24T07:00:00.000Z', '2026-10-25T08:00:00.000Z'];
    await errorsAt(owner, project.id, 'DstError', 'counted once', [new Date('2026-10-23T12:00:00Z'), new Date('2026-10-24T07:30:00Z')]);
    const orgId = new Types.ObjectId(owner.organization.id);
    for (const sendAt of sends) expect(await sendDigest(orgId, new Date(sendAt), mailerOf(catcher.url))).toBe('sent');
    const [first, second] = mailsTo(recipient) as [ReceivedMail, ReceivedMail];
    expect(first.text).toContain(`Period: 2026-10-23T07:00:00.000Z to ${sends[0]}`);
    expect(second.text).toContain(`Period: ${sends[0]} to ${sends[1]}`);
    expect(first.text).toContain(`${project.name}: 1 error events, 0 in the previous period`);
    expect(second.text).toContain(`${project.name}: 1 error events, 1 in the previous period`);
  });

  test('a digest goes to confirmed recipients only: with none confirmed it is not sent and last_error says why; a stranger gets the confirmation mail alone', async () => {
    const owner = await signUp(h);
    await createProject(owner, `Unconfirmed ${randomBytes(2).toString('hex')}`);
    const [team, stranger] = [uniqueEmail('team'), uniqueEmail('stranger')];
    const put = await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 6, recipients: [team, stranger] });
    expect(put.status).toBe(200);
    expect(put.body.addresses).toEqual([{ email: team, verified: false }, { email: stranger, verified: false }]);
    const orgId = new Types.ObjectId(owner.organization.id);
    const sendAt = Date.parse(put.body.next_send_at);

    expect(await sendDigest(orgId, new Date(sendAt), mailerOf(catcher.url))).toBe('skipped');
    const refused = (await owner.client.get('/v1/reports/schedule')).body;
    expect(refused.last_error).toMatch(/not sent: no recipient has confirmed/);
    expect(refused.last_sent_at).toBeNull();
    expect(mailsTo(team)).toHaveLength(0);

    await confirmAddresses(team);
    expect((await owner.client.get('/v1/reports/schedule')).body.addresses).toEqual([{ email: team, verified: true }, { email: stranger, verified: false }]);
    // setting the schedule again sends no second link to the address whose link is still out
    expect((await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 6, recipients: [team, stranger] })).status).toBe(200);
    expect(await sendDigest(orgId, new Date(sendAt), mailerOf(catcher.url))).toBe('sent');
    const [digest] = mailsTo(team) as [ReceivedMail];
    expect(digest.to).toEqual([team]);
    expect(catcher.mails.filter((mail) => mail.to.includes(stranger)).map((mail) => mail.subject)).toEqual([CONFIRMATION_SUBJECT]);
    expect((await owner.client.get('/v1/reports/schedule')).body.last_error).toBeNull();
  });

  test('the subject names the day of the send in the schedule’s time zone', async () => {
    const owner = await signUp(h);
    // 08:00 in Tokyo is 23:00Z the day before.
    const put = await owner.client.put('/v1/reports/schedule', { cadence: 'daily', hour: 8, timezone: 'Asia/Tokyo', recipients: [uniqueEmail('tokyo')] });
    expect(put.status).toBe(200);
    const sendAt = Date.parse(put.body.next_send_at);
    expect(new Date(sendAt).getUTCHours()).toBe(23);
    const tokyoDay = new Date(sendAt + 9 * HOUR).toISOString().slice(0, 10);
    expect((await owner.client.get('/v1/reports/preview')).body.subject).toBe(`Sluice daily digest for ${owner.organization.name}: ${tokyoDay}`);
  });

  test('through the workers: a schedule that has come due is mailed by the send-due-reports tick', async () => {
    const owner = await signUp(h);
    const project = await createProject(owner, `Worker ${randomBytes(2).toString('hex')}`);
    const recipient = uniqueEmail('worker');
    await scheduleHalfADayAhead(owner, [recipient]);
    await confirmAddresses(recipient);
    await errorsAt(owner, project.id, 'WorkerError', 'sent by the tick', [new Date(Date.now() - 5 * MINUTE)]);
    // As if the send time had just passed.
    const sendAt = new Date(Math.floor((Date.now() - MINUTE) / 1000) * 1000);
    await ReportSchedule.updateOne({ _id: new Types.ObjectId(owner.organization.id) }, { $set: { nextSendAt: sendAt } });
    const preview = (await owner.client.get('/v1/reports/preview')).body;
    expect(preview.period.to).toBe(sendAt.toISOString());
    expect(preview.data.projects[0].top_issues).toEqual([expect.objectContaining({ title: 'WorkerError: sent by the tick', events: 1 })]);

    // A fresh worker process runs its ticks at once, then every minute.
    const workers = await harness({ SMTP_URL: catcher.url }, { workers: true });
    try {
      const [mail] = await catcher.waitFor(1, (m) => m.to.includes(recipient) && isDigest(m), 75_000);
      expect(mail!.subject).toBe(preview.subject);
      expect(mail!.text).toBe(preview.text);
      const schedule = await eventually(async () => {
        const body = (await owner.client.get('/v1/reports/schedule')).body;
        return body.last_sent_at ? body : undefined;
      }, 'last_sent_at');
      expect(Date.parse(schedule.next_send_at)).toBeGreaterThan(Date.now());
      expect(schedule.last_error).toBeNull();
      expect(mailsTo(recipient)).toHaveLength(1);
    } finally {
      await closeHarness(workers);
    }
  }, 90_000);
});
