/**
 * The dashboard as a person meets it: the whole service (all roles, from source, as `npm start` runs it)
 * serving the built app on a port of its own, and Debian's Chromium driven by Playwright. Pages are found
 * by role, label and text. Every page a test opens is checked for errors and Content-Security-Policy
 * violations, and `review` saves its screenshots at desktop and phone sizes and runs axe-core on it.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mongo } from 'mongoose';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startService, type ServiceProcess } from './service-process.js';
import { freePort } from './own-servers.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where the screenshots of every reviewed page are kept for a person to look at. */
export const SCREENSHOT_DIR = 'test-results/screenshots';
export const VIEWPORTS = { desktop: { width: 1440, height: 900 }, phone: { width: 390, height: 844 } } as const;

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Dashboard {
  /** The dashboard's origin, e.g. http://localhost:41234. */
  webUrl: string;
  apiUrl: string;
  ingestUrl: string;
  service: ServiceProcess;
  browser: Browser;
  /** A fresh browser profile (no cookies) on the dashboard; its page problems are collected. */
  newContext(viewport?: { width: number; height: number }): Promise<BrowserContext>;
  /** Console errors, uncaught exceptions and CSP violations seen on any page so far. */
  problems: string[];
  close(): Promise<void>;
}

type Ports = { webPort: number; apiPort: number; ingestPort: number };

/**
 * Starts the service with the dashboard on a free port, against a database of this test file's own.
 * `env` may depend on the ports chosen (e.g. API_PUBLIC_URL, which switches single sign-on on).
 */
export async function startDashboard(env: Record<string, string> | ((ports: Ports) => Record<string, string>) = {}): Promise<Dashboard> {
  // fixed ports rather than 0: the DSNs the API writes name the ingest port
  const [webPort, apiPort, ingestPort] = [await freePort(), await freePort(), await freePort()];
  const database = `slk_test_web_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  const webUrl = `http://localhost:${webPort}`;
  const service = startService({
    MONGO_URL: mongoUrl,
    FERRETDB_POSTGRES_URL: process.env.TEST_FERRETDB_POSTGRES_URL ?? '',
    WEB_PORT: String(webPort),
    PORT: String(apiPort),
    INGEST_PORT: String(ingestPort),
    DASHBOARD_ORIGIN: webUrl,
    PASSWORD_HASH_COST: '12',
    ...(typeof env === 'function' ? env({ webPort, apiPort, ingestPort }) : env),
  });
  await service.portOf('api listening', 60_000);
  await service.portOf('ingest listening', 60_000);
  await service.portOf('dashboard listening', 60_000);
  await service.waitForLine('workers started', 60_000);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${page.url()}: console error: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`${page.url()}: uncaught: ${error.message}`));
  };
  return {
    webUrl,
    apiUrl: `http://localhost:${apiPort}`,
    ingestUrl: `http://localhost:${ingestPort}`,
    service,
    browser,
    problems,
    async newContext(viewport = VIEWPORTS.desktop) {
      const context = await browser.newContext({ baseURL: webUrl, viewport, permissions: ['clipboard-read', 'clipboard-write'] });
      context.on('page', watch);
      return context;
    },
    async close() {
      await browser.close().catch(() => undefined);
      await service.stop();
      const client = await mongo.MongoClient.connect(mongoUrl);
      await client.db(database).dropDatabase();
      await client.close();
    },
  };
}

/**
 * Problems a person would see in the browser's console, minus the API refusals a test causes on purpose
 * (a failed request is logged by Chromium as "Failed to load resource"; the page shows its message).
 */
export const unexpectedProblems = (dashboard: Dashboard, allowed: RegExp[] = []) =>
  dashboard.problems.filter((problem) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(problem) && !allowed.some((pattern) => pattern.test(problem)));

/** axe-core's serious and critical violations on the page as it is now (CSP does not apply to evaluation). */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as { violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> };
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).slice(0, 5).join(', ')}`);
}

/**
 * Screenshots of the page at 1440×900 and 390×844, and at 1440×900 in dark mode (the whole page) under
 * test-results/screenshots/,
 * and its axe-core violations, which the caller expects to be none.
 */
export async function review(page: Page, name: string): Promise<string[]> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const original = page.viewportSize() ?? VIEWPORTS.desktop;
  const violations = await accessibilityViolations(page);
  for (const [label, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    await page.waitForTimeout(150);
    await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}-${label}.png`, fullPage: true });
  }
  // the app follows the system's colour scheme: the desktop size again in dark mode
  await page.setViewportSize(VIEWPORTS.desktop);
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForTimeout(150);
  await page.screenshot({ path: `${SCREENSHOT_DIR}/${name}-desktop-dark.png`, fullPage: true });
  await page.emulateMedia({ colorScheme: null });
  await page.setViewportSize(original);
  return violations;
}

/** Signs up through the form, as a new user does; lands on onboarding. */
export async function signUpInBrowser(page: Page, account: { email: string; password: string; organization?: string; name?: string }) {
  await page.goto('/signup');
  if (account.name) await page.getByLabel('Your name').fill(account.name);
  if (account.organization) await page.getByLabel('Organization name').fill(account.organization);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL('**/onboarding');
}

/** Logs in through the login page, as a person does; answers once the browser has left it. */
export async function logInInBrowser(page: Page, email: string, password: string) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((url) => url.pathname !== '/login');
}

/** Creates a project through onboarding and answers its DSN as the page shows it. */
export async function createProjectInBrowser(page: Page, name: string): Promise<{ projectId: string; dsn: string }> {
  await page.goto('/onboarding');
  await page.getByLabel('Project name').fill(name);
  await page.getByRole('button', { name: 'Create project' }).click();
  const dsn = (await page.getByLabel('DSN', { exact: true }).textContent())!;
  const projectId = new URL(page.url()).searchParams.get('project')!;
  return { projectId, dsn };
}

/** The time from navigation until `ready` is visible: printed by the tests, never asserted. */
export async function timeToData(page: Page, path: string, ready: (page: Page) => ReturnType<Page['locator']>): Promise<number> {
  const started = Date.now();
  await page.goto(path);
  await ready(page).first().waitFor({ state: 'visible', timeout: 30_000 });
  return Date.now() - started;
}

/** Waits until the element's text contains `text` (as a person would wait for it to change); fails after `timeoutMs`. */
export async function showsText(locator: Locator, text: string | RegExp, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = (await locator.first().textContent({ timeout: Math.max(1, deadline - Date.now()) }).catch(() => '')) ?? '';
    if (typeof text === 'string' ? last.includes(text) : text.test(last)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`expected ${locator} to show ${String(text)}; it showed ${JSON.stringify(last.slice(0, 300))}`);
}

/** Waits until `locator` matches exactly `count` elements (a list settles after its query answers); fails after `timeoutMs`. */
export async function hasCount(locator: Locator, count: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  while (Date.now() < deadline) {
    last = await locator.count();
    if (last === count) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`expected ${locator} to match ${count} elements; it matched ${last}`);
}
