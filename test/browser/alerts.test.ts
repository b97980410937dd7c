/**
 * Alerts, destinations, digests and the address confirmation page in a real browser, against real
 * collaborators: a loopback webhook receiver that checks the signature as its owner would, the mail
 * catcher for confirmation links and alert mail, and an error sent through the ingest port for a real alert.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard, logInInBrowser } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { envelope, errorEvent } from '../support/factories/telemetry.js';
import { isConfirmation, startMailCatcher, type MailCatcher } from '../support/smtp.js';
import { startTarget, type Target } from '../support/targets.js';

const DELIVERY_WAIT = 30_000;

let dashboard: Dashboard;
let catcher: MailCatcher;
let receiver: Target;
let context: BrowserContext;
let page: Page;
let projectId: string;
let dsn: URL;
const ownerEmail = uniqueEmail('alerts-owner');
const oncall = uniqueEmail('oncall');

beforeAll(async () => {
  catcher = await startMailCatcher();
  // a receiver with a bug answers 500 under /broken/
  receiver = await startTarget((req) => (req.url?.startsWith('/broken/') ? { status: 500, body: 'receiver bug' } : { status: 200, body: 'ok' }));
  dashboard = await startDashboard({ SMTP_URL: catcher.url, MAIL_FROM: 'Sluice <alerts@sluice.test>', OUTBOUND_ALLOWLIST: '127.0.0.1' });
  context = await dashboard.newContext();
  page = await context.newPage();
  await signUpInBrowser(page, { email: ownerEmail, password: PASSWORD, organization: 'Alert Keepers' });
  const project = await createProjectInBrowser(page, 'storefront');
  projectId = project.projectId;
  dsn = new URL(project.dsn);
}, 120_000);

afterAll(async () => {
  await dashboard?.close();
  await receiver?.close();
  await catcher?.close();
});

/** The check a receiver makes (docs/api.md): HMAC-SHA256 of the raw body with the secret, compared in constant time. */
function signatureHolds(secret: string, raw: string, header: string | string[] | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
  const given = Buffer.from(String(header ?? ''));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const destinations = () => page.getByRole('list', { name: 'Alert destinations' }).locator(':scope > li');
const destinationCard = (name: string) => destinations().filter({ has: page.getByRole('heading', { level: 3, name, exact: true }) });
/** The value a destination's card shows for one of its facts ("Alert kinds", "Signed"…). */
const fact = (card: ReturnType<typeof destinationCard>, term: string) => card.locator(`dt:text-is("${term}") + dd`);

/** Fills the "Add a destination" form and submits it. */
async function addDestination(fields: { type: 'Email' | 'Webhook' | 'Slack'; name: string; target: string; secret?: string; kinds?: string[] }) {
  await page.getByRole('radio', { name: fields.type }).check();
  await page.getByLabel('Name (optional)').fill(fields.name);
  if (fields.type === 'Email') await page.getByLabel('Addresses').fill(fields.target);
  else await page.getByLabel(fields.type === 'Slack' ? 'Slack incoming-webhook URL' : 'Webhook URL').fill(fields.target);
  if (fields.secret) await page.getByLabel('Signing secret (optional)').fill(fields.secret);
  for (const kind of fields.kinds ?? []) await page.getByRole('checkbox', { name: kind }).check();
  await page.getByRole('button', { name: 'Add destination' }).click();
  await destinationCard(fields.name).waitFor();
}

describe('destinations', () => {
  test('a webhook gets a server-made secret shown once; "Send a test" delivers a signed test alert and shows the outcome in place', async () => {
    await page.goto('/alerts/destinations');
    await page.getByRole('heading', { level: 1, name: 'Alert destinations' }).waitFor();
    await page.getByRole('heading', { name: 'No destinations yet' }).waitFor();

    await addDestination({ type: 'Webhook', name: 'Ops receiver', target: `${receiver.url}/hook/ops`, kinds: ['New issue', 'Cron check down'] });
    const shown = page.getByRole('status').filter({ hasText: 'Signing secret' });
    const secret = (await shown.locator('code').textContent())!;
    expect(secret).toMatch(/^whsec_[0-9A-Za-z]{30,}$/);
    await shown.getByRole('button', { name: 'Copy signing secret' }).click();
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(secret);

    const card = destinationCard('Ops receiver');
    await expect(fact(card, 'Alert kinds').textContent()).resolves.toBe('New issue, Cron check down');
    await expect(fact(card, 'Projects').textContent()).resolves.toBe('Every project');
    await expect(fact(card, 'Signed').textContent()).resolves.toBe('Yes, with X-Sluice-Signature');
    // the URL is shown as its host: the path may be a credential
    await expect(card.textContent()).resolves.not.toContain('/hook/ops');

    await card.getByRole('button', { name: /^Send a test/ }).click();
    await showsText(card, 'Test delivered');
    await showsText(card, 'HTTP 200');

    const [request] = receiver.requests.filter((r) => r.path === '/hook/ops');
    expect(signatureHolds(secret, request!.body, request!.headers['x-sluice-signature'])).toBe(true);
    expect(JSON.parse(request!.body)).toMatchObject({ event: 'alert.test', alert: { kind: 'test', title: 'This destination receives Sluice alerts' } });
    expect(await review(page, 'alert-destinations')).toEqual([]);

    // once gone from the page, the secret is not shown again
    await page.reload();
    await destinationCard('Ops receiver').waitFor();
    await expect(page.content()).resolves.not.toContain(secret);
  }, 60_000);

  test('a receiver answering 500 shows the failed test with its status and reason', async () => {
    await page.goto('/alerts/destinations');
    await addDestination({ type: 'Webhook', name: 'Broken receiver', target: `${receiver.url}/broken/hook`, secret: 'typed-secret-123' });
    await expect(page.getByRole('status').filter({ hasText: 'Signing secret' }).count()).resolves.toBe(0);
    const card = destinationCard('Broken receiver');
    await card.getByRole('button', { name: /^Send a test/ }).click();
    await showsText(card, `Test failed: ${new URL(receiver.url).host} answered 500`);
    await showsText(card, 'HTTP 500');
    expect(receiver.requests.filter((r) => r.path === '/broken/hook')).toHaveLength(1);
  }, 30_000);

  test('an e-mail address awaits confirmation; its mailed link opens /confirm-email/:token, which confirms it once', async () => {
    await page.goto('/alerts/destinations');
    await addDestination({ type: 'Email', name: 'On-call mail', target: oncall });
    const card = destinationCard('On-call mail');
    await showsText(card, 'awaiting confirmation');
    await card.getByRole('button', { name: /^Send a test/ }).click();
    await showsText(card, 'Test failed: not sent: no address of this destination is confirmed yet');

    const [mail] = await catcher.waitFor(1, (m) => m.to.includes(oncall) && isConfirmation(m));
    const link = /(https?:\/\/\S+\/confirm-email\/[0-9A-Za-z]+)/.exec(mail!.text)![1]!;
    expect(link.startsWith(`${dashboard.webUrl}/confirm-email/`)).toBe(true);

    // the recipient has no account: a browser that never signed in
    const stranger = await (await dashboard.newContext()).newPage();
    await stranger.goto(link);
    await stranger.getByRole('heading', { level: 1, name: 'Confirm your address' }).waitFor();
    expect(await review(stranger, 'confirm-email')).toEqual([]);
    await stranger.getByRole('button', { name: 'Confirm this address' }).click();
    await stranger.getByRole('heading', { level: 1, name: 'Address confirmed' }).waitFor();
    await showsText(stranger.getByRole('status'), `${oncall} is confirmed`);
    expect(await review(stranger, 'confirm-email-done')).toEqual([]);

    // a used link is refused with the API's message
    await stranger.goto(link);
    await stranger.getByRole('button', { name: 'Confirm this address' }).click();
    await showsText(stranger.getByRole('alert'), 'The address was not confirmed');
    await showsText(stranger.getByRole('alert'), 'not_found');
    await stranger.context().close();

    await page.reload();
    await showsText(destinationCard('On-call mail'), 'confirmed');
    await destinationCard('On-call mail').getByRole('button', { name: /^Send a test/ }).click();
    await showsText(destinationCard('On-call mail'), `Test delivered to ${oncall}`);
    const [test] = await catcher.waitFor(1, (m) => m.to.includes(oncall) && m.subject.startsWith('[Sluice] Test:'));
    expect(test!.subject).toBe('[Sluice] Test: This destination receives Sluice alerts');
  }, 60_000);

  test('deleting asks first and says what stops', async () => {
    await page.goto('/alerts/destinations');
    const card = destinationCard('Broken receiver');
    await card.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this destination?' });
    await showsText(dialog, 'Alerts stop going to Broken receiver (Webhook) at once');
    await dialog.getByRole('button', { name: 'Delete destination' }).click();
    await card.waitFor({ state: 'detached' });
    await hasCount(destinations(), 2);
  }, 30_000);
});

describe('the alert history', () => {
  test('a new issue opens an alert that shows with its kind, status and each delivery, and the filters live in the URL', async () => {
    const sent = await fetch(`${dashboard.ingestUrl}/api${dsn.pathname}/envelope/?sentry_key=${dsn.username}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-sentry-envelope' },
      body: envelope({}, [{ type: 'event', payload: errorEvent({ fingerprint: ['basket-total'] }, { type: 'BasketError', value: 'the basket total is not a number' }) }]),
    });
    expect(sent.status).toBe(200);

    await page.goto(`/alerts?project=${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Alerts' }).waitFor();
    const alert = page.getByRole('row').filter({ hasText: 'New issue: BasketError' });
    await alert.waitFor({ timeout: DELIVERY_WAIT });
    await expect(alert.getByRole('cell').nth(1).textContent()).resolves.toBe('New issue');
    await expect(alert.getByRole('cell').nth(2).textContent()).resolves.toBe('open');
    await expect(alert.getByRole('cell').nth(3).textContent()).resolves.toBe('storefront');
    // both live destinations take it (the list reads itself again every few seconds)
    await showsText(alert.getByRole('cell').nth(6), '2 sent', DELIVERY_WAIT);

    await alert.getByRole('button', { name: /New issue: BasketError/ }).click();
    await page.waitForURL(/[?&]alert=[0-9a-f]{24}/);
    const deliveries = page.getByRole('table', { name: 'Deliveries' });
    const toOps = deliveries.getByRole('row').filter({ hasText: 'Ops receiver (Webhook)' });
    await expect(toOps.getByRole('cell').nth(2).textContent()).resolves.toBe('sent');
    await expect(toOps.getByRole('cell').nth(3).textContent()).resolves.toBe('1');
    await showsText(deliveries.getByRole('row').filter({ hasText: 'On-call mail (Email)' }), 'sent');
    const hook = receiver.requests.filter((r) => r.path === '/hook/ops').map((r) => JSON.parse(r.body));
    expect(hook.map((body) => body.event)).toEqual(['alert.test', 'alert.opened']);
    await catcher.waitFor(1, (m) => m.to.includes(oncall) && m.subject.startsWith('[Sluice] Alert: New issue: BasketError'));
    expect(await review(page, 'alerts')).toEqual([]);

    await page.getByLabel('Kind').selectOption('cron.down');
    await page.waitForURL((url) => url.searchParams.get('kind') === 'cron.down' && !url.searchParams.has('alert'));
    await page.getByRole('heading', { name: 'No alert matches these filters' }).waitFor();
    await page.goBack();
    await page.waitForURL((url) => !url.searchParams.has('kind'));
    await page.getByRole('row').filter({ hasText: 'New issue: BasketError' }).waitFor();
  }, 90_000);
});

describe('digests', () => {
  test('the schedule takes every field, the preview renders the mail in a sandboxed frame, and stopping asks first', async () => {
    await page.goto('/reports');
    await page.getByRole('heading', { level: 1, name: 'Digests' }).waitFor();
    await showsText(page.getByRole('region', { name: 'Schedule' }), 'No digest is sent yet');

    const frame = page.locator('iframe.digest-frame');
    await frame.waitFor();
    await expect(frame.getAttribute('sandbox')).resolves.toBe('');
    const subject = (await page.locator('.preview-facts dd').first().textContent())!;
    expect(subject).toMatch(/^Sluice daily digest for Alert Keepers: \d{4}-\d{2}-\d{2}$/);
    const mail = page.frameLocator('iframe.digest-frame');
    await showsText(mail.getByRole('heading', { level: 1 }), subject);
    await showsText(mail.getByRole('heading', { level: 2 }), 'storefront');
    await showsText(mail.locator('body'), 'BasketError');

    await page.getByRole('radio', { name: 'Weekly' }).check();
    await page.getByRole('combobox', { name: 'Day', exact: true }).selectOption('friday');
    await page.getByLabel('Send at').fill('08:30');
    await page.getByLabel('Time zone').fill('Europe/Berlin');
    await page.getByLabel('Recipients').fill('team@example.test');
    await page.getByRole('button', { name: 'Start the digest' }).click();
    await showsText(page.getByRole('status').filter({ hasText: 'Schedule saved' }), 'The next digest goes out');
    await showsText(page.getByRole('list', { name: 'Recipients' }), 'team@example.test awaiting confirmation');
    // the next send is a Friday at 08:30 in Berlin
    const next = await page.locator('dl.stats time').first().getAttribute('datetime');
    const berlin = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', weekday: 'long', hour: '2-digit', minute: '2-digit' }).format(new Date(next!));
    expect(berlin).toBe('Friday 08:30');
    // the preview now renders the weekly period
    await showsText(mail.getByRole('heading', { level: 1 }), 'Sluice weekly digest for Alert Keepers', 15_000);
    // Chromium paints a sandboxed frame out of process, and only once it has been in view: the screenshots need it painted
    await frame.scrollIntoViewIfNeeded();
    expect(await review(page, 'digests')).toEqual([]);

    await page.getByRole('button', { name: 'Stop the digest' }).click();
    const dialog = page.getByRole('dialog', { name: 'Stop the digest?' });
    await showsText(dialog, 'No more digests are sent to its 1 recipients');
    await dialog.getByRole('button', { name: 'Stop the digest' }).click();
    await showsText(page.getByRole('region', { name: 'Schedule' }), 'No digest is sent yet');
    await page.getByRole('button', { name: 'Start the digest' }).waitFor();
  }, 60_000);
});

describe('a member', () => {
  test('reads the alert history and the digest preview; destinations and the schedule say who may change them', async () => {
    // the owner invites a member through the API with the browser's session, as the members page would
    const cookie = (await context.cookies(dashboard.apiUrl)).map((c) => `${c.name}=${c.value}`).join('; ');
    const memberEmail = uniqueEmail('alerts-member');
    const invite = await fetch(`${dashboard.apiUrl}/v1/members`, { method: 'POST', headers: { cookie, origin: dashboard.webUrl, 'content-type': 'application/json' }, body: JSON.stringify({ email: memberEmail, role: 'member' }) });
    const { invite_token } = (await invite.json()) as { invite_token: string };
    const joined = await fetch(`${dashboard.apiUrl}/v1/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: memberEmail, password: PASSWORD, name: 'Mel Member', invite_token }) });
    expect(joined.status).toBe(201);

    const member = await (await dashboard.newContext()).newPage();
    await logInInBrowser(member, memberEmail, PASSWORD);

    await member.goto('/alerts/destinations');
    await showsText(member.getByRole('note'), 'Only admins and owners see and change alert destinations');
    await expect(member.getByRole('button', { name: 'Add destination' }).count()).resolves.toBe(0);
    expect(await review(member, 'alert-destinations-member')).toEqual([]);

    await member.goto('/reports');
    await showsText(member.getByRole('note'), 'Only admins and owners see and change the digest schedule');
    await expect(member.getByRole('button', { name: /Start the digest|Save schedule/ }).count()).resolves.toBe(0);
    await showsText(member.frameLocator('iframe.digest-frame').getByRole('heading', { level: 1 }), 'Sluice daily digest for Alert Keepers');

    await member.goto('/alerts');
    await member.getByRole('button', { name: /New issue: BasketError/ }).click();
    await showsText(member.getByRole('table', { name: 'Deliveries' }), 'sent');
    await member.context().close();
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 60_000);
});
