/**
 * A Redis and a MongoDB-compatible server of the chaos suite's own, on free loopback ports, which it may
 * stop and start without touching the servers every other test file shares. Both keep their data
 * across a restart: Redis through its append-only file (fsync on every write, as production runs it),
 * FerretDB in its PostgreSQL database (or SQLite files when PostgreSQL does not answer).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/shared/config.js';
import { ferretdbBinary, LOCAL_DATABASE, mongoAnswers, redisAnswers } from '../../src/shared/local-services.js';

/** A port nothing listens on right now (the OS picks it; closed again before the server takes it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** A child process whose output is kept (shown when it fails to start) and that can be stopped and awaited. */
function launch(command: string, args: string[]) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => output };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

async function waitUntil(check: () => Promise<boolean>, what: string, started: ReturnType<typeof launch>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    if (started.child.exitCode !== null) throw new Error(`${what} exited with ${started.child.exitCode}:\n${started.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not answer within ${timeoutMs} ms:\n${started.output()}`);
}

export interface OwnRedis {
  url: string;
  /** SIGTERM (Redis writes its append-only file and exits), then a new server on the same port and data. */
  restart(): Promise<void>;
  /** SIGTERM and wait for the exit; `start` brings it back on the same port and data. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-chaos-redis-'));
  const port = await freePort();
  const args = ['--bind', '127.0.0.1', '--port', String(port), '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '', '--dir', dir];
  const answers = () => redisAnswers(port);
  const start = async () => {
    const started = launch('redis-server', args);
    await waitUntil(answers, 'redis-server', started);
    return started;
  };
  let server = await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    restart: async () => {
      await stop(server.child, 'SIGTERM');
      server = await start();
    },
    stop: () => stop(server.child, 'SIGTERM'),
    start: async () => {
      server = await start();
    },
    close: async () => {
      await stop(server.child, 'SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface OwnStore {
  /** MONGO_URL for the service: the `sluice` database on this FerretDB. */
  mongoUrl: string;
  /** FERRETDB_POSTGRES_URL for the service, on the PostgreSQL backend. */
  ferretdbPostgresUrl?: string;
  backend: 'postgresql' | 'sqlite';
  /** Kills the server (SIGKILL, no goodbye to its clients), waits `ms`, and starts it again on the same port and data. */
  outage(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** A PostgreSQL database of the suite's own, or undefined when PostgreSQL does not answer. */
async function createPostgresDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  const name = `sluice_chaos_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
  admin.on('error', () => {});
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  try {
    await admin.query(`CREATE DATABASE ${name}`);
    // as the local store does: FerretDB's parameterised field names need custom plans to use the expression indexes
    await admin.query(`ALTER DATABASE ${name} SET plan_cache_mode = force_custom_plan`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * FerretDB 1.24, the binary jest's global setup built for the local store, on a PostgreSQL database of
 * its own (dropped at close), or on SQLite files in a temp dir when PostgreSQL does not answer.
 */
export async function startOwnStore(poolSize = 32): Promise<OwnStore> {
  const config = loadConfig();
  // the local store's binary; a clone whose tests reused a FerretDB already running builds its own
  const binary = ferretdbBinary(resolve(config.DATA_DIR));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-chaos-ferretdb-'));
  const port = await freePort();
  // the PostgreSQL the local store is on (LOCAL_POSTGRES_URL's or a cluster of its own; none with LOCAL_STORE=sqlite),
  // whose role may create databases
  const adminUrl = process.env.TEST_FERRETDB_POSTGRES_URL;
  const postgres = adminUrl ? await createPostgresDatabase(adminUrl) : undefined;
  // A pool above the chaos suite's five processes' commands (28, see FERRETDB_COMMANDS), below the local
  // store's: the PostgreSQL server's connections are shared with the FerretDB the other test files use.
  const handler = postgres
    ? ['--handler=postgresql', `--postgresql-url=${postgres.url}?pool_max_conns=${poolSize}`]
    : ['--handler=sqlite', `--sqlite-url=file:${dir}/`];
  const args = [...handler, `--listen-addr=127.0.0.1:${port}`, '--telemetry=disable', `--state-dir=${dir}`, '--debug-addr=-', '--log-level=warn'];
  const answers = () => mongoAnswers(port);
  const start = async () => {
    const started = launch(binary, args);
    await waitUntil(answers, 'FerretDB', started);
    return started;
  };
  let server = await start();
  return {
    mongoUrl: `mongodb://127.0.0.1:${port}/${LOCAL_DATABASE}`,
    ...(postgres && { ferretdbPostgresUrl: postgres.url }),
    backend: postgres ? 'postgresql' : 'sqlite',
    outage: async (ms) => {
      await stop(server.child, 'SIGKILL');
      await new Promise((r) => setTimeout(r, ms));
      server = await start();
    },
    close: async () => {
      await stop(server.child, 'SIGTERM');
      await postgres?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
