/**
 * A new user's default without a PostgreSQL of their own: `npm start` makes a PostgreSQL cluster under
 * DATA_DIR/postgres and runs FerretDB on it. LOCAL_POSTGRES_URL=own asks for that even though this
 * machine has a PostgreSQL on 5432. The service runs as `npm start` runs it, with a fresh DATA_DIR.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { loadConfig } from '../../src/shared/config.js';
import { ferretdbBinary } from '../../src/shared/local-services.js';
import { createApiKey, signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, eventId, projectWithDsn } from '../support/factories/telemetry.js';
import { DASHBOARD_ORIGIN, type Harness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { startService, type ServiceProcess } from '../support/service-process.js';
import { eventually } from '../support/wait.js';

// run as root, PostgreSQL runs as the postgres user, which must be able to reach the cluster's directory
const dataDir = mkdtempSync(join(tmpdir(), 'sluice-own-postgres-'));
chmodSync(dataDir, 0o755);
const clusterDir = join(dataDir, 'postgres');
let service: ServiceProcess | undefined;

/** The service with the fresh DATA_DIR; its start-up lines (`[local-services] …` on stderr) are kept. */
async function start() {
  // the FerretDB binary the suite's global setup built, rather than a build of its own in the fresh DATA_DIR
  const ferretdbDir = dirname(ferretdbBinary(resolve(loadConfig().DATA_DIR)));
  service = startService({ MONGO_URL: undefined, LOCAL_STORE: undefined, LOCAL_POSTGRES_URL: 'own', DATA_DIR: dataDir, PATH: `${ferretdbDir}${delimiter}${process.env.PATH}`, DASHBOARD_ORIGIN, PASSWORD_HASH_COST: '12' });
  let startup = '';
  service.child.stderr.on('data', (chunk: Buffer) => (startup += chunk.toString()));
  const api = new Client(`http://127.0.0.1:${await service.portOf('api listening', 120_000)}`);
  const ingest = new Client(`http://127.0.0.1:${await service.portOf('ingest listening', 60_000)}`);
  for (const client of [api, ingest]) expect((await client.get('/readyz')).status).toBe(200);
  return { api, ingest, startup: startup.split('\n') };
}

const postmasterPid = () => Number(readFileSync(join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

/** Stops the FerretDB and PostgreSQL the service left running for this DATA_DIR (as a reboot would). */
async function stopLocalServers() {
  const ferretdb = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`--state-dir=${dataDir}/`);
      } catch {
        return false;
      }
    });
  const pids = [...ferretdb, ...(existsSync(join(clusterDir, 'postmaster.pid')) ? [postmasterPid()] : [])];
  for (const pid of ferretdb) process.kill(pid, 'SIGTERM');
  // PostgreSQL's fast shutdown: ends its sessions and writes a checkpoint
  if (existsSync(join(clusterDir, 'postmaster.pid'))) process.kill(postmasterPid(), 'SIGINT');
  await eventually(async () => (pids.some(alive) ? undefined : true), 'FerretDB and PostgreSQL to exit', 30_000);
}

afterAll(async () => {
  await service?.stop();
  await stopLocalServers();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

const storeLine = (startup: string[]) => startup.find((line) => line.startsWith('[local-services] the store:'));

test('with LOCAL_POSTGRES_URL=own the service makes its own PostgreSQL cluster, stores telemetry in it, and reuses it on the next starts', async () => {
  const first = await start();
  expect(storeLine(first.startup)).toMatch(new RegExp(`^\\[local-services\\] the store: FerretDB on our own PostgreSQL in ${clusterDir} on 127\\.0\\.0\\.1:\\d+, at mongodb://127\\.0\\.0\\.1:\\d+$`));
  expect(first.startup).toEqual(expect.arrayContaining([expect.stringMatching(/^\[local-services\] creating our own PostgreSQL in /)]));
  expect(existsSync(join(clusterDir, 'PG_VERSION'))).toBe(true);

  const owner = await signUp({ api: first.api } as Harness);
  const { secret } = await createApiKey(owner);
  const project = await projectWithDsn(owner, first.ingest.baseUrl);
  const id = eventId();
  const sent = await first.ingest.post(`/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ event_id: id }) }]));
  expect(sent.status).toBe(200);
  const issuesOf = (api: Client) => api.with({ bearer: secret }).get(`/v1/issues?project=${project.id}`);
  const stored = await eventually(async () => {
    const reply = await issuesOf(first.api);
    return reply.status === 200 && reply.body.data.length === 1 ? reply.body.data : undefined;
  }, 'the event listed as an issue');
  expect(stored[0].count).toBe(1);
  const clusterPid = postmasterPid();
  await service!.stop();

  // the servers are still running: the next start uses them as they are
  const second = await start();
  expect(second.startup).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^\\[local-services\\] reusing our own PostgreSQL in ${clusterDir} on `))]));
  expect(storeLine(second.startup)).toBe(storeLine(first.startup));
  expect(postmasterPid()).toBe(clusterPid);
  expect((await issuesOf(second.api)).body.data).toEqual([expect.objectContaining({ id: stored[0].id, count: 1 })]);
  await service!.stop();

  // after a reboot the cluster is started again from DATA_DIR/postgres, on the port it had
  await stopLocalServers();
  const third = await start();
  expect(third.startup).toEqual(expect.arrayContaining([expect.stringMatching(/^\[local-services\] starting our own PostgreSQL in /)]));
  expect(third.startup.some((line) => line.includes('creating our own PostgreSQL'))).toBe(false);
  expect(storeLine(third.startup)).toBe(storeLine(first.startup));
  expect((await issuesOf(third.api)).body.data).toEqual([expect.objectContaining({ id: stored[0].id, count: 1 })]);
}, 240_000);
