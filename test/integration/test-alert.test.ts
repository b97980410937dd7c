/**
 * POST /v1/alert-destinations/{destinationID}/test: a test alert goes out at once through the delivery code
 * real alerts use, and the answer says what happened. Receivers are real loopback servers; mail goes to
 * the local catcher.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { addMember, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { confirmAddresses, isConfirmation, startMailCatcher, type MailCatcher } from '../support/smtp.js';
import { startTarget, type Target } from '../support/targets.js';

let live: Harness; // SMTP to the catcher, loopback allowed by OUTBOUND_ALLOWLIST
let guarded: Harness; // the same database, without the allowlist
let hurried: Harness; // loopback allowed, requests stopped after 2.5 s
let catcher: MailCatcher;
let receiver: Target;
let owner: Account;

beforeAll(async () => {
  catcher = await startMailCatcher();
  // paths under /broken/ answer 500, as a receiver with a bug would; under /slow/, after 5 s
  receiver = await startTarget((req) => (req.url?.startsWith('/broken/') ? { status: 500, body: 'upstream exploded' } : req.url?.startsWith('/slow/') ? { status: 204, delayMs: 5_000 } : { status: 204 }));
  live = await startHarness({ SMTP_URL: catcher.url, OUTBOUND_ALLOWLIST: '127.0.0.1' });
  guarded = await startHarness();
  hurried = await startHarness({ OUTBOUND_ALLOWLIST: '127.0.0.1', REQUEST_DEADLINE_MS: '2500' });
  owner = await signUp(live);
});

afterAll(async () => {
  await live?.close();
  await guarded?.close();
  await hurried?.close();
  await receiver?.close();
  await catcher?.close();
  await dropTestDatabase();
});

async function addDestination(account: Account, body: Record<string, unknown>): Promise<{ id: string; secret?: string }> {
  const reply = await account.client.post('/v1/alert-destinations', body);
  if (reply.status !== 201) throw new Error(`destination failed: ${reply.status} ${reply.text}`);
  return reply.body;
}

const sendTest = (account: Account, destinationId: string) => account.client.post(`/v1/alert-destinations/${destinationId}/test`);

/** The check a receiver makes, as docs/api.md shows it: HMAC-SHA256 of the raw body, compared in constant time. */
function signedBy(secret: string, raw: string, header: string | string[] | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`);
  const given = Buffer.from(String(header ?? ''));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const receivedAt = (path: string) => receiver.requests.filter((request) => request.path === path);

test('a webhook gets a signed alert.test body shaped like a real alert, and the answer says it was delivered; no alert is stored', async () => {
  const path = `/hook/${randomBytes(4).toString('hex')}`;
  const secret = `whsec-${randomBytes(12).toString('hex')}`;
  const destination = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${path}`, secret, name: 'ops hook' });

  const reply = await sendTest(owner, destination.id);
  expect(reply.status).toBe(200);
  expect(reply.body).toEqual({
    destination_id: destination.id,
    status: 'delivered',
    http_status: 204,
    error: null,
    recipients: [],
    attempted_at: expect.any(String),
    duration_ms: expect.any(Number),
  });
  expect(Date.now() - Date.parse(reply.body.attempted_at)).toBeLessThan(60_000);

  const [request] = receivedAt(path);
  expect(request!.method).toBe('POST');
  expect(request!.headers['content-type']).toBe('application/json');
  expect(signedBy(secret, request!.body, request!.headers['x-sluice-signature'])).toBe(true);
  expect(JSON.parse(request!.body)).toEqual({
    event: 'alert.test',
    alert: {
      id: expect.stringMatching(/^[0-9a-f]{24}$/),
      kind: 'test',
      status: 'open',
      project_id: null,
      subject: { type: 'alert_destination', id: destination.id },
      title: 'This destination receives Sluice alerts',
      details: expect.any(Object),
      opened_at: reply.body.attempted_at,
      resolved_at: null,
    },
  });

  // a second test is a new message: its own alert id
  await sendTest(owner, destination.id);
  const [first, second] = receivedAt(path).map((r) => JSON.parse(r.body).alert.id);
  expect(second).not.toBe(first);

  expect((await owner.client.get('/v1/alerts')).body.data).toEqual([]);
  const audit = await owner.client.get('/v1/audit-log?action=alert_destination.test');
  expect(audit.body.data[0]).toMatchObject({ target: { type: 'alert_destination', id: destination.id }, details: { type: 'webhook', status: 'delivered' } });
  expect(audit.text).not.toContain(secret);
});

test('a webhook created with generate_secret answers its secret once, and the test alert is signed with it', async () => {
  const path = `/hook/${randomBytes(4).toString('hex')}`;
  const created = await owner.client.post('/v1/alert-destinations', { type: 'webhook', url: `${receiver.url}${path}`, generate_secret: true });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ secret_set: true, secret: expect.stringMatching(/^whsec_[0-9A-Za-z]{30,}$/) });
  const secret: string = created.body.secret;
  const listed = await owner.client.get('/v1/alert-destinations');
  expect(listed.text).not.toContain(secret);

  expect((await sendTest(owner, created.body.id)).body.status).toBe('delivered');
  const [request] = receivedAt(path);
  expect(signedBy(secret, request!.body, request!.headers['x-sluice-signature'])).toBe(true);

  const both = await owner.client.post('/v1/alert-destinations', { type: 'webhook', url: `${receiver.url}${path}`, secret: 'typed-secret', generate_secret: true });
  expect(both.status).toBe(400);
  expect(both.body.code).toBe('validation_failed');
});

test('a receiver answering 500 is a failed test with its status and the reason a delivery would record', async () => {
  const path = `/broken/${randomBytes(4).toString('hex')}`;
  const destination = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${path}` });
  const reply = await sendTest(owner, destination.id);
  expect(reply.status).toBe(200);
  expect(reply.body).toMatchObject({ status: 'failed', http_status: 500, error: `${new URL(receiver.url).host} answered 500`, recipients: [] });
  expect(receivedAt(path)).toHaveLength(1);
  // unsigned without a secret
  expect(receivedAt(path)[0]!.headers['x-sluice-signature']).toBeUndefined();
});

test('a Slack destination gets the incoming-webhook text of the test', async () => {
  const path = `/slack/${randomBytes(4).toString('hex')}`;
  const destination = await addDestination(owner, { type: 'slack', url: `${receiver.url}${path}` });
  expect((await sendTest(owner, destination.id)).body).toMatchObject({ status: 'delivered', http_status: 204 });
  const body = JSON.parse(receivedAt(path)[0]!.body);
  expect(Object.keys(body)).toEqual(['text']);
  expect(body.text).toMatch(/^Test: This destination receives Sluice alerts\nKind: test\n/);
});

test('an email destination gets nothing until an address is confirmed, then the test mail goes to the confirmed addresses only', async () => {
  const [confirmed, pending] = [uniqueEmail('oncall'), uniqueEmail('lead')];
  const destination = await addDestination(owner, { type: 'email', emails: [confirmed, pending] });

  const before = await sendTest(owner, destination.id);
  expect(before.body).toMatchObject({ status: 'failed', http_status: null, error: 'not sent: no address of this destination is confirmed yet', recipients: [] });

  await confirmAddresses(catcher, live.api, confirmed);
  const after = await sendTest(owner, destination.id);
  expect(after.body).toMatchObject({ status: 'delivered', http_status: null, error: null, recipients: [confirmed] });
  const [mail] = await catcher.waitFor(1, (m) => m.to.includes(confirmed) && !isConfirmation(m));
  expect(mail!.subject).toBe('[Sluice] Test: This destination receives Sluice alerts');
  expect(mail!.to).toEqual([confirmed]);
  expect(catcher.mails.filter((m) => m.to.includes(pending) && !isConfirmation(m))).toEqual([]);
});

test('the outbound guard applies at sending: without the allowlist a loopback webhook is refused and not reached', async () => {
  const path = `/hook/${randomBytes(4).toString('hex')}`;
  const destination = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${path}` });
  // the same session through an API process whose OUTBOUND_ALLOWLIST leaves loopback out
  const reply = await guarded.api.with(owner.client.options).post(`/v1/alert-destinations/${destination.id}/test`);
  expect(reply.status).toBe(200);
  expect(reply.body).toMatchObject({ status: 'failed', http_status: null, error: 'address 127.0.0.1 is not allowed (loopback)' });
  expect(receivedAt(path)).toEqual([]);
});

test('a receiver slower than the request may wait is a failed test answered before the deadline, not a 503', async () => {
  const path = `/slow/${randomBytes(4).toString('hex')}`;
  const destination = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${path}` });
  const started = Date.now();
  const reply = await hurried.api.with(owner.client.options).post(`/v1/alert-destinations/${destination.id}/test`);
  expect(Date.now() - started).toBeLessThan(2_500);
  expect(reply.status).toBe(200);
  expect(reply.body).toMatchObject({ status: 'failed', http_status: null, error: expect.stringMatching(/^timed out after \d+ ms$/) });
  expect(reply.body.duration_ms).toBeGreaterThanOrEqual(1_000);
});

test('a member is refused; another organisation\'s, an unknown and a malformed destination are not found', async () => {
  const member = await addMember(live, owner, 'member');
  const stranger = await signUp(live, 'stranger');
  const path = `/hook/${randomBytes(4).toString('hex')}`;
  const ours = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${path}` });

  const refused = await sendTest(member, ours.id);
  expect(refused.status).toBe(403);
  expect(refused.body.code).toBe('forbidden');
  for (const id of [ours.id, '0123456789abcdef01234567', 'not-an-id']) {
    const reply = await sendTest(stranger, id);
    expect({ id, status: reply.status, code: reply.body.code }).toEqual({ id, status: 404, code: 'not_found' });
  }
  expect(receivedAt(path)).toEqual([]);
});
