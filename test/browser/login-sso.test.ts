import { showsText, startDashboard, type Dashboard } from '../support/browser.js';

let dashboard: Dashboard;
beforeAll(async () => {
  // API_PUBLIC_URL switches single sign-on on
  dashboard = await startDashboard(({ apiPort }) => ({ API_PUBLIC_URL: `http://localhost:${apiPort}` }));
}, 90_000);
afterAll(() => dashboard?.close());

test('with single sign-on on, the login page offers it and shows the API’s answer for a domain without a connection', async () => {
  const context = await dashboard.newContext();
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByRole('button', { name: 'Sign in with SSO' }).click();
  expect(await page.getByLabel('Password').count()).toBe(0);
  await page.getByLabel('Email').fill('someone@nowhere-sso.example');
  await page.getByRole('button', { name: 'Continue with SSO' }).click();
  await showsText(page.getByRole('alert'), 'single sign-on is not set up for this domain');
  await context.close();
}, 60_000);

test('a refusal the identity provider sends back is shown on the login page', async () => {
  const context = await dashboard.newContext();
  const page = await context.newPage();
  await page.goto('/login?sso_error=not_invited&sso_reason=no%20account%20and%20no%20invite%20for%20this%20address');
  await showsText(page.getByRole('alert'), 'no account and no invite for this address');
  await showsText(page.getByRole('alert'), 'not_invited');
  await context.close();
}, 60_000);
