/**
 * Ingest through an outage of the MongoDB-compatible server, with the service as `npm start` runs it on
 * a FerretDB of this file's own: a DSN that was live keeps being accepted (its telemetry waits in
 * Redis and is stored once the store is back); a DSN the process never saw cannot be checked, so it
 * gets 503 with Retry-After.
 */
import { randomBytes } from 'node:crypto';
import { createApiKey, signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { startOwnStore, type OwnStore } from '../support/own-servers.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/wait.js';

let store: OwnStore;
let service: ServiceProcess;

beforeAll(async () => {
  store = await startOwnStore();
}, 300_000);

afterAll(async () => {
  await service?.stop();
  await store?.close();
});

test('while the store is down, a DSN seen live is still accepted and its events are stored when it returns; an unseen DSN gets 503', async () => {
  service = startService({ MONGO_URL: store.mongoUrl, FERRETDB_POSTGRES_URL: store.ferretdbPostgresUrl ?? '', INGEST_DSN_CACHE_MS: '1000', DASHBOARD_ORIGIN, PASSWORD_HASH_COST: '12' });
  const api = new Client(`http://127.0.0.1:${await service.portOf('api listening', 60_000)}`);
  const ingest = new Client(`http://127.0.0.1:${await service.portOf('ingest listening', 60_000)}`);
  const owner = await signUp({ api } as Harness);
  const { secret } = await createApiKey(owner);
  const [live, unseen] = [await projectWithDsn(owner, ingest.baseUrl), await projectWithDsn(owner, ingest.baseUrl)];
  const send = (project: ProjectWithDsn) => {
    const id = randomBytes(16).toString('hex');
    return ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ event_id: id }) }]));
  };
  expect((await send(live)).status).toBe(200);

  // longer than the driver waits for a server (10 s), so the unseen DSN's lookup fails inside it
  const outage = store.outage(20_000);
  // past the DSN cache's second, so every request below asks the store, which is down
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const during = [];
  for (let i = 0; i < 5; i++) during.push(await send(live));
  const refused = await send(unseen);
  await outage;

  expect(during.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200]);
  expect([refused.status, refused.body.code]).toEqual([503, 'not_ready']);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  const counted = await eventually(async () => {
    const reply = await api.with({ bearer: secret }).get(`/v1/issues?project=${live.id}`);
    if (reply.status !== 200) return undefined;
    const total = (reply.body.data as { count: number }[]).reduce((sum, issue) => sum + issue.count, 0);
    return total === 6 ? total : undefined;
  }, 'the six events stored once the store is back', 60_000);
  expect(counted).toBe(6);
}, 180_000);
