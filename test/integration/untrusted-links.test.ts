/**
 * Links the service answers, and the session cookie's flags, come from configuration and checked input,
 * never from what a client happens to send: a `javascript:` URL is refused (or, inside telemetry, not
 * kept), a forged Host header does not become a ping URL, and `Secure` has a setting of its own.
 */
import { request } from 'node:http';
import { envelope, eventId, projectWithDsn } from '../support/factories/telemetry.js';
import { createProject, PASSWORD, register, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { DASHBOARD_ORIGIN, startHarness, useHarness, type Harness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
useHarness((started) => (h = started), {}, { workers: true });

let owner: Account;
beforeAll(async () => {
  owner = await signUp(h);
});

const scriptUrls = ['javascript:alert(document.cookie)', 'JaVaScRiPt:alert(1)', 'data:text/html,<script>alert(1)</script>', 'vbscript:msgbox(1)', 'file:///etc/passwd'];

describe('links are http(s) only', () => {
  test("a deployment's url must be http(s): anything else is 400 validation_failed naming the field, and nothing is stored", async () => {
    const project = await createProject(owner);
    for (const url of scriptUrls) {
      const reply = await owner.client.post('/v1/deployments', { project_id: project.id, version: 'web@1.0.0', url });
      expect({ url, status: reply.status, code: reply.body.code }).toEqual({ url, status: 400, code: 'validation_failed' });
      expect(reply.body.details).toEqual([expect.objectContaining({ path: 'body.url', message: 'must be an http or https URL' })]);
      expect(reply.body.request_id).toEqual(expect.any(String));
    }
    expect((await owner.client.get(`/v1/deployments?project=${project.id}`)).body.data).toEqual([]);
    const fine = await owner.client.post('/v1/deployments', { project_id: project.id, version: 'web@1.0.0', url: 'https://ci.example.test/runs/7' });
    expect(fine.status).toBe(201);
    expect(fine.body.url).toBe('https://ci.example.test/runs/7');
  });

  test("feedback's url through the API must be http(s), whatever the credential", async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    for (const client of [owner.client, h.api.with({ authorization: `DSN ${project.publicKey}` })]) {
      const reply = await client.post('/v1/feedback', { project_id: project.id, message: 'Click here', url: 'javascript:fetch("/v1/api-keys")' });
      expect({ status: reply.status, code: reply.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    }
    const fine = await owner.client.post('/v1/feedback', { project_id: project.id, message: 'The page is slow', url: 'https://shop.example.test/cart' });
    expect(fine.status).toBe(201);
    expect(fine.body.url).toBe('https://shop.example.test/cart');
  });

  test('feedback sent by an SDK keeps its message but not a script URL', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const send = async (message: string, url: string) => {
      const id = eventId();
      const item = { event_id: id, timestamp: Date.now() / 1000, type: 'feedback', contexts: { feedback: { message, url } } };
      const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: id }, [{ type: 'feedback', payload: item }]));
      expect(reply.status).toBe(200);
    };
    await send('from a hostile page', 'javascript:alert(document.cookie)');
    await send('from the shop', 'https://shop.example.test/checkout');
    const listed = await eventually(async () => {
      const reply = await owner.client.get(`/v1/feedback?project=${project.id}`);
      return reply.body.data.length === 2 ? (reply.body.data as { message: string; url: string | null }[]) : undefined;
    }, 'both feedback items');
    expect(Object.fromEntries(listed.map((item) => [item.message, item.url]))).toEqual({ 'from a hostile page': null, 'from the shop': 'https://shop.example.test/checkout' });
  });

  test('an uptime monitor with a script URL is refused the same way', async () => {
    const project = await createProject(owner);
    const monitor = await owner.client.post('/v1/uptime/monitors', { project_id: project.id, name: 'home', url: 'javascript:alert(1)' });
    expect({ status: monitor.status, code: monitor.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(monitor.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'body.url', message: 'must be an http or https URL' })]));
  });
});

/** A request with a Host header of the client's choosing (fetch does not let a caller set one). */
function withHost(baseUrl: string, method: string, path: string, host: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(path, baseUrl);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers: { ...headers, host, ...(payload && { 'content-type': 'application/json' }) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('links and cookies come from configuration', () => {
  test("a forged Host header never becomes a check's ping URL: without API_PUBLIC_URL it is the address the API answered on", async () => {
    const project = await createProject(owner);
    const headers = { cookie: owner.cookie!, origin: DASHBOARD_ORIGIN };
    const created = await withHost(h.api.baseUrl, 'POST', '/v1/cron/checks', 'attacker.example', headers, { project_id: project.id, name: 'nightly', schedule: { type: 'interval', value: 1, unit: 'day' } });
    expect(created.status).toBe(201);
    expect(created.body.ping_url).not.toContain('attacker.example');
    expect(created.body.ping_url).toMatch(new RegExp(`^${h.api.baseUrl.replace(/[.:/]/g, '\\$&')}/v1/checkins/[0-9A-Za-z]{43}$`));
    const read = await withHost(h.api.baseUrl, 'GET', `/v1/cron/checks/${created.body.id}`, 'attacker.example', headers);
    expect(read.body.ping_url).toBe(created.body.ping_url);
    const listed = await withHost(h.api.baseUrl, 'GET', `/v1/cron/checks?project=${project.id}`, 'evil.example:8443', headers);
    expect(listed.body.data.map((check: { ping_url: string }) => check.ping_url)).toEqual([created.body.ping_url]);
    // and the URL works: a check-in on it is accepted
    expect((await fetch(created.body.ping_url)).status).toBe(200);
  });

  const cookieFlags = async (harness: Harness) => {
    const email = uniqueEmail();
    await register(harness, email);
    const reply = await harness.api.post('/v1/auth/login', { email, password: PASSWORD });
    const line = reply.headers.getSetCookie().find((cookie) => cookie.startsWith('slk_session='))!;
    return line.split(';').map((part) => part.trim().toLowerCase());
  };

  test('the session cookie is Secure when COOKIE_SECURE says so, or by default when API_PUBLIC_URL is https', async () => {
    expect(await cookieFlags(h)).not.toContain('secure');
    const cases: [Record<string, string>, boolean][] = [
      [{ COOKIE_SECURE: 'true' }, true],
      [{ API_PUBLIC_URL: 'https://sluice.example.test' }, true],
      [{ API_PUBLIC_URL: 'https://sluice.example.test', COOKIE_SECURE: 'false' }, false],
      [{ API_PUBLIC_URL: 'http://sluice.example.test' }, false],
    ];
    for (const [env, secure] of cases) {
      const harness = await startHarness(env);
      try {
        expect({ env, secure: (await cookieFlags(harness)).includes('secure') }).toEqual({ env, secure });
      } finally {
        await harness.close();
      }
    }
  });
});
