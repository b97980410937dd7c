/**
 * POST /v1/checkout against a local stand-in for a Stripe-compatible API: not mounted without
 * PAYMENT_API_KEY, admin only, idempotent on retry, provider refusals and outages answered clearly.
 */
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { createApiApp } from '../../src/api/app.js';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { addMember, createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { DASHBOARD_ORIGIN, dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { startPaymentServer, type PaymentServer } from '../support/payment-server.js';

const PRICE = 'price_test_team';

afterAll(() => dropTestDatabase());

const operationsOf = async (h: Harness) => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  return Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
};

describe('without PAYMENT_API_KEY', () => {
  let h: Harness;
  let owner: Account;
  beforeAll(async () => {
    h = await startHarness({ PAYMENT_API_KEY: '', PAYMENT_PRICE_ID: PRICE });
    owner = await signUp(h);
  });
  afterAll(() => h.close());

  test('the route does not exist: 404 not_found for an admin and for no credential alike', async () => {
    const admin = await addMember(h, owner, 'admin');
    for (const client of [owner.client, admin.client, h.api]) {
      const reply = await client.post('/v1/checkout', { quantity: 1 });
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
    const key = await createApiKey(owner, 'admin');
    const scripted = await h.api.with({ bearer: key.secret }).post('/v1/checkout', {});
    expect([scripted.status, scripted.body.code]).toEqual([404, 'not_found']);
  });

  test('OpenAPI does not list it; usage is there regardless', async () => {
    const operations = await operationsOf(h);
    expect(operations).not.toContain('POST /v1/checkout');
    expect(operations).toContain('GET /v1/usage');
  });
});

describe('with PAYMENT_API_KEY', () => {
  let h: Harness;
  let payments: PaymentServer;
  let owner: Account;
  let admin: Account;
  beforeAll(async () => {
    payments = await startPaymentServer();
    h = await startHarness({ PAYMENT_API_KEY: payments.key, PAYMENT_API_URL: payments.url, PAYMENT_PRICE_ID: PRICE });
    owner = await signUp(h);
    admin = await addMember(h, owner, 'admin');
  });
  afterAll(async () => {
    await h.close();
    await payments.close();
  });

  test('an admin gets a hosted checkout URL; the provider receives the subscription form with the key', async () => {
    const before = payments.requests.length;
    const reply = await admin.client.post('/v1/checkout', { quantity: 3 });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({ id: expect.stringMatching(/^cs_test_/), url: `https://checkout.example/c/pay/${reply.body.id}` });

    expect(payments.requests).toHaveLength(before + 1);
    const received = payments.requests.at(-1)!;
    expect(received.method).toBe('POST');
    expect(received.path).toBe('/v1/checkout/sessions');
    expect(received.headers.authorization).toBe(`Bearer ${payments.key}`);
    expect(received.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(received.headers['idempotency-key']).toMatch(/^sluice-checkout-[0-9a-f]{64}$/);
    expect(Object.fromEntries(received.form)).toEqual({
      mode: 'subscription',
      'line_items[0][price]': PRICE,
      'line_items[0][quantity]': '3',
      success_url: `${DASHBOARD_ORIGIN}/settings/billing?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${DASHBOARD_ORIGIN}/settings/billing?checkout=cancelled`,
      client_reference_id: owner.organization.id,
      customer_email: admin.email,
      'metadata[organization_id]': owner.organization.id,
    });
  });

  test('quantity defaults to 1; an admin API key buys for its creator', async () => {
    const key = await createApiKey(admin, 'admin');
    const reply = await h.api.with({ bearer: key.secret }).post('/v1/checkout', {});
    expect(reply.status).toBe(201);
    const form = payments.requests.at(-1)!.form;
    expect(form.get('line_items[0][quantity]')).toBe('1');
    expect(form.get('customer_email')).toBe(admin.email);
  });

  test('a member is refused (403) and nothing reaches the provider; no credential is 401', async () => {
    const member = await addMember(h, owner, 'member');
    const before = payments.requests.length;
    const refused = await member.client.post('/v1/checkout', {});
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    const anonymous = await h.api.post('/v1/checkout', {});
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'unauthenticated']);
    expect(payments.requests).toHaveLength(before);
  });

  test('a retry with the same Idempotency-Key gets the same session; another key, or another organisation, a new one', async () => {
    const first = await admin.client.post('/v1/checkout', { quantity: 2 }, { 'idempotency-key': 'upgrade-42' });
    const retry = await admin.client.post('/v1/checkout', { quantity: 2 }, { 'idempotency-key': 'upgrade-42' });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    const sent = payments.requests.slice(-2).map((r) => r.headers['idempotency-key']);
    expect(sent[0]).toBe(sent[1]);

    const other = await admin.client.post('/v1/checkout', { quantity: 2 }, { 'idempotency-key': 'upgrade-43' });
    expect(other.body.id).not.toBe(first.body.id);
    const stranger = await signUp(h, 'stranger');
    const theirs = await stranger.client.post('/v1/checkout', { quantity: 2 }, { 'idempotency-key': 'upgrade-42' });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(first.body.id);
    expect(payments.requests.at(-1)!.form.get('client_reference_id')).toBe(stranger.organization.id);
  });

  test('without an Idempotency-Key, a retry carrying the same X-Request-Id gets the same session', async () => {
    const first = await admin.client.post('/v1/checkout', {}, { 'x-request-id': 'checkout-retry-1' });
    const retry = await admin.client.post('/v1/checkout', {}, { 'x-request-id': 'checkout-retry-1' });
    expect(retry.body.id).toBe(first.body.id);
  });

  test('the same Idempotency-Key with another quantity is the provider\'s refusal, not a silent reuse', async () => {
    await admin.client.post('/v1/checkout', { quantity: 1 }, { 'idempotency-key': 'changed-mind' });
    const reply = await admin.client.post('/v1/checkout', { quantity: 5 }, { 'idempotency-key': 'changed-mind' });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_failed');
    expect(reply.body.message).toMatch(/same parameters/);
  });

  test('a provider 4xx becomes validation_failed with the provider\'s words', async () => {
    payments.refuseNext(400, "No such price: 'price_test_team'");
    const reply = await admin.client.post('/v1/checkout', {});
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({
      code: 'validation_failed',
      message: "the payment provider refused the checkout: No such price: 'price_test_team'",
      details: [{ path: 'payment_provider', message: "No such price: 'price_test_team'" }],
    });
  });

  test('a provider refusing the configured key is the operator\'s problem: internal_error saying so', async () => {
    payments.refuseNext(401, 'Invalid API Key provided');
    const reply = await admin.client.post('/v1/checkout', {});
    expect(reply.status).toBe(500);
    expect(reply.body).toMatchObject({ code: 'internal_error', message: expect.stringContaining('PAYMENT_API_KEY') });
  });

  test('bodies and headers are validated before the provider is called', async () => {
    const before = payments.requests.length;
    const plan = await admin.client.post('/v1/checkout', { plan: 'enterprise' });
    expect([plan.status, plan.body.code]).toEqual([400, 'validation_failed']);
    const zero = await admin.client.post('/v1/checkout', { quantity: 0 });
    expect([zero.status, zero.body.code]).toEqual([400, 'validation_failed']);
    const badKey = await admin.client.post('/v1/checkout', {}, { 'idempotency-key': 'x'.repeat(201) });
    expect(badKey.status).toBe(400);
    expect(badKey.body.details).toEqual([expect.objectContaining({ path: 'header.idempotency-key' })]);
    expect(payments.requests).toHaveLength(before);
  });

  test('each checkout is in the audit trail', async () => {
    const reply = await admin.client.post('/v1/checkout', { quantity: 4 }, { 'idempotency-key': 'audited' });
    const trail = await owner.client.get('/v1/audit-log?action=checkout.create');
    expect(trail.status).toBe(200);
    const entry = trail.body.data.find((e: { target: { id: string } }) => e.target.id === reply.body.id);
    expect(entry).toMatchObject({
      action: 'checkout.create',
      actor: { type: 'user', id: admin.user.id },
      target: { type: 'checkout_session', id: reply.body.id },
      details: { price: PRICE, quantity: 4 },
      request_id: reply.headers.get('x-request-id'),
    });
  });

  test('OpenAPI lists the route, admin only', async () => {
    expect(await operationsOf(h)).toContain('POST /v1/checkout');
    const doc = (await h.api.get('/v1/openapi.json')).body;
    expect(doc.paths['/v1/checkout'].post['x-required-role']).toBe('admin');
  });
});

describe('with the provider unreachable', () => {
  let h: Harness;
  beforeAll(async () => {
    // a port that was free a moment ago: nothing listens there
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as { port: number };
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    h = await startHarness({ PAYMENT_API_KEY: 'sk_test_unreachable', PAYMENT_API_URL: `http://127.0.0.1:${port}`, PAYMENT_PRICE_ID: PRICE });
  });
  afterAll(() => h.close());

  test('internal_error with a clear message, and no audit entry', async () => {
    const owner = await signUp(h);
    const reply = await owner.client.post('/v1/checkout', {});
    expect(reply.status).toBe(500);
    expect(reply.body).toMatchObject({ code: 'internal_error', message: 'the payment provider could not be reached; nothing was charged, try again shortly' });
    const trail = await owner.client.get('/v1/audit-log?action=checkout.create');
    expect(trail.body.data).toEqual([]);
  });
});

test('a payment key without PAYMENT_PRICE_ID stops the API at boot: there would be nothing to sell', () => {
  const redis = new Redis({ lazyConnect: true });
  const config = loadConfig({ MONGO_URL: process.env.TEST_MONGO_URL, REDIS_URL: process.env.TEST_REDIS_URL, PAYMENT_API_KEY: 'sk_test_x', PAYMENT_PRICE_ID: '' });
  expect(() => createApiApp({ config, logger: createLogger('silent'), redis })).toThrow(/PAYMENT_PRICE_ID/);
  redis.disconnect();
});
