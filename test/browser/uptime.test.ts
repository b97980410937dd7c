/**
 * Uptime monitors in a real browser, probing a local HTTP service the test starts: the outbound guard's
 * refusal of a private address shown beside the URL, a monitor of the loopback service (allowed through
 * OUTBOUND_ALLOWLIST, as a self-hosted install lists its own network) going up, then down with an incident
 * once the service is stopped, and edited, paused and deleted from its page.
 */
import type { Page } from 'playwright-core';
import { createProjectInBrowser, hasCount, review, showsText, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { PASSWORD, uniqueEmail } from '../support/factories/accounts.js';
import { startTarget, type Target } from '../support/targets.js';

/** The scheduler hands due monitors to a probe every 5 s, and the page reads the monitor every 5 s. */
const PROBE_WAIT = 20_000;

let dashboard: Dashboard;
let service: Target;
let page: Page;

beforeAll(async () => {
  service = await startTarget({ status: 200, body: 'all good' });
  dashboard = await startDashboard({ OUTBOUND_ALLOWLIST: '127.0.0.1' });
  page = await (await dashboard.newContext()).newPage();
  await signUpInBrowser(page, { email: uniqueEmail('uptime-owner'), password: PASSWORD, organization: 'Always On' });
  await createProjectInBrowser(page, 'storefront');
}, 120_000);

afterAll(async () => {
  await dashboard?.close();
  await service?.close();
});

const status = () => page.getByLabel('Status', { exact: true });
const form = () => page.getByRole('form', { name: 'New monitor' });

/** The uptime figure is the share of the range's probes that were up, and some were not. */
async function uptimeAddsUp() {
  const uptime = page.getByLabel('Uptime in this range', { exact: true });
  await showsText(uptime, /probes up/);
  const [, percent, up, all] = /^([\d.]+) %(\d+) of (\d+) probes up$/.exec((await uptime.textContent())!)!;
  expect(Number(up)).toBeLessThan(Number(all));
  expect(Number(percent)).toBeCloseTo((100 * Number(up)) / Number(all), 2);
}

describe('an uptime monitor of a local service', () => {
  let monitorUrl: string;

  test('the empty list says what to do; a private address is refused beside the URL field', async () => {
    await page.goto('/monitors/uptime');
    await page.getByRole('heading', { level: 1, name: 'Uptime monitors' }).waitFor();
    await page.getByRole('heading', { name: 'No uptime monitors yet' }).waitFor();
    expect(await review(page, 'monitors-uptime-empty')).toEqual([]);

    await page.getByRole('button', { name: 'New monitor' }).first().click();
    await form().getByLabel('Name', { exact: true }).fill('Shop health');
    const url = form().getByLabel('URL', { exact: true });
    await url.fill('http://10.1.2.3/healthz');
    await form().getByRole('button', { name: 'Create monitor' }).click();
    const refusal = form().getByRole('alert').filter({ hasText: /^Refused: address 10\.1\.2\.3 is not allowed/ });
    await refusal.waitFor();
    await expect(url.getAttribute('aria-invalid')).resolves.toBe('true');
    // the refusal describes the field it is about
    const describedBy = (await url.getAttribute('aria-describedby'))!.split(' ');
    expect(describedBy).toContain(await refusal.getAttribute('id'));
    await showsText(form().getByRole('alert').last(), 'validation_failed');
    expect(await review(page, 'monitors-uptime-refused')).toEqual([]);
  }, 60_000);

  test('a loopback service the allowlist names is probed and shown up', async () => {
    await form().getByLabel('URL', { exact: true }).fill(`${service.url}/healthz`);
    await form().getByLabel('Keyword', { exact: true }).fill('good');
    await form().getByLabel('Failures before down', { exact: true }).fill('1');
    await form().getByRole('button', { name: 'Add header' }).click();
    await form().getByLabel('Header 1 name').fill('Authorization');
    await form().getByLabel('Header 1 value').fill('Bearer probe-secret');
    await form().getByLabel('Expected status', { exact: true }).press('Enter');
    await page.waitForURL(/\/monitors\/uptime\/[0-9a-f]{24}/);
    monitorUrl = new URL(page.url()).pathname;
    await page.getByRole('heading', { level: 1, name: 'Shop health' }).waitFor();
    await showsText(status(), 'up', PROBE_WAIT);
    await showsText(page.getByLabel('Uptime in this range', { exact: true }), '100 %', PROBE_WAIT);
    await hasCount(page.getByRole('table', { name: 'Probe results, newest first' }).getByRole('row'), 2, PROBE_WAIT);
    await showsText(page.getByRole('table', { name: 'Probe results, newest first' }), /up200[\d.,]+ (ms|µs)/);
    expect(service.requests.at(-1)).toMatchObject({ method: 'GET', path: '/healthz', headers: expect.objectContaining({ authorization: 'Bearer probe-secret' }) });
    // the stored header comes back masked, and the edit form keeps it masked
    await expect(page.getByRole('form', { name: 'Edit monitor' }).getByLabel('Header 1 value').inputValue()).resolves.toBe('[Filtered]');

    await page.goto('/monitors/uptime');
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'Shop health' }) });
    await showsText(row, /storefront.*up(now|.*ago)60 s/);
    expect(await review(page, 'monitors-uptime-list')).toEqual([]);
  }, 60_000);

  test('the service stops: the next probe (at once after a resume) takes it down with an incident', async () => {
    await page.goto(monitorUrl);
    await showsText(status(), 'up');
    await page.getByRole('button', { name: 'Pause' }).click();
    await showsText(status(), 'paused');
    await service.close();
    await page.getByRole('button', { name: 'Resume' }).click();
    await showsText(status(), 'down', PROBE_WAIT);
    const incidents = page.getByRole('table', { name: 'Incidents, newest first' });
    await hasCount(incidents.getByRole('row'), 2, PROBE_WAIT);
    await showsText(incidents.getByRole('row').nth(1), /ongoing.*1/);
    await uptimeAddsUp();
    expect(await review(page, 'monitors-uptime-monitor')).toEqual([]);
  }, 60_000);

  test('editing the monitor sends only what changed; deleting it says what is lost', async () => {
    const edit = page.getByRole('form', { name: 'Edit monitor' });
    await edit.getByLabel('Interval (seconds)', { exact: true }).fill('120');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await showsText(page.getByRole('status').filter({ hasText: 'Saved.' }), 'Saved.');
    await page.getByText('every 120 s').waitFor();

    await page.getByRole('button', { name: 'Delete monitor' }).click();
    const confirm = page.getByRole('dialog', { name: /Delete "Shop health"/ });
    await showsText(confirm, 'all its probe results');
    await confirm.getByRole('button', { name: 'Delete monitor' }).click();
    await page.waitForURL((url) => url.pathname === '/monitors/uptime');
    await page.getByRole('heading', { name: 'No uptime monitors yet' }).waitFor();
    expect(unexpectedProblems(dashboard)).toEqual([]);
  }, 60_000);
});
