import { randomBytes } from 'node:crypto';
import { mongo } from 'mongoose';
import { DASHBOARD_ORIGIN } from './harness.js';
import { Client } from './http.js';
import { deletePrefix } from './redis-keys.js';
import { startService, type ServiceProcess } from './service-process.js';

export type Role = 'api' | 'ingest' | 'workers';

/** The line each role logs once it serves. */
const readyLine: Record<Role, string> = { api: 'api listening', ingest: 'ingest listening', workers: 'workers started' };

/** Six processes from source on two cores take a while; each is given this long to be up. */
const START_TIMEOUT_MS = 60_000;

/** Processes of one scaled-out install: one database, one Redis prefix, one configuration. */
export interface Install {
  processes: ServiceProcess[];
  /** A client per api process, in the order their roles were given. */
  api: Client[];
  /** A client per ingest process. */
  ingest: Client[];
  /** The install's database, for arranging what only the passing of time would bring. */
  db: mongo.Db;
  /** Stops every process (SIGTERM, as an orchestrator does), drops the database and the Redis prefix. */
  stop(): Promise<void>;
}

/**
 * Starts one process per role, all at once (as `ROLE=… npm start` on several machines would), against a
 * database and a Redis prefix of their own, and waits until every one serves.
 */
export async function startInstall(roles: Role[], env: Record<string, string> = {}): Promise<Install> {
  const database = `slk_test_install_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  const shared = { MONGO_URL: mongoUrl, REDIS_PREFIX: `slk_test_${randomBytes(6).toString('hex')}`, DASHBOARD_ORIGIN, PASSWORD_HASH_COST: '12', ...env };
  const processes = roles.map((role) => startService({ ...shared, ROLE: role }));
  const client = await mongo.MongoClient.connect(mongoUrl);
  const stop = async () => {
    await Promise.all(processes.map((service) => service.stop()));
    if (!('REDIS_URL' in env) && process.env.TEST_REDIS_URL) await deletePrefix(process.env.TEST_REDIS_URL, shared.REDIS_PREFIX);
    await client.db(database).dropDatabase();
    await client.close();
  };
  try {
    const lines = await Promise.all(processes.map((service, index) => service.waitForLine(readyLine[roles[index]!], START_TIMEOUT_MS)));
    const clientsOf = (role: Role) => lines.filter((_, index) => roles[index] === role).map((line) => new Client(`http://127.0.0.1:${line.port as number}`));
    return { processes, api: clientsOf('api'), ingest: clientsOf('ingest'), db: client.db(database), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
