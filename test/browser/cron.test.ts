/**
 * Cron checks in a real browser: a check created with the schedule editor, its ping URL called as a crontab
 * line calls it and the check-ins arriving on the open page, pause, resume, a rotated token and a delete;
 * then a job that falls silent, judged late and then missed by the service's own workers, with the alert on
 * /alerts and its e-mail in the mail catcher.
 *
 * The workers sweep the checks every 10 seconds against the real clock, and the shortest grace is a minute.
 * So that the late check is judged within seconds, its last check-in is recorded 90 seconds in the past
 * through the cron feature's own `checkInByToken` (time is its parameter): this process is connected to the
 * database the service runs on, whose name the test chooses.
 */
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import type { Page } from 'playwright-core';
import { connectMongo } from '../../src/shared/clients/mongo.js';
import { checkInByToken } from '../../src/shared/features/cron/service.js';
import { createLogger } from '../../src/shared/logger.js';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { Client, sessionCookieOf } from '../support/http.js';
import { confirmAddresses, isConfirmation, startMailCatcher, type MailCatcher } from '../support/smtp.js';

const TOKEN_URL = /^http:\/\/127\.0\.0\.1:\d+\/v1\/checkins\/[0-9A-Za-z]{43}$/;
/** A check-in shows on the open page after the next read of the check (every 5 s). */
const PAGE_WAIT = 15_000;

let dashboard: Dashboard;
let catcher: MailCatcher;
let page: Page;
let api: Client;
const database = `slk_test_web_cron_${randomBytes(4).toString('hex')}`;
const ownerEmail = uniqueEmail('cron-owner');
const oncall = uniqueEmail('cron-oncall');

beforeAll(async () => {
  catcher = await startMailCatcher();
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  dashboard = await startDashboard({ MONGO_URL: mongoUrl, SMTP_URL: catcher.url, MAIL_FROM: 'Sluice <alerts@sluice.test>' });
  await connectMongo(mongoUrl, createLogger('silent'));
  page = await (await dashboard.newContext()).newPage();
  await signUpInBrowser(page, { email: ownerEmail, password: PASSWORD, organization: 'Night Shift' });
  await createProjectInBrowser(page, 'backups');
  // the same person through the API, for what the test checks behind the page (alerts, destinations)
  const login = await fetch(`${dashboard.apiUrl}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: ownerEmail, password: PASSWORD }) });
  api = new Client(dashboard.apiUrl, { cookie: sessionCookieOf(login.headers)!, origin: dashboard.webUrl });
}, 120_000);

afterAll(async () => {
  await dashboard?.close();
  await mongoose.connection.dropDatabase().catch(() => undefined);
  await mongoose.disconnect();
  await catcher?.close();
});

/** Calls a ping URL as a crontab line's curl does, and expects the answer. */
async function ping(url: string, init: RequestInit = {}, status = 200) {
  const answer = await fetch(url, init);
  await answer.text();
  expect([url, answer.status]).toEqual([url, status]);
}

const state = () => page.getByLabel('State', { exact: true });
const pingRows = () => page.getByRole('table', { name: 'Check-ins, newest first' }).getByRole('row');
const preview = (within: Page | ReturnType<Page['getByRole']> = page) => within.getByRole('region', { name: 'Next 5 expected runs' });

/** Fills the "New check" form's name and schedule (the rest keeps its defaults unless given). */
async function fillNewCheck(name: string, schedule: { crontab: string } | { every: string; unit: string }, zone?: string) {
  await page.getByLabel('Name', { exact: true }).fill(name);
  if ('crontab' in schedule) await page.getByLabel('Crontab expression').fill(schedule.crontab);
  else {
    await page.getByRole('radio', { name: 'Interval' }).check();
    await page.getByLabel('Every', { exact: true }).fill(schedule.every);
    await page.getByLabel('Unit').selectOption(schedule.unit);
  }
  if (zone) await page.getByLabel('Time zone').selectOption(zone);
}

describe('a nightly job and its check', () => {
  let checkUrl: string;
  let pingUrl: string;

  test('the empty list says what to do; a check is created with the schedule editor and its preview', async () => {
    await page.goto('/monitors/cron');
    await page.getByRole('heading', { level: 1, name: 'Cron checks' }).waitFor();
    await page.getByRole('heading', { name: 'No cron checks yet' }).waitFor();
    expect(await review(page, 'monitors-cron-empty')).toEqual([]);

    await page.getByRole('button', { name: 'New check' }).first().click();
    await page.waitForURL(/[?&]new=check/);
    await fillNewCheck('Nightly backup', { crontab: '30 2 * * *' }, 'Europe/Berlin');
    await hasCount(preview().getByRole('listitem'), 5);
    for (const run of await preview().getByRole('listitem').allTextContents()) expect(run).toMatch(/02:30/);
    // the preview follows the typing, and says what is wrong with a crontab the server would refuse
    await page.getByLabel('Crontab expression').fill('30 2 31 2 *');
    await showsText(preview(), 'This crontab never runs.');
    await page.getByLabel('Crontab expression').fill('61 2 * * *');
    await showsText(preview(), 'minute 61 is outside 0-59');
    await page.getByLabel('Crontab expression').fill('30 2 * * *');
    await page.getByLabel('Grace (minutes)').fill('15');
    await page.getByLabel('Crontab expression').press('Enter');

    await page.waitForURL(/\/monitors\/cron\/[0-9a-f]{24}/);
    checkUrl = new URL(page.url()).pathname;
    await page.getByRole('heading', { level: 1, name: 'Nightly backup' }).waitFor();
    await showsText(state(), 'new');
    pingUrl = (await page.getByLabel('Ping URL', { exact: true }).textContent())!;
    expect(pingUrl).toMatch(TOKEN_URL);
    await page.getByRole('button', { name: 'Copy ping URL' }).click();
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(pingUrl);
    const crontab = (await page.getByRole('figure', { name: 'crontab line' }).textContent())!;
    expect(crontab).toContain('CRON_TZ=Europe/Berlin');
    expect(crontab).toContain(`30 2 * * * curl -fsS -m 10 --retry 3 -o /dev/null ${pingUrl}/start; /path/to/job.sh; curl -fsS -m 10 --retry 3 -o /dev/null ${pingUrl}/$?`);
    const signals = (await page.getByRole('figure', { name: 'curl lines' }).textContent())!;
    for (const line of [`${pingUrl}/start`, `${pingUrl}\n`, `${pingUrl}/fail`]) expect(signals).toContain(line);
  }, 60_000);

  test('check-ins sent to the ping URL appear on the open page: start, success, a failure with its output, and the recovery', async () => {
    await ping(`${pingUrl}/start`);
    await ping(pingUrl);
    await showsText(state(), 'up', PAGE_WAIT);
    // a header row and one row a check-in
    await hasCount(pingRows(), 3, PAGE_WAIT);
    await expect(pingRows().allTextContents()).resolves.toEqual(['ReceivedSignalDurationRunOutput', expect.stringMatching(/ok.*ms/), expect.stringContaining('started')]);

    await ping(`${pingUrl}/fail`, { method: 'POST', body: 'pg_dump: error: connection to server failed', headers: { 'content-type': 'text/plain' } });
    await showsText(state(), 'reported a failure', PAGE_WAIT);
    const failed = pingRows().filter({ hasText: 'failed' });
    await failed.waitFor({ timeout: PAGE_WAIT });
    await expect(failed.textContent()).resolves.toContain('pg_dump: error');
    await ping(pingUrl);
    await showsText(state(), 'up', PAGE_WAIT);
    await hasCount(pingRows(), 5, PAGE_WAIT);
    // the timeline strip over the range counts them by kind
    await expect(page.getByRole('img', { name: /^Check-ins,/ }).getAttribute('aria-label')).resolves.toMatch(/: 1 started, 2 ok, 1 failed$/);
    expect(await review(page, 'monitors-cron-check')).toEqual([]);
  }, 60_000);

  test('the list shows the check with its schedule, state and last ping; the state filter lives in the URL', async () => {
    await page.goto('/monitors/cron');
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Nightly backup' }) });
    await showsText(row, /backups.*crontab 30 2 \* \* \*.*Europe\/Berlin.*up.*ago/);
    expect(await review(page, 'monitors-cron-list')).toEqual([]);
    await page.getByLabel('State').selectOption('down');
    await page.waitForURL(/[?&]state=down/);
    await page.getByRole('heading', { name: 'No down checks' }).waitFor();
    await page.goBack();
    await row.waitFor();
  }, 30_000);

  test('editing the schedule, pausing and resuming, rotating the token and deleting the check', async () => {
    await page.goto(checkUrl);
    const edit = page.getByRole('form', { name: 'Edit check' });
    await edit.getByLabel('Crontab expression').fill('*/15 * * * 1-5');
    await showsText(preview(edit), /:(00|15|30|45)/);
    for (const run of await preview(edit).getByRole('listitem').allTextContents()) expect(run).toMatch(/:(00|15|30|45)/);
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await showsText(page.getByLabel('Schedule', { exact: true }), 'crontab */15 * * * 1-5');

    await page.getByRole('button', { name: 'Pause' }).click();
    await showsText(state(), 'paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await showsText(state(), 'new');

    await page.getByRole('button', { name: 'Rotate token' }).click();
    const dialog = page.getByRole('dialog', { name: /Rotate the ping URL/ });
    await showsText(dialog, 'stops working at once');
    await dialog.getByRole('button', { name: 'Rotate token' }).click();
    const rotated = page.getByRole('status').filter({ hasText: 'New ping URL' });
    await rotated.waitFor();
    const newUrl = (await rotated.getByLabel('New ping URL').textContent())!;
    expect(newUrl).toMatch(TOKEN_URL);
    expect(newUrl).not.toBe(pingUrl);
    await expect(page.getByLabel('Ping URL', { exact: true }).textContent()).resolves.toBe(newUrl);
    await ping(pingUrl, {}, 404);
    await ping(newUrl);
    await showsText(state(), 'up', PAGE_WAIT);

    await page.getByRole('button', { name: 'Delete check' }).click();
    const confirm = page.getByRole('dialog', { name: /Delete "Nightly backup"/ });
    await showsText(confirm, 'whole check-in history');
    await confirm.getByRole('button', { name: 'Delete check' }).click();
    await page.waitForURL((url) => url.pathname === '/monitors/cron');
    await page.getByRole('heading', { name: 'No cron checks yet' }).waitFor();
    await ping(newUrl, {}, 404);
  }, 60_000);
});

describe('a job that falls silent', () => {
  test('goes late, then down for a missed run, with an alert on /alerts and an e-mail', async () => {
    const destination = await api.post('/v1/alert-destinations', { type: 'email', emails: [oncall] });
    expect(destination.status).toBe(201);
    await confirmAddresses(catcher, api, oncall);

    await page.goto('/monitors/cron?new=check');
    await fillNewCheck('Hourly report', { every: '1', unit: 'minute' });
    await page.getByLabel('Grace (minutes)').fill('1');
    await page.getByRole('button', { name: 'Create check' }).click();
    await page.waitForURL(/\/monitors\/cron\/[0-9a-f]{24}/);
    const checkId = new URL(page.url()).pathname.split('/').at(-1)!;
    const pingUrl = (await page.getByLabel('Ping URL', { exact: true }).textContent())!;

    // its job last checked in 90 s ago: expected 30 s ago, so late now, and missed once the minute's grace is over too
    await checkInByToken(pingUrl.split('/').at(-1)!, { status: 'ok', source: 'http' }, new Date(Date.now() - 90_000));
    await showsText(state(), 'late', PAGE_WAIT);
    expect(await review(page, 'monitors-cron-late')).toEqual([]);
    await showsText(state(), 'missed a check-in', 45_000);
    await pingRows().filter({ hasText: 'missed' }).waitFor({ timeout: PAGE_WAIT });
    await expect(pingRows().filter({ hasText: 'missed' }).textContent()).resolves.toContain('judged by Sluice');

    const alerts = await api.get(`/v1/alerts?kind=cron.down`);
    expect(alerts.body.data.filter((alert: { subject: { id: string } }) => alert.subject.id === checkId)).toEqual([
      expect.objectContaining({ status: 'open', title: 'Cron check "Hourly report" missed a check-in', details: expect.objectContaining({ reason: 'missed' }) }),
    ]);
    await page.goto('/alerts');
    await page.getByText('Cron check "Hourly report" missed a check-in').first().waitFor();
    const [mail] = await catcher.waitFor(1, (m) => m.to.includes(oncall) && !isConfirmation(m), 30_000);
    expect(mail!.subject).toContain('Cron check "Hourly report" missed a check-in');
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 90_000);
});
