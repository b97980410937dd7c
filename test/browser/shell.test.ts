import { createProjectInBrowser, logInInBrowser, showsText, review, signUpInBrowser, startDashboard, unexpectedProblems, type Dashboard } from '../support/browser.js';
import { uniqueEmail, PASSWORD } from '../support/factories/accounts.js';

let dashboard: Dashboard;
beforeAll(async () => {
  dashboard = await startDashboard();
}, 90_000);
afterAll(() => dashboard?.close());

describe('the dashboard server', () => {
  test('every path answers the app with a strict CSP; hashed assets are immutable and index.html is never cached', async () => {
    const page = await fetch(`${dashboard.webUrl}/issues/some-issue?project=x`);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(csp).toContain(`connect-src 'self' ${dashboard.apiUrl}`);
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const asset = html.match(/src="(\/assets\/[^"]+\.js)"/)![1]!;
    const script = await fetch(`${dashboard.webUrl}${asset}`);
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${dashboard.webUrl}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${dashboard.webUrl}/../../package.json`)).status).toBe(200);
    expect(await (await fetch(`${dashboard.webUrl}/%2e%2e/%2e%2e/package.json`)).text()).not.toContain('"name": "sluice"');
  });

  test('/config.json tells the app the API on the host the browser used', async () => {
    const config = await (await fetch(`${dashboard.webUrl}/config.json`)).json();
    expect(config).toEqual({ api_url: dashboard.apiUrl, sso: false, ai: false, checkout: false, ingest_url: expect.any(String) });
  });

  test('opened as 127.0.0.1, the dashboard sends the browser to its own origin, where the API accepts its calls', async () => {
    const port = new URL(dashboard.webUrl).port;
    const answer = await fetch(`http://127.0.0.1:${port}/issues?status=resolved`, { redirect: 'manual' });
    expect(answer.status).toBe(302);
    expect(answer.headers.get('location')).toBe(`${dashboard.webUrl}/issues?status=resolved`);
  });
});

describe('a new user', () => {
  test('signs up, creates a project, sees the DSN with a copy button, logs out and back in', async () => {
    const context = await dashboard.newContext();
    const page = await context.newPage();
    const email = uniqueEmail('web');
    await signUpInBrowser(page, { email, password: PASSWORD, organization: 'Acme Web', name: 'Ada' });
    await page.getByRole('heading', { level: 1, name: 'Set up a project' }).waitFor();
    expect(await review(page, 'onboarding-create')).toEqual([]);
    const { dsn } = await createProjectInBrowser(page, 'checkout-web');
    expect(dsn).toMatch(new RegExp(`^http://[0-9a-f]+@localhost:${new URL(dashboard.ingestUrl).port}/\\d+$`));
    await page.getByRole('button', { name: 'Copy DSN' }).click();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(dsn);
    await page.getByText('Waiting for the first event').waitFor();
    await page.getByLabel('SDK').selectOption({ label: 'Python (sentry_sdk)' });
    await page.getByText(`dsn="${dsn}"`).waitFor();
    expect(await review(page, 'onboarding-dsn')).toEqual([]);

    await page.getByRole('button', { name: 'Account' }).click();
    await page.getByText('Acme Web').first().waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL('**/login');
    await page.goto('/issues');
    await page.waitForURL(/\/login\?next=%2Fissues/);
    expect(await review(page, 'login')).toEqual([]);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await showsText(page.getByRole('alert'), 'Login failed');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL('**/issues');
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(unexpectedProblems(dashboard, [/\/v1\/auth\/login/])).toEqual([]);
    await context.close();
  }, 60_000);

  test('changes their password on their account page, and logs out everywhere', async () => {
    const email = uniqueEmail('account');
    const NEW_PASSWORD = 'another long passphrase';
    const elsewhere = await (await dashboard.newContext()).newPage();
    await signUpInBrowser(elsewhere, { email, password: PASSWORD, organization: 'Acme Accounts' });
    const context = await dashboard.newContext();
    const page = await context.newPage();
    await logInInBrowser(page, email, PASSWORD);

    await page.getByRole('button', { name: 'Account' }).click();
    await page.getByRole('link', { name: 'Your account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await showsText(page.getByRole('region', { name: 'Signed in' }), email);
    await showsText(page.getByRole('region', { name: 'Signed in' }), 'owner');

    await page.getByLabel('Current password').fill('not the password');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await showsText(page.getByRole('alert'), 'The password was not changed');
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await showsText(page.getByRole('status').filter({ hasText: 'Your password is changed' }), 'this one stays');
    expect(await review(page, 'account')).toEqual([]);

    // the other browser's session ended with the change; this one stays until "Log out everywhere"
    await elsewhere.goto('/issues');
    await elsewhere.waitForURL(/\/login/);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Your account' }).waitFor();
    await page.getByRole('button', { name: 'Log out everywhere' }).click();
    await page.getByRole('dialog', { name: 'Log out everywhere?' }).getByRole('button', { name: 'Log out everywhere' }).click();
    await page.waitForURL('**/login');
    await logInInBrowser(page, email, NEW_PASSWORD);
    expect(unexpectedProblems(dashboard, [/\/v1\/auth\/(login|password)/])).toEqual([]);
    await context.close();
  }, 60_000);
});
