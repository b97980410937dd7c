/**
 * Two worker processes, as a scaled-out install runs them: the api and two `ROLE=workers` processes
 * started from source on one database, one Redis prefix and one SMTP server. Their job schedulers
 * are shared, so each tick (the cron sweep, the alert dispatcher) runs once between them, and each
 * delivery is one job: an incident is one alert and one email, however many workers there are.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mongo } from 'mongoose';
import { createProject, signUp } from '../support/factories/accounts.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { startMailCatcher, type MailCatcher } from '../support/smtp.js';

const database = `slk_test_workers_${randomBytes(4).toString('hex')}`;
const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
let catcher: MailCatcher;
let api: ServiceProcess;
let workers: ServiceProcess[];
let apiClient: Client;

/** Long enough for both processes' dispatchers (every 5 s) to have looked several times. */
const SETTLE_MS = 12_000;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

beforeAll(async () => {
  catcher = await startMailCatcher();
  const env = { MONGO_URL: mongoUrl, REDIS_PREFIX: `slk_test_${randomBytes(6).toString('hex')}`, SMTP_URL: catcher.url, DASHBOARD_ORIGIN, PASSWORD_HASH_COST: '12' };
  api = startService({ ...env, ROLE: 'api' });
  workers = [startService({ ...env, ROLE: 'workers' }), startService({ ...env, ROLE: 'workers' })];
  apiClient = new Client(`http://127.0.0.1:${await api.portOf('api listening')}`);
  await Promise.all(workers.map((worker) => worker.waitForLine('workers started')));
}, 60_000);

afterAll(async () => {
  for (const service of [api, ...workers]) {
    if (!service || service.child.exitCode !== null) continue;
    service.child.kill('SIGTERM');
    await once(service.child, 'exit');
  }
  const client = await mongo.MongoClient.connect(mongoUrl);
  await client.db(database).dropDatabase();
  await client.close();
  await catcher?.close();
});

test('two worker processes: a failing cron check is one alert and one email, its recovery one more', async () => {
  const owner = await signUp({ api: apiClient } as Harness);
  const project = await createProject(owner);
  expect((await owner.client.post('/v1/alert-destinations', { type: 'email', emails: ['oncall@example.test'] })).status).toBe(201);
  const check = (await owner.client.post('/v1/cron/checks', { project_id: project.id, name: 'Nightly export', schedule: { type: 'interval', value: 1, unit: 'day' } })).body;

  expect((await fetch(`${check.ping_url}/fail`)).status).toBe(200);
  await catcher.waitFor(1);
  await settle();
  expect(catcher.mails.map((mail) => [mail.subject, mail.to])).toEqual([['[Sluice] Alert: Cron check "Nightly export" reported a failure', ['oncall@example.test']]]);
  const [alert, ...others] = (await owner.client.get('/v1/alerts')).body.data;
  expect(others).toEqual([]);
  expect(alert).toMatchObject({ kind: 'cron.down', status: 'open', deliveries: [{ event: 'opened', status: 'sent', attempts: 1 }] });

  expect((await fetch(check.ping_url)).status).toBe(200);
  await catcher.waitFor(2);
  await settle();
  expect(catcher.mails.map((mail) => mail.subject)).toEqual([
    '[Sluice] Alert: Cron check "Nightly export" reported a failure',
    '[Sluice] Resolved: Cron check "Nightly export" reported a failure',
  ]);
  const [resolved] = (await owner.client.get('/v1/alerts')).body.data;
  expect(resolved).toMatchObject({ id: alert.id, status: 'resolved' });
  expect(resolved.deliveries.map((d: { event: string; status: string; attempts: number }) => [d.event, d.status, d.attempts])).toEqual([
    ['opened', 'sent', 1],
    ['resolved', 'sent', 1],
  ]);
}, 60_000);
