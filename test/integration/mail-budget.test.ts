import type { Redis } from 'ioredis';
import { Types } from 'mongoose';
import { createMailer, type Mailer } from '../../src/shared/clients/mailer.js';
import { closeRedis, createRedis } from '../../src/shared/clients/redis.js';
import { sendDigest } from '../../src/shared/features/reports/service.js';
import { createLogger } from '../../src/shared/logger.js';
import { createProject, signUp, uniqueEmail, type Account } from '../support/factories/accounts.js';
import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { startMailCatcher, type MailCatcher, type ReceivedMail } from '../support/smtp.js';
import { eventually } from '../support/wait.js';

const PER_HOUR = 4;
const CONFIRMATION_SUBJECT = 'Confirm your address for Sluice alerts';

let catcher: MailCatcher;
let h: Harness;
let redis: Redis;
let mailer: Mailer;

beforeAll(async () => {
  catcher = await startMailCatcher();
  h = await startHarness({ SMTP_URL: catcher.url, MAIL_PER_ORG_PER_HOUR: String(PER_HOUR) }, { workers: true });
  // a second process's mailer (a worker elsewhere): the budget is shared through Redis
  redis = createRedis(h.config.REDIS_URL!, 'fast', createLogger('silent'));
  mailer = createMailer(h.config, redis)!;
});

afterAll(async () => {
  mailer?.close();
  if (redis) await closeRedis(redis);
  await h?.close();
  await dropTestDatabase();
  await catcher?.close();
});

const to = (address: string) => (mail: ReceivedMail) => mail.to.includes(address);

async function confirm(address: string): Promise<void> {
  const [mail] = await catcher.waitFor(1, (m) => to(address)(m) && m.subject === CONFIRMATION_SUBJECT);
  const token = /\/confirm-email\/([0-9A-Za-z]+)/.exec(mail!.text)![1]!;
  expect((await h.api.post(`/v1/email-confirmations/${token}`)).status).toBe(200);
}

async function failCronCheck(account: Account, projectId: string, name: string) {
  const check = await account.client.post('/v1/cron/checks', { project_id: projectId, name, schedule: { type: 'interval', value: 1, unit: 'hour' } });
  expect(check.status).toBe(201);
  const response = await fetch(`${check.body.ping_url}/fail`);
  expect(response.status).toBe(200);
  return check.body as { id: string; ping_url: string };
}

const alertOf = (account: Account, subjectId: string) =>
  eventually(async () => {
    const { data } = (await account.client.get('/v1/alerts?kind=cron.down')).body as { data: { subject: { id: string }; deliveries: { status: string; last_error: string | null }[] }[] };
    const alert = data.find((a) => a.subject.id === subjectId);
    return alert?.deliveries.length && alert.deliveries.every((d) => d.status === 'sent' || d.status === 'failed') ? alert : undefined;
  }, 'the alert delivery decided');

test('an organisation sends at most MAIL_PER_ORG_PER_HOUR mails (confirmations, alerts, digests together); past it mail is not sent and the delivery and schedule say why; other organisations are unaffected', async () => {
  const owner = await signUp(h);
  const project = await createProject(owner);
  const [first, second] = [uniqueEmail('first'), uniqueEmail('second')];
  // mails 1 and 2: the confirmations
  const destination = await owner.client.post('/v1/alert-destinations', { type: 'email', emails: [first, second] });
  expect(destination.status).toBe(201);
  await confirm(first);
  await confirm(second);

  // mail 3: an alert to both confirmed addresses
  const sent = await failCronCheck(owner, project.id, 'within budget');
  expect(await alertOf(owner, sent.id)).toMatchObject({ deliveries: [{ status: 'sent', last_error: null }] });
  expect(catcher.mails.filter((m) => to(first)(m) && m.subject.startsWith('[Sluice] Alert:'))).toHaveLength(1);

  // mail 4: a digest from another process, sharing the budget
  expect((await owner.client.put('/v1/reports/schedule', { cadence: 'daily', recipients: [first] })).status).toBe(200);
  const orgId = new Types.ObjectId(owner.organization.id);
  expect(await sendDigest(orgId, new Date(), mailer)).toBe('sent');

  // past the budget: the next alert is not sent, once and for good, and says why
  const refused = await failCronCheck(owner, project.id, 'past budget');
  const alert = await alertOf(owner, refused.id);
  expect(alert.deliveries).toEqual([expect.objectContaining({ status: 'failed', attempts: 1, last_error: `not sent: this organisation's mail budget of ${PER_HOUR} per hour is used up` })]);
  // the digest neither
  expect(await sendDigest(orgId, new Date(), mailer)).toBe('skipped');
  expect((await owner.client.get('/v1/reports/schedule')).body.last_error).toMatch(/mail budget of 4 per hour is used up/);
  // nor a confirmation to a new address, which stays unconfirmed
  const third = uniqueEmail('third');
  const later = await owner.client.post('/v1/alert-destinations', { type: 'email', emails: [third] });
  expect(later.status).toBe(201);
  expect(later.body.addresses).toEqual([{ email: third, verified: false }]);
  const mine = [first, second, third];
  expect(catcher.mails.filter((m) => mine.some((address) => m.to.includes(address)))).toHaveLength(PER_HOUR);

  // another organisation still mails
  const other = await signUp(h);
  const theirs = uniqueEmail('theirs');
  expect((await other.client.post('/v1/alert-destinations', { type: 'email', emails: [theirs] })).status).toBe(201);
  await catcher.waitFor(1, to(theirs));
});
