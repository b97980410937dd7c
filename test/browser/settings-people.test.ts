/**
 * The organisation's people in a real browser: settings, an API key used from outside and revoked, a member
 * invited by e-mail who signs up from the mailed link and meets their role's limits, a role change and a
 * removal, an invite accepted by a signed-in account, a password reset through the mailed link, and the
 * audit log that records all of it.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { startMailCatcher, type MailCatcher } from '../support/smtp.js';

const ORGANIZATION = 'Lovelace Analytical';
const NEW_PASSWORD = 'a brand new passphrase';

let catcher: MailCatcher;
let dashboard: Dashboard;
let ownerContext: BrowserContext;
let owner: Page;
const ownerEmail = uniqueEmail('owner');
const inviteeEmail = uniqueEmail('invitee');
let inviteLink: string;

beforeAll(async () => {
  catcher = await startMailCatcher();
  dashboard = await startDashboard({ SMTP_URL: catcher.url });
  ownerContext = await dashboard.newContext();
  owner = await ownerContext.newPage();
  await signUpInBrowser(owner, { email: ownerEmail, password: PASSWORD, organization: 'Lovelace Labs', name: 'Ada' });
}, 120_000);
afterAll(async () => {
  await dashboard?.close();
  await catcher?.close();
});

/** The table row that mentions `text`. */
const rowOf = (page: Page, text: string) => page.getByRole('row').filter({ hasText: text });
/** The link a mail carries to the dashboard page under `path`. */
const linkIn = (text: string, path: string) => new RegExp(`https?://\\S+${path}/[0-9A-Za-z]+`).exec(text)![0];

test('the owner renames the organization and sets its retention and a watched gauge', async () => {
  await owner.goto('/settings/organization');
  await owner.getByRole('heading', { level: 1, name: 'Organization' }).waitFor();
  await expect(owner.getByLabel('Organization name').inputValue()).resolves.toBe('Lovelace Labs');
  await owner.getByLabel('Organization name').fill(ORGANIZATION);
  // the slug release tooling uses (SENTRY_ORG) was made from the name at sign-up
  await expect(owner.getByLabel('Organization slug').inputValue()).resolves.toMatch(/^lovelace-labs(-\d+)?$/);
  const slug = `engines-${Date.now().toString(36)}`;
  await owner.getByLabel('Organization slug').fill(slug);
  await owner.getByLabel('Retention (days)').fill('90');
  await owner.getByRole('button', { name: 'Add a gauge' }).click();
  await owner.getByLabel('Gauge 1: metric name').fill('disk.used_ratio');
  await owner.getByLabel('Gauge 1: threshold').fill('0.9');
  await owner.getByLabel('Gauge 1: threshold').press('Enter');
  await owner.getByText('Saved.').waitFor();
  // the top bar names the organization by its new name
  await owner.getByText(ORGANIZATION, { exact: true }).first().waitFor();
  await owner.reload();
  await expect(owner.getByLabel('Retention (days)').inputValue()).resolves.toBe('90');
  await expect(owner.getByLabel('Organization slug').inputValue()).resolves.toBe(slug);
  await expect(owner.getByLabel('Gauge 1: metric name').inputValue()).resolves.toBe('disk.used_ratio');
  expect(await review(owner, 'settings-organization')).toEqual([]);
}, 60_000);

test('an API key created in the browser works as a Bearer token, and is refused once revoked', async () => {
  await owner.goto('/settings/api-keys');
  await owner.getByRole('heading', { name: 'No API keys yet' }).waitFor();
  await owner.getByLabel('Key name').fill('deploy pipeline');
  await expect(owner.getByLabel('Role').locator('option').allTextContents()).resolves.toEqual(['member', 'admin', 'owner']);
  await owner.getByLabel('Role').selectOption('admin');
  await owner.getByRole('button', { name: 'Create key' }).click();
  const secret = (await owner.getByText(/^slk_/).first().textContent())!;
  await owner.getByRole('button', { name: 'Copy api key' }).click();
  expect(await owner.evaluate('navigator.clipboard.readText()')).toBe(secret);
  await owner.getByText('cannot show it again').waitFor();

  const asKey = (path: string) => fetch(`${dashboard.apiUrl}${path}`, { headers: { Authorization: `Bearer ${secret}` } });
  const me = await asKey('/v1/me');
  expect(me.status).toBe(200);
  const settings = await (await asKey('/v1/settings')).json();
  expect(settings).toMatchObject({ organization: { name: ORGANIZATION }, retention_days: 90, thresholds: { gauges: [{ name: 'disk.used_ratio', threshold: 0.9 }] } });

  const row = rowOf(owner, 'deploy pipeline');
  await showsText(row, 'admin');
  await showsText(row, ownerEmail);
  expect(await review(owner, 'settings-api-keys')).toEqual([]);

  await row.getByRole('button', { name: 'Revoke' }).click();
  const dialog = owner.getByRole('dialog', { name: 'Revoke the key "deploy pipeline"?' });
  await showsText(dialog, 'refused from its next request');
  await dialog.getByRole('button', { name: 'Revoke' }).click();
  await owner.getByRole('heading', { name: 'No API keys yet' }).waitFor();
  expect((await asKey('/v1/me')).status).toBe(401);
}, 60_000);

describe('a member invited by e-mail', () => {
  let inviteeContext: BrowserContext;
  let invitee: Page;
  afterAll(() => inviteeContext?.close());

  test('gets the link by mail and on screen, signs up from it as the invited address and joins', async () => {
    await owner.goto('/settings/members');
    await owner.getByRole('heading', { level: 1, name: 'Members' }).waitFor();
    await owner.getByLabel('Email').fill(inviteeEmail);
    await owner.getByRole('button', { name: 'Invite', exact: true }).click();
    inviteLink = (await owner.getByText(/\/invites\//).first().textContent())!;
    await owner.getByText(`Mailed to ${inviteeEmail}`).waitFor();
    const [mail] = await catcher.waitFor(1, (m) => m.to.includes(inviteeEmail));
    expect(mail!.subject).toBe(`You are invited to ${ORGANIZATION} on Sluice`);
    expect(linkIn(mail!.text, '/invites')).toBe(inviteLink);
    await showsText(rowOf(owner, inviteeEmail), 'invited');
    expect(await review(owner, 'settings-members')).toEqual([]);

    inviteeContext = await dashboard.newContext();
    invitee = await inviteeContext.newPage();
    await invitee.goto(inviteLink);
    await invitee.getByRole('heading', { level: 1, name: 'You are invited to Sluice' }).waitFor();
    expect(await review(invitee, 'invite-signed-out')).toEqual([]);
    // another address cannot use the token: the API's refusal is shown
    await invitee.getByLabel('Email').fill(uniqueEmail('stranger'));
    await invitee.getByLabel('Password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Sign up and join' }).click();
    await showsText(invitee.getByRole('alert'), 'invite not found, already used, expired or withdrawn');
    await invitee.getByLabel('Email').fill(inviteeEmail);
    await invitee.getByLabel('Your name').fill('Charles');
    await invitee.getByRole('button', { name: 'Sign up and join' }).click();
    await invitee.waitForURL((url) => !url.pathname.startsWith('/invites/'));
    await invitee.getByText(ORGANIZATION, { exact: true }).first().waitFor();
    await owner.reload();
    await showsText(rowOf(owner, inviteeEmail), 'active');
  }, 60_000);

  test('sees their role’s limits: settings read-only, no API keys, members without actions, no audit log', async () => {
    await invitee.goto('/settings/organization');
    await expect(invitee.getByLabel('Organization name').inputValue()).resolves.toBe(ORGANIZATION);
    await expect(invitee.getByLabel('Organization name').isEditable()).resolves.toBe(false);
    await invitee.getByText('Only owners and admins can change these settings').waitFor();
    expect(await invitee.getByRole('button', { name: 'Save changes' }).count()).toBe(0);

    await invitee.goto('/settings/api-keys');
    await invitee.getByText('Only owners and admins can see, create or revoke API keys').waitFor();
    expect(await invitee.getByRole('button', { name: 'Create key' }).count()).toBe(0);

    await invitee.goto('/settings/members');
    await showsText(rowOf(invitee, inviteeEmail), '(you)');
    await invitee.getByText('Only owners and admins can invite members').waitFor();
    expect(await invitee.getByRole('button', { name: 'Invite' }).count()).toBe(0);
    expect(await invitee.getByRole('button', { name: /Change role|Remove|Leave/ }).count()).toBe(0);
    await showsText(invitee.getByRole('table', { name: /^Roles/ }), 'watches session replays');
    expect(await review(invitee, 'settings-members-as-member')).toEqual([]);

    await invitee.goto('/settings/audit-log');
    await invitee.getByText('Only owners and admins can read the audit log').waitFor();
  }, 60_000);

  test('the owner makes them an admin, which their next page shows, and then removes them', async () => {
    await owner.goto('/settings/members');
    const row = rowOf(owner, inviteeEmail);
    // the owner's own row: the last owner may not step down, and the API says so in the row
    const own = rowOf(owner, ownerEmail);
    await own.getByLabel(`Role of ${ownerEmail}`).selectOption('admin');
    await own.getByRole('button', { name: 'Change role' }).click();
    await showsText(own.getByRole('alert'), 'the last owner cannot be removed or demoted');

    await row.getByLabel(`Role of ${inviteeEmail}`).selectOption('admin');
    await row.getByRole('button', { name: 'Change role' }).click();
    await showsText(row, 'Now admin.');
    await invitee.goto('/settings/api-keys');
    await invitee.getByRole('button', { name: 'Create key' }).waitFor();
    // an admin may grant no higher than admin
    await expect(invitee.getByLabel('Role').locator('option').allTextContents()).resolves.toEqual(['member', 'admin']);

    await row.getByRole('button', { name: 'Remove' }).click();
    const dialog = owner.getByRole('dialog', { name: `Remove ${inviteeEmail}?` });
    await showsText(dialog, 'their sessions in it end and the API keys they created are revoked');
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await hasCount(rowOf(owner, inviteeEmail), 0);
    // their session ended with the membership: the next page asks them to log in
    await invitee.reload();
    await invitee.waitForURL(/\/login/);
  }, 60_000);

  test('a used invitation is refused plainly when opened again', async () => {
    await invitee.getByLabel('Email').fill(inviteeEmail);
    await invitee.getByLabel('Password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Log in' }).click();
    // removed from the only organization they had, the account cannot log in: the API says why
    await showsText(invitee.getByRole('alert'), 'not a member of any organization');
    await invitee.goto(inviteLink);
    await invitee.getByLabel('Email').fill(inviteeEmail);
    await invitee.getByLabel('Password').fill(PASSWORD);
    await invitee.getByRole('button', { name: 'Sign up and join' }).click();
    await showsText(invitee.getByRole('alert'), 'The invitation was refused');
  }, 30_000);
});

test('someone already signed in joins with "Join" and lands in the inviting organization', async () => {
  const context = await dashboard.newContext();
  const page = await context.newPage();
  const email = uniqueEmail('existing');
  await signUpInBrowser(page, { email, password: PASSWORD, organization: 'Babbage Engines' });

  await owner.goto('/settings/members');
  await owner.getByLabel('Email').fill(email);
  await owner.getByLabel('Role', { exact: true }).selectOption('admin');
  await owner.getByRole('button', { name: 'Invite', exact: true }).click();
  const link = (await owner.getByText(/\/invites\//).first().textContent())!;

  await page.goto(link);
  await page.getByRole('heading', { level: 1, name: 'Join an organization' }).waitFor();
  await showsText(page.getByText('You are signed in as'), 'Babbage Engines');
  expect(await review(page, 'invite-signed-in')).toEqual([]);
  await page.getByRole('button', { name: 'Join' }).click();
  await page.waitForURL((url) => !url.pathname.startsWith('/invites/'));
  await page.getByText(ORGANIZATION, { exact: true }).first().waitFor();
  // the same link again: used, so the API refuses it and the page says so
  await page.goto(link);
  await page.getByRole('button', { name: 'Join' }).click();
  await showsText(page.getByRole('alert'), 'This invitation cannot be used');
  await showsText(page.getByRole('alert'), 'invite not found, already used, expired or withdrawn');
  await context.close();
}, 60_000);

test('a forgotten password is reset through the mailed link, and the old sessions end', async () => {
  const context = await dashboard.newContext();
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  await page.getByRole('heading', { level: 1, name: 'Reset your password' }).waitFor();
  expect(await review(page, 'forgot-password')).toEqual([]);
  await page.getByLabel('Email').fill(ownerEmail);
  await page.getByRole('button', { name: 'Send the reset link' }).click();
  await page.getByText('Check your inbox.').waitFor();

  const [mail] = await catcher.waitFor(1, (m) => m.to.includes(ownerEmail) && m.subject === 'Reset your Sluice password');
  await page.goto(linkIn(mail!.text, '/reset-password'));
  await page.getByRole('heading', { level: 1, name: 'Choose a new password' }).waitFor();
  await page.getByLabel(/^New password/).fill(NEW_PASSWORD);
  await page.getByLabel('Repeat the new password').fill(`${NEW_PASSWORD}!`);
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await showsText(page.getByRole('alert'), 'The two passwords differ');
  expect(await review(page, 'reset-password')).toEqual([]);
  await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
  await page.getByRole('button', { name: 'Set the new password' }).click();
  await page.getByText('Your new password is set').waitFor();
  await page.getByRole('link', { name: 'Log in' }).click();

  // the owner's earlier session ended with the reset
  await owner.goto('/settings/members');
  await owner.waitForURL(/\/login/);
  await owner.getByLabel('Email').fill(ownerEmail);
  await owner.getByLabel('Password').fill(NEW_PASSWORD);
  await owner.getByRole('button', { name: 'Log in' }).click();
  await owner.waitForURL('**/settings/members');
  await context.close();
}, 60_000);

test('the audit log shows who did each of these, filtered by action in the URL', async () => {
  await owner.goto('/settings/audit-log');
  await owner.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
  const table = owner.getByRole('table', { name: 'Audit entries, newest first' });
  for (const action of ['settings.update', 'api_key.create', 'api_key.revoke', 'member.invite', 'member.join', 'member.role_change', 'member.remove', 'user.password_reset']) {
    await table.getByRole('link', { name: action }).first().waitFor();
  }
  await showsText(rowOf(owner, 'api_key.create'), ownerEmail);
  await showsText(rowOf(owner, 'api_key.create'), 'API key "deploy pipeline"');
  await showsText(rowOf(owner, 'member.remove'), `member ${inviteeEmail} (removed)`);
  // the role change names the member from what the page's other entries recorded of them
  await showsText(rowOf(owner, 'member.role_change'), `member ${inviteeEmail} (removed)`);
  await showsText(rowOf(owner, 'settings.update'), `Lovelace Labs → ${ORGANIZATION}`);
  expect(await review(owner, 'settings-audit-log')).toEqual([]);

  await owner.getByLabel('Action').fill('member.role_change');
  await owner.getByLabel('Action').press('Enter');
  await owner.waitForURL(/[?&]action=member\.role_change/);
  await hasCount(owner.getByRole('table', { name: 'Audit entries for member.role_change' }).getByRole('row'), 2);
  await showsText(owner.getByRole('table'), 'to: admin');
  await owner.goBack();
  await owner.waitForURL((url) => !url.searchParams.has('action'));
  await owner.getByRole('table', { name: 'Audit entries, newest first' }).waitFor();
  expect(unexpectedProblems(dashboard)).toEqual([]);
}, 60_000);
