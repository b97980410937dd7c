import type { z } from 'zod';
import type { alertJson } from '../../src/shared/features/alerts/schemas.js';
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import mongoose, { Types } from 'mongoose';
import { openAlert, resolveAlertsAbout, sealStoredDestinations } from '../../src/shared/features/alerts/service.js';
import { createSecretBox } from '../../src/shared/clients/secret-box.js';
import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { addMember, createProject, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, eventId, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { confirmAddresses as confirmEach, isConfirmation, startMailCatcher, type MailCatcher, type ReceivedMail } from '../support/smtp.js';
import { deletePrefix } from '../support/redis-keys.js';
import { eventually } from '../support/wait.js';

type AlertJson = z.infer<typeof alertJson>;

/** A webhook/Slack endpoint on loopback: keeps every request with its raw body; paths under /broken/ answer 500. */
interface Receiver {
  url: string;
  requests: { path: string; headers: IncomingHttpHeaders; raw: string }[];
  at(path: string): { path: string; headers: IncomingHttpHeaders; raw: string }[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const requests: Receiver['requests'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, raw: Buffer.concat(chunks).toString('utf8') });
      const broken = req.url?.startsWith('/broken/');
      res.writeHead(broken ? 500 : 200, { 'content-type': 'text/plain' }).end(broken ? 'upstream exploded' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    at: (path) => requests.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const MAIL_FROM_ADDRESS = 'alerts@sluice.test';
const tag = () => randomBytes(4).toString('hex');

let plain: Harness; // no SMTP_URL, no outbound allowlist, no workers
let live: Harness; // workers, SMTP to the catcher, loopback allowed
let catcher: MailCatcher;
let receiver: Receiver;
const sharedPrefix = `slk_test_alerts_${randomBytes(6).toString('hex')}`;

beforeAll(async () => {
  catcher = await startMailCatcher();
  receiver = await startReceiver();
  plain = await startHarness();
  live = await startHarness(
    { SMTP_URL: catcher.url, MAIL_FROM: `Sluice Alerts <${MAIL_FROM_ADDRESS}>`, OUTBOUND_ALLOWLIST: '127.0.0.1', REDIS_PREFIX: sharedPrefix },
    { workers: true },
  );
});

afterAll(async () => {
  await plain?.close();
  await live?.close();
  // the two worker harnesses' shared prefix, which neither clears for the other
  await deletePrefix(process.env.TEST_REDIS_URL!, sharedPrefix);
  await receiver?.close();
  await catcher?.close();
  await dropTestDatabase();
});

async function alertsOf(account: Account, query = ''): Promise<{ data: AlertJson[]; next_cursor: string | null }> {
  const reply = await account.client.get(`/v1/alerts${query}`);
  expect(reply.status).toBe(200);
  return reply.body;
}

async function addDestination(account: Account, body: Record<string, unknown>): Promise<{ id: string }> {
  const reply = await account.client.post('/v1/alert-destinations', body);
  if (reply.status !== 201) throw new Error(`destination failed: ${reply.status} ${reply.text}`);
  return reply.body;
}

/** A cron check (hourly interval, so only check-ins move it) and its ping URL. */
async function cronCheck(account: Account, projectId: string, name: string): Promise<{ id: string; ping_url: string }> {
  const reply = await account.client.post('/v1/cron/checks', { project_id: projectId, name, schedule: { type: 'interval', value: 1, unit: 'hour' } });
  expect(reply.status).toBe(201);
  return reply.body;
}

async function ping(url: string): Promise<void> {
  const response = await fetch(url);
  await response.text();
  expect(response.status).toBe(200);
}

/** The org's one cron.down alert once `ready` holds for it. */
const cronAlertWhen = (account: Account, ready: (alert: AlertJson) => boolean, what: string, timeoutMs = 20_000) =>
  eventually(async () => {
    const { data } = await alertsOf(account, '?kind=cron.down');
    return data.length === 1 && ready(data[0]!) ? data[0]! : undefined;
  }, what, timeoutMs);

/** Alert mail to an address (its confirmation mail aside). */
const mailsTo = (address: string) => (mail: ReceivedMail) => mail.to.includes(address) && !isConfirmation(mail);
const confirmationTo = (address: string) => (mail: ReceivedMail) => mail.to.includes(address) && isConfirmation(mail);

/** The token of the dashboard link in an address's confirmation mail. */
async function confirmationToken(address: string): Promise<string> {
  const [mail] = await catcher.waitFor(1, confirmationTo(address));
  return /\/confirm-email\/([0-9A-Za-z]+)/.exec(mail!.text)![1]!;
}
const confirmAddresses = (...addresses: string[]) => confirmEach(catcher, live.api, ...addresses);

/** An email destination whose addresses are confirmed. */
async function addConfirmedEmail(account: Account, emails: string[]): Promise<{ id: string }> {
  const destination = await addDestination(account, { type: 'email', emails });
  await confirmAddresses(...emails);
  return destination;
}
const byDestination = (alert: AlertJson, destinationId: string, event: 'opened' | 'resolved' = 'opened') =>
  alert.deliveries.find((d) => d.destination_id === destinationId && d.event === event);

describe('alert destinations', () => {
  let owner: Account;
  let admin: Account;
  let member: Account;

  beforeAll(async () => {
    owner = await signUp(live);
    admin = await addMember(live, owner, 'admin');
    member = await addMember(live, owner, 'member');
  });

  test('an admin creates, lists and deletes email, webhook and Slack destinations; the secret and the Slack URL never come back', async () => {
    const secret = `whsec-${randomBytes(12).toString('hex')}`;
    const slackPath = `/services/T0AAA/B0BBB/${randomBytes(12).toString('hex')}`;
    const project = await createProject(owner);

    const email = await admin.client.post('/v1/alert-destinations', { type: 'email', emails: ['Oncall@Example.test', 'oncall@example.test', 'lead@example.test'], name: 'on-call' });
    expect(email.status).toBe(201);
    expect(email.body).toMatchObject({
      type: 'email',
      name: 'on-call',
      emails: ['oncall@example.test', 'lead@example.test'],
      addresses: [{ email: 'oncall@example.test', verified: false }, { email: 'lead@example.test', verified: false }],
      kinds: [],
      project_ids: [],
    });

    // a webhook URL is answered as its scheme and host: its path and query may be a credential too
    const webhook = await admin.client.post('/v1/alert-destinations', { type: 'webhook', url: 'https://hooks.example.com/sluice', secret, kinds: ['cron.down', 'uptime.down', 'cron.down'], project_ids: [project.id, project.id] });
    expect(webhook.status).toBe(201);
    expect(webhook.body).toMatchObject({ type: 'webhook', url: 'https://hooks.example.com/…', secret_set: true, kinds: ['cron.down', 'uptime.down'], project_ids: [project.id] });
    expect(webhook.body).not.toHaveProperty('secret');
    expect(webhook.text).not.toContain(secret);

    const unsigned = await admin.client.post('/v1/alert-destinations', { type: 'webhook', url: 'https://hooks.example.com/plain' });
    expect(unsigned.body.secret_set).toBe(false);

    const slack = await admin.client.post('/v1/alert-destinations', { type: 'slack', url: `https://hooks.slack.com${slackPath}` });
    expect(slack.status).toBe(201);
    expect(slack.body.url).toBe(`https://hooks.slack.com/…${slackPath.slice(-4)}`);
    expect(slack.text).not.toContain(slackPath.slice(0, -4));

    const listed = await admin.client.get('/v1/alert-destinations');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((d: { id: string }) => d.id)).toEqual([email.body.id, webhook.body.id, unsigned.body.id, slack.body.id]);
    expect(listed.body.data[1]).toMatchObject({ secret_set: true, url: 'https://hooks.example.com/…' });
    expect(listed.body.data[3].url).toBe(slack.body.url);
    const audit = await owner.client.get('/v1/audit-log');
    for (const text of [listed.text, audit.text]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(slackPath.slice(0, -4));
    }

    for (const created of [email, webhook, unsigned, slack]) expect((await admin.client.delete(`/v1/alert-destinations/${created.body.id}`)).status).toBe(204);
    expect((await admin.client.get('/v1/alert-destinations')).body.data).toEqual([]);
    const again = await admin.client.delete(`/v1/alert-destinations/${slack.body.id}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('not_found');
  });

  test('a member may read alerts but not see, add or remove destinations', async () => {
    const kept = await addDestination(owner, { type: 'webhook', url: 'https://hooks.example.com/kept', secret: 'a-long-secret' });
    expect((await member.client.get('/v1/alerts')).status).toBe(200);
    for (const reply of [
      await member.client.get('/v1/alert-destinations'),
      await member.client.post('/v1/alert-destinations', { type: 'webhook', url: 'https://hooks.example.com/member' }),
      await member.client.delete(`/v1/alert-destinations/${kept.id}`),
    ]) {
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
    expect((await owner.client.get('/v1/alert-destinations')).body.data.map((d: { id: string }) => d.id)).toEqual([kept.id]);
    expect((await owner.client.delete(`/v1/alert-destinations/${kept.id}`)).status).toBe(204);
  });

  test('bad addresses, unknown types and unknown fields are validation_failed, and nothing is stored', async () => {
    const attempts = [
      { type: 'email', emails: ['not-an-email'] },
      { type: 'email', emails: [] },
      { type: 'pagerduty', url: 'https://events.pagerduty.example/v2' },
      { type: 'webhook', url: 'https://hooks.example.com/x', headers: { authorization: 'x' } },
      { type: 'slack', url: 'not a url' },
      { type: 'webhook', url: 'https://hooks.example.com/x', kinds: ['cron.sideways'] },
    ];
    for (const body of attempts) {
      const reply = await admin.client.post('/v1/alert-destinations', body);
      expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
    expect((await admin.client.get('/v1/alert-destinations')).body.data).toEqual([]);
  });

  test('private and loopback URLs are refused unless OUTBOUND_ALLOWLIST allows them', async () => {
    const elsewhere = await signUp(plain);
    for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook', 'http://169.254.169.254/latest']) {
      for (const type of ['webhook', 'slack']) {
        const reply = await elsewhere.client.post('/v1/alert-destinations', { type, url });
        expect({ url, type, status: reply.status, code: reply.body.code }).toEqual({ url, type, status: 400, code: 'validation_failed' });
        expect(reply.body.message).toMatch(/url cannot be used: .*not allowed/);
      }
    }
    // Where 127.0.0.1 is allowed, loopback is fine but another private network still is not.
    expect((await admin.client.post('/v1/alert-destinations', { type: 'webhook', url: 'http://192.168.0.10/hook' })).body.code).toBe('validation_failed');
    const loopback = await admin.client.post('/v1/alert-destinations', { type: 'webhook', url: 'http://127.0.0.1:9/hook' });
    expect(loopback.status).toBe(201);
    expect((await admin.client.delete(`/v1/alert-destinations/${loopback.body.id}`)).status).toBe(204);
    expect((await elsewhere.client.get('/v1/alert-destinations')).body.data).toEqual([]);
  });

  test('without SMTP_URL email destinations are refused with a reason, and /readyz says email is off', async () => {
    const elsewhere = await signUp(plain);
    const reply = await elsewhere.client.post('/v1/alert-destinations', { type: 'email', emails: ['ops@example.test'] });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_failed');
    expect(reply.body.message).toMatch(/email is off.*SMTP_URL/);
    expect((await plain.api.get('/readyz')).body.checks).toContainEqual(expect.objectContaining({ name: 'email', status: 'off' }));
    expect((await live.api.get('/readyz')).body.checks).toContainEqual(expect.objectContaining({ name: 'email', status: 'ok' }));
  });

  test("another organisation's destination is not found, and stays", async () => {
    const stranger = await signUp(live, 'stranger');
    const ours = await addDestination(owner, { type: 'email', emails: ['ours@example.test'] });
    const reply = await stranger.client.delete(`/v1/alert-destinations/${ours.id}`);
    expect(reply.status).toBe(404);
    expect(reply.body.code).toBe('not_found');
    expect((await stranger.client.get('/v1/alert-destinations')).body.data).toEqual([]);
    expect((await owner.client.get('/v1/alert-destinations')).body.data.map((d: { id: string }) => d.id)).toEqual([ours.id]);
    const foreignProject = await createProject(stranger);
    const scoped = await owner.client.post('/v1/alert-destinations', { type: 'email', emails: ['ours@example.test'], project_ids: [foreignProject.id] });
    expect(scoped.status).toBe(404);
    expect((await owner.client.delete(`/v1/alert-destinations/${ours.id}`)).status).toBe(204);
  });
});

describe('delivery', () => {
  test('a cron failure and its recovery reach email, a signed webhook and Slack, each delivery sent at the first attempt', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const [oncall, lead] = [uniqueEmail('oncall'), uniqueEmail('lead')];
    const secret = `whsec-${randomBytes(16).toString('hex')}`;
    const email = await addConfirmedEmail(owner, [oncall, lead]);
    const webhook = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}`, secret });
    const slack = await addDestination(owner, { type: 'slack', url: `${receiver.url}/slack/${id}` });
    const name = `nightly-backup-${id}`;
    const check = await cronCheck(owner, project.id, name);

    await ping(`${check.ping_url}/fail`);
    const [opened] = await catcher.waitFor(1, mailsTo(oncall));
    expect(opened!.subject).toContain(name);
    expect(opened!.subject).toMatch(/^\[Sluice\] Alert:/);
    expect(opened!.to.sort()).toEqual([oncall, lead].sort());
    expect(opened!.from).toBe(MAIL_FROM_ADDRESS);
    expect(opened!.text).toContain('cron.down');

    const alert = await cronAlertWhen(owner, (a) => a.deliveries.length === 3 && a.deliveries.every((d) => d.status === 'sent'), 'three deliveries sent');
    expect(alert).toMatchObject({ status: 'open', project_id: project.id, subject: { type: 'cron_check', id: check.id }, resolved_at: null });
    expect(alert.title).toContain(name);
    for (const destination of [email, webhook, slack]) {
      expect(byDestination(alert, destination.id)).toMatchObject({ status: 'sent', attempts: 1, last_error: null, last_attempt_at: expect.any(String) });
    }

    const [hook] = receiver.at(`/hook/${id}`);
    expect(hook!.headers['content-type']).toBe('application/json');
    const expected = `sha256=${createHmac('sha256', secret).update(hook!.raw).digest('hex')}`;
    expect(hook!.headers['x-sluice-signature']).toBe(expected);
    expect(hook!.raw).not.toContain(secret);
    expect(JSON.parse(hook!.raw)).toMatchObject({ event: 'alert.opened', alert: { id: alert.id, kind: 'cron.down', status: 'open', title: alert.title, project_id: project.id } });

    const [chat] = receiver.at(`/slack/${id}`);
    const slackBody = JSON.parse(chat!.raw);
    expect(Object.keys(slackBody)).toEqual(['text']);
    expect(slackBody.text).toContain(alert.title);

    await ping(check.ping_url);
    const [recovered] = await catcher.waitFor(1, (mail) => mailsTo(oncall)(mail) && mail.subject.startsWith('[Sluice] Resolved:'));
    expect(recovered!.subject).toContain(name);
    const resolved = await cronAlertWhen(owner, (a) => a.deliveries.length === 6 && a.deliveries.every((d) => d.status === 'sent'), 'six deliveries sent');
    expect(resolved.status).toBe('resolved');
    expect(resolved.resolved_at).not.toBeNull();
    for (const destination of [email, webhook, slack]) expect(byDestination(resolved, destination.id, 'resolved')).toMatchObject({ status: 'sent', attempts: 1 });

    const hooks = receiver.at(`/hook/${id}`);
    expect(hooks).toHaveLength(2);
    expect(hooks[1]!.headers['x-sluice-signature']).toBe(`sha256=${createHmac('sha256', secret).update(hooks[1]!.raw).digest('hex')}`);
    expect(JSON.parse(hooks[1]!.raw)).toMatchObject({ event: 'alert.resolved', alert: { id: alert.id, status: 'resolved' } });
    const chats = receiver.at(`/slack/${id}`);
    expect(chats).toHaveLength(2);
    expect(JSON.parse(chats[1]!.raw).text).toMatch(/^Resolved: .*nightly-backup/);
    expect(catcher.mails.filter(mailsTo(oncall))).toHaveLength(2);
    expect(live.logs.text).not.toContain(secret);
  });

  test('an incident that ends before the dispatcher runs is announced in order: the alert first, then its resolution', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const address = uniqueEmail('flapping');
    await addConfirmedEmail(owner, [address]);
    await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}` });
    const names: string[] = [];
    for (let i = 0; i < 5; i++) {
      const check = await cronCheck(owner, project.id, `flapping-${i}-${id}`);
      names.push(`flapping-${i}-${id}`);
      await ping(`${check.ping_url}/fail`);
      await ping(check.ping_url);
    }
    await eventually(async () => {
      const { data } = await alertsOf(owner);
      return data.length === 5 && data.every((a) => a.deliveries.length === 4 && a.deliveries.every((d) => d.status === 'sent')) ? data : undefined;
    }, 'every event of the five incidents sent', 25_000);
    const subjects = catcher.mails.filter(mailsTo(address)).map((m) => m.subject);
    const events = receiver.at(`/hook/${id}`).map((r) => JSON.parse(r.raw) as { event: string; alert: { title: string } });
    for (const name of names) {
      expect(subjects.filter((subject) => subject.includes(`"${name}"`)).map((subject) => subject.split(':')[0])).toEqual(['[Sluice] Alert', '[Sluice] Resolved']);
      expect(events.filter((e) => e.alert.title.includes(`"${name}"`)).map((e) => e.event)).toEqual(['alert.opened', 'alert.resolved']);
    }
  });

  test('a webhook answering 500 is retried later while the email and a healthy webhook are delivered at once', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const address = uniqueEmail('failing');
    const email = await addConfirmedEmail(owner, [address]);
    const healthy = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}` });
    const broken = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/broken/${id}` });
    const check = await cronCheck(owner, project.id, `broken-${id}`);

    await ping(`${check.ping_url}/fail`);
    const alert = await cronAlertWhen(
      owner,
      (a) => byDestination(a, broken.id)?.status === 'retrying' && byDestination(a, email.id)?.status === 'sent' && byDestination(a, healthy.id)?.status === 'sent',
      'the broken webhook retrying and the others sent',
    );
    const failing = byDestination(alert, broken.id)!;
    expect(failing.attempts).toBeGreaterThanOrEqual(1);
    expect(failing.last_error).toContain('500');
    expect(byDestination(alert, email.id)).toMatchObject({ attempts: 1, last_error: null });
    expect(byDestination(alert, healthy.id)).toMatchObject({ attempts: 1, last_error: null });
    expect(catcher.mails.filter(mailsTo(address))).toHaveLength(1);
    expect(receiver.at(`/hook/${id}`)).toHaveLength(1);
    expect(receiver.at(`/broken/${id}`)).toHaveLength(1);
    // The next attempt waits out its backoff (a minute): it is still retrying now, the others long done.
    const later = (await alertsOf(owner, '?kind=cron.down')).data[0]!;
    expect(byDestination(later, broken.id)).toMatchObject({ status: 'retrying', attempts: 1 });
  });

  test('a destination for other kinds or another project gets nothing; matching filters do', async () => {
    const owner = await signUp(live);
    const [watched, other] = [await createProject(owner), await createProject(owner)];
    const id = tag();
    const everything = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}/all` });
    const matching = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}/matching`, kinds: ['cron.down'], project_ids: [watched.id] });
    await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}/uptime`, kinds: ['uptime.down'] });
    await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}/other`, project_ids: [other.id] });
    const check = await cronCheck(owner, watched.id, `filtered-${id}`);

    await ping(`${check.ping_url}/fail`);
    // Every destination is matched in the same dispatch, so once the catch-all is sent the others are decided.
    const alert = await cronAlertWhen(owner, (a) => a.deliveries.length > 0 && a.deliveries.every((d) => d.status === 'sent'), 'deliveries sent');
    expect(alert.deliveries.map((d) => d.destination_id).sort()).toEqual([everything.id, matching.id].sort());
    expect(receiver.requests.filter((r) => r.path.startsWith(`/hook/${id}/`)).map((r) => r.path).sort()).toEqual([`/hook/${id}/all`, `/hook/${id}/matching`]);
  });

  test('an issue resolved before the dispatcher ran still has its new-issue alert delivered, and its resolution stays silent', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const webhook = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}` });
    const issueId = new Types.ObjectId().toHexString();
    const orgId = new Types.ObjectId(owner.organization.id);
    const at = new Date();
    // As a user resolving an issue within seconds of its first event would: between two dispatcher ticks.
    await openAlert({ key: `issue:${issueId}:new`, orgId, projectId: new Types.ObjectId(project.id), kind: 'issue.new', subject: { type: 'issue', id: issueId }, title: `New issue: QuickError ${id}`, at });
    await resolveAlertsAbout(orgId, { type: 'issue', id: issueId }, new Date(at.getTime() + 1));

    const [hook] = await eventually(async () => (receiver.at(`/hook/${id}`).length > 0 ? receiver.at(`/hook/${id}`) : undefined), 'the new-issue webhook', 20_000);
    expect(JSON.parse(hook!.raw)).toMatchObject({ event: 'alert.opened', alert: { kind: 'issue.new', title: `New issue: QuickError ${id}` } });
    const [alert] = (await alertsOf(owner)).data;
    expect(alert).toMatchObject({ status: 'resolved', deliveries: [expect.objectContaining({ destination_id: webhook.id, event: 'opened' })] });
  });
});

describe('destination secrets at rest', () => {
  test('webhook secrets and webhook and Slack URLs are sealed in the database and masked in answers; deliveries still reach the full URL, signed', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const secret = `whsec-${randomBytes(16).toString('hex')}`;
    const hookPath = `/hook/${id}/T0KEN${randomBytes(8).toString('hex')}?key=${randomBytes(8).toString('hex')}`;
    const slackPath = `/slack/${id}/${randomBytes(12).toString('hex')}`;
    const webhook = await addDestination(owner, { type: 'webhook', url: `${receiver.url}${hookPath}`, secret });
    const slack = await addDestination(owner, { type: 'slack', url: `${receiver.url}${slackPath}` });

    // what someone reading the database (a backup, a replica) sees: no URL past its host, no secret
    const stored = await mongoose.connection.collection('alert_destinations').find({ _id: { $in: [new Types.ObjectId(webhook.id), new Types.ObjectId(slack.id)] } }).toArray();
    expect(stored).toHaveLength(2);
    const raw = JSON.stringify(stored);
    for (const plain of [secret, hookPath.slice(1), id, slackPath.slice(-12)]) expect(raw).not.toContain(plain);

    const listed = (await owner.client.get('/v1/alert-destinations')).body.data as { id: string; url: string }[];
    expect(listed.find((d) => d.id === webhook.id)!.url).toBe(`${receiver.url}/…${hookPath.slice(-4)}`);
    expect(listed.find((d) => d.id === slack.id)!.url).toBe(`${receiver.url}/…${slackPath.slice(-4)}`);

    const check = await cronCheck(owner, project.id, `sealed-${id}`);
    await ping(`${check.ping_url}/fail`);
    await cronAlertWhen(owner, (a) => a.deliveries.length === 2 && a.deliveries.every((d) => d.status === 'sent'), 'both deliveries sent');
    const [hook] = receiver.at(hookPath);
    expect(hook!.headers['x-sluice-signature']).toBe(`sha256=${createHmac('sha256', secret).update(hook!.raw).digest('hex')}`);
    expect(receiver.at(slackPath)).toHaveLength(1);
  });

  test('a destination stored in plaintext before sealing still delivers, signed, and is answered masked', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const secret = `legacy-${randomBytes(12).toString('hex')}`;
    const _id = new Types.ObjectId();
    await mongoose.connection.collection('alert_destinations').insertOne({
      _id,
      orgId: new Types.ObjectId(owner.organization.id),
      type: 'webhook',
      name: 'from before',
      emails: [],
      url: `${receiver.url}/hook/${id}/legacy`,
      secret,
      kinds: [],
      projectIds: [],
      createdAt: new Date(),
    });
    const [listed] = (await owner.client.get('/v1/alert-destinations')).body.data;
    expect(listed).toMatchObject({ id: _id.toHexString(), url: `${receiver.url}/…${'legacy'.slice(-4)}`, secret_set: true });

    const check = await cronCheck(owner, project.id, `legacy-${id}`);
    await ping(`${check.ping_url}/fail`);
    await cronAlertWhen(owner, (a) => a.deliveries.length === 1 && a.deliveries[0]!.status === 'sent', 'the delivery sent');
    const [hook] = receiver.at(`/hook/${id}/legacy`);
    expect(hook!.headers['x-sluice-signature']).toBe(`sha256=${createHmac('sha256', secret).update(hook!.raw).digest('hex')}`);

    // what workers do once at start after an upgrade: the plaintext is sealed in place, answers unchanged
    const box = createSecretBox(live.config);
    expect(await sealStoredDestinations(box)).toBeGreaterThanOrEqual(1);
    const stored = await mongoose.connection.collection('alert_destinations').findOne({ _id });
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(stored)).not.toContain(`/hook/${id}/legacy`);
    expect({ url: box.open(stored!.urlSealed), secret: box.open(stored!.secretSealed) }).toEqual({ url: `${receiver.url}/hook/${id}/legacy`, secret });
    expect((await owner.client.get('/v1/alert-destinations')).body.data).toEqual([listed]);
    expect(await sealStoredDestinations(box)).toBe(0);
  });
});

describe('email addresses are confirmed before alerts reach them', () => {
  test("a stranger's address gets only the confirmation mail, nothing an attacker typed, and no alert until the link is used; then it gets alerts", async () => {
    const attacker = await signUp(live);
    const project = await createProject(attacker);
    const id = tag();
    const stranger = uniqueEmail('stranger');
    const spam = `CHEAP PILLS at spam-${id}.example`;
    const destination = await attacker.client.post('/v1/alert-destinations', { type: 'email', emails: [stranger], name: spam });
    expect(destination.status).toBe(201);
    expect(destination.body.addresses).toEqual([{ email: stranger, verified: false }]);
    const [confirmation] = await catcher.waitFor(1, confirmationTo(stranger));
    expect(confirmation!.text + confirmation!.html + confirmation!.subject).not.toContain(spam);
    expect(confirmation!.text).toContain(`${live.config.DASHBOARD_ORIGIN}/confirm-email/`);

    // the attacker's own errors open an alert: the stranger must not hear of it
    const check = await cronCheck(attacker, project.id, `${spam} ${id}`);
    await ping(`${check.ping_url}/fail`);
    const refused = await cronAlertWhen(attacker, (a) => byDestination(a, destination.body.id)?.status === 'failed', 'the delivery refused');
    expect(byDestination(refused, destination.body.id)).toMatchObject({ attempts: 1, last_error: expect.stringContaining('no address of this destination is confirmed') });
    expect(catcher.mails.filter((mail) => mail.to.includes(stranger))).toEqual([confirmation]);
    // adding the address again while its link is out sends no second mail
    await addDestination(attacker, { type: 'email', emails: [stranger] });
    expect(catcher.mails.filter((mail) => mail.to.includes(stranger))).toHaveLength(1);

    const token = await confirmationToken(stranger);
    const confirmed = await live.api.post(`/v1/email-confirmations/${token}`);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toEqual({ email: stranger, verified: true });
    // single-use: the same link again, or a made-up one, is not found
    for (const used of [token, `${token.slice(0, -1)}x`]) {
      const again = await live.api.post(`/v1/email-confirmations/${used}`);
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ code: 'not_found', message: expect.any(String), request_id: expect.any(String) });
    }
    const listed = (await attacker.client.get('/v1/alert-destinations')).body.data as { id: string; addresses: unknown }[];
    expect(listed.find((d) => d.id === destination.body.id)!.addresses).toEqual([{ email: stranger, verified: true }]);

    // confirmed: the recovery's "Resolved" reaches it
    await ping(check.ping_url);
    const [resolved] = await catcher.waitFor(1, mailsTo(stranger));
    expect(resolved!.subject).toMatch(/^\[Sluice\] Resolved:/);
  });
});

describe('issue alerts through ingest', () => {
  let owner: Account;
  let project: ProjectWithDsn;

  async function send(...events: Record<string, unknown>[]) {
    for (const event of events) {
      const reply = await live.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
      expect(reply.status).toBe(200);
    }
  }
  const issueWithCount = (count: number) =>
    eventually(async () => {
      const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
      return issue?.count >= count ? (issue as { id: string; count: number; title: string }) : undefined;
    }, `an issue with ${count} events`);

  beforeAll(async () => {
    owner = await signUp(live);
    project = await projectWithDsn(owner, live.ingest.baseUrl);
  });

  test('a new issue opens one alert, resolving the issue resolves it, a regression opens another; the history filters and pages', async () => {
    const other = await createProject(owner);
    const id = tag();
    const webhook = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}` });
    const failure = { type: 'CheckoutError', value: `card declined ${id}` };

    await send(errorEvent({}, failure));
    const firstIssue = await issueWithCount(1);
    await send(errorEvent({}, failure), errorEvent({}, { ...failure, lineno: 77 }));
    const issue = await issueWithCount(3);
    expect(issue.id).toBe(firstIssue.id);
    const fresh = (await alertsOf(owner)).data;
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).toMatchObject({ kind: 'issue.new', status: 'open', project_id: project.id, subject: { type: 'issue', id: issue.id }, title: `New issue: ${issue.title}`, resolved_at: null });

    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'resolve' })).status).toBe(200);
    const [resolved] = (await alertsOf(owner)).data;
    expect(resolved).toMatchObject({ id: fresh[0]!.id, status: 'resolved', resolved_at: expect.any(String) });

    await send(errorEvent({}, failure));
    const regression = await eventually(async () => (await alertsOf(owner, '?kind=issue.regression')).data[0], 'the regression alert');
    expect(regression).toMatchObject({ status: 'open', subject: { type: 'issue', id: issue.id }, title: `Regression: ${issue.title}` });
    await issueWithCount(4);
    const all = (await alertsOf(owner)).data;
    expect(all.map((a) => [a.kind, a.status])).toEqual([['issue.regression', 'open'], ['issue.new', 'resolved']]);

    // Once the regression is handed over, the dispatcher has run since the resolution: which was not announced.
    const delivered = await eventually(async () => {
      const alerts = (await alertsOf(owner)).data;
      return alerts.every((a) => a.deliveries.some((d) => d.status === 'sent')) ? alerts : undefined;
    }, 'both alerts delivered', 20_000);
    expect(delivered.map((a) => a.deliveries.map((d) => [d.destination_id, d.event, d.status]))).toEqual([[[webhook.id, 'opened', 'sent']], [[webhook.id, 'opened', 'sent']]]);
    expect(receiver.at(`/hook/${id}`).map((r) => JSON.parse(r.raw).event)).toEqual(['alert.opened', 'alert.opened']);

    const [newest, oldest] = all as [AlertJson, AlertJson];
    const ids = (page: { data: AlertJson[] }) => page.data.map((a) => a.id);
    expect(ids(await alertsOf(owner, '?kind=issue.new'))).toEqual([oldest.id]);
    expect(ids(await alertsOf(owner, '?kind=issue.regression'))).toEqual([newest.id]);
    expect(ids(await alertsOf(owner, '?kind=cron.down'))).toEqual([]);
    expect(ids(await alertsOf(owner, '?status=open'))).toEqual([newest.id]);
    expect(ids(await alertsOf(owner, '?status=resolved'))).toEqual([oldest.id]);
    expect(ids(await alertsOf(owner, `?project=${project.id}`))).toEqual([newest.id, oldest.id]);
    expect(ids(await alertsOf(owner, `?project=${other.id}`))).toEqual([]);
    expect(ids(await alertsOf(owner, `?project=${other.id}&project=${project.id}`))).toEqual([newest.id, oldest.id]);
    expect(ids(await alertsOf(owner, `?to=${encodeURIComponent(oldest.opened_at)}`))).toEqual([oldest.id]);
    expect(ids(await alertsOf(owner, `?from=${Date.parse(oldest.opened_at) + 1}`))).toEqual([newest.id]);
    expect(ids(await alertsOf(owner, `?from=${Date.parse(newest.opened_at) + 1}`))).toEqual([]);
    expect(ids(await alertsOf(owner, `?from=${Date.parse(oldest.opened_at)}&to=${Date.parse(newest.opened_at)}`))).toEqual([newest.id, oldest.id]);
    const backwards = await owner.client.get(`/v1/alerts?from=${Date.parse(newest.opened_at)}&to=${Date.parse(oldest.opened_at)}`);
    expect(backwards.status).toBe(400);
    expect(backwards.body.code).toBe('validation_failed');
    expect((await owner.client.get('/v1/alerts?kind=cron.sideways')).body.code).toBe('validation_failed');

    const first = await alertsOf(owner, '?limit=1');
    expect(ids(first)).toEqual([newest.id]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await alertsOf(owner, `?limit=1&cursor=${first.next_cursor}`);
    expect(ids(second)).toEqual([oldest.id]);
    expect(second.next_cursor).toBeNull();

    const stranger = await signUp(live, 'stranger');
    expect((await alertsOf(stranger)).data).toEqual([]);
    expect((await stranger.client.get(`/v1/alerts?project=${project.id}`)).status).toBe(404);
  });

  test('new issues arriving together are each created once, with their counts, users and release, and each opens one alert', async () => {
    const team = await signUp(live, 'burst');
    const burst = await projectWithDsn(team, live.ingest.baseUrl);
    const ISSUES = 40;
    const id = tag();
    // three events of each issue, from two users, all sent at once so the workers take many new issues in one count
    const events = Array.from({ length: ISSUES * 3 }, (_, i) =>
      errorEvent({ user: { id: `user-${Math.floor(i / ISSUES) % 2}` }, release: 'shop@2.0.0' }, { type: 'BurstError', value: `failure ${id}`, fn: `handler${i % ISSUES}` }),
    );
    const replies = await Promise.all(
      events.map((event) => live.ingest.request('POST', `/api/${burst.number}/envelope/?sentry_key=${burst.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))),
    );
    expect(replies.map((reply) => reply.status)).toEqual(events.map(() => 200));
    type Listed = { id: string; count: number; user_count: number; title: string; releases: string[] };
    const issues = await eventually(async () => {
      const listed = (await team.client.get(`/v1/issues?project=${burst.id}&limit=100`)).body.data as Listed[];
      return listed.length === ISSUES && listed.every((issue) => issue.count === 3) ? listed : undefined;
    }, 'every issue counted', 30_000);
    expect(issues.map((issue) => [issue.count, issue.user_count])).toEqual(issues.map(() => [3, 2]));
    expect(issues.map((issue) => issue.releases)).toEqual(issues.map(() => ['shop@2.0.0']));
    const alerts = await eventually(async () => {
      const listed = (await alertsOf(team, '?kind=issue.new&limit=100')).data;
      return listed.length >= ISSUES ? listed : undefined;
    }, 'an alert for every new issue');
    expect(alerts.map((alert) => alert.subject.id).sort()).toEqual(issues.map((issue) => issue.id).sort());
    expect(new Set(alerts.map((alert) => alert.title))).toEqual(new Set(issues.map((issue) => `New issue: ${issue.title}`)));
    // a further event of each counts into its issue, opening nothing new
    await Promise.all(
      events.slice(0, ISSUES).map((event) => live.ingest.request('POST', `/api/${burst.number}/envelope/?sentry_key=${burst.publicKey}`, envelope({}, [{ type: 'event', payload: { ...event, event_id: eventId() } }]))),
    );
    await eventually(async () => ((await team.client.get(`/v1/issues?project=${burst.id}&limit=100`)).body.data as Listed[]).every((issue) => issue.count === 4) || undefined, 'the fourth events counted');
    expect((await alertsOf(team, '?kind=issue.new&limit=100')).data).toHaveLength(ISSUES);
  });
});

describe('two worker processes', () => {
  let second: Harness;

  beforeAll(async () => {
    second = await startHarness({ SMTP_URL: catcher.url, MAIL_FROM: `Sluice Alerts <${MAIL_FROM_ADDRESS}>`, OUTBOUND_ALLOWLIST: '127.0.0.1', REDIS_PREFIX: sharedPrefix }, { workers: true });
  });
  afterAll(async () => {
    await second?.close();
  });

  test('one cron incident and its recovery: one alert, one email and one webhook call per event', async () => {
    const owner = await signUp(live);
    const project = await createProject(owner);
    const id = tag();
    const address = uniqueEmail('twice');
    const email = await addConfirmedEmail(owner, [address]);
    const webhook = await addDestination(owner, { type: 'webhook', url: `${receiver.url}/hook/${id}` });
    const check = await cronCheck(owner, project.id, `shared-${id}`);
    const started = Date.now();

    await ping(`${check.ping_url}/fail`);
    await catcher.waitFor(1, mailsTo(address));
    await ping(check.ping_url);
    await catcher.waitFor(2, mailsTo(address));
    // Both dispatchers tick every 5 s: give each several chances to send again.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 12_000 - (Date.now() - started))));

    const mails = catcher.mails.filter(mailsTo(address));
    expect(mails.map((m) => m.subject.split(':')[0]).sort()).toEqual(['[Sluice] Alert', '[Sluice] Resolved']);
    expect(receiver.at(`/hook/${id}`).map((r) => JSON.parse(r.raw).event).sort()).toEqual(['alert.opened', 'alert.resolved']);
    const { data } = await alertsOf(owner);
    expect(data).toHaveLength(1);
    expect(data[0]!.status).toBe('resolved');
    expect(data[0]!.deliveries.map((d) => [d.destination_id, d.event, d.status, d.attempts]).sort()).toEqual(
      [[email.id, 'opened', 'sent', 1], [email.id, 'resolved', 'sent', 1], [webhook.id, 'opened', 'sent', 1], [webhook.id, 'resolved', 'sent', 1]].sort(),
    );
  });
});
