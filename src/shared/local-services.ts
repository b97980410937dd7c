/**
 * The embedded default: with no MONGO_URL/REDIS_URL, `npm start` and `npm test` reuse a Redis and a
 * MongoDB-compatible server already listening on loopback, or start them with their data under DATA_DIR.
 * Started servers are left running in the background (their logs are in DATA_DIR/logs), so the next
 * start reuses them. Anything that cannot be had fails with a message that says what to do.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, chmodSync, chownSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { mongo } from 'mongoose';
import pg from 'pg';
import { ensureS3Bucket, type S3Location } from './clients/blob.js';
import { FERRETDB_POOL_SIZE } from './clients/mongo.js';
import type { Config, LocalStoreChoice } from './config.js';
import { isLoopbackHost } from './links.js';

const { MongoClient } = mongo;

export const LOCAL_REDIS_PORT = 6379;
/** Where a MongoDB of the user's own is reused, or a `mongod` on PATH is started. */
export const LOCAL_MONGO_PORT = 27017;
/**
 * Each FerretDB backend has a port of its own, so a server found listening is known to be the backend
 * asked for. FerretDB on our own PostgreSQL takes the first free port from `ownPostgresql`, recorded
 * with the cluster, so a cluster in another DATA_DIR is never mistaken for it.
 */
const FERRETDB_PORTS = { postgresql: 27018, sqlite: 27019, ownPostgresql: 27021 } as const;
/** Our own PostgreSQL cluster takes the first free port from here: clear of 5432/5433 and of the ephemeral range. */
const OWN_POSTGRES_FIRST_PORT = 54320;
/** The superuser initdb creates in our own cluster; it connects with trust auth, on loopback only. */
const OWN_POSTGRES_ROLE = 'sluice';
/**
 * PostgreSQL ends a FerretDB connection idle this long (`idle_session_timeout`, PostgreSQL 14 and
 * later), so the backends a burst opened go once it is over: each is 10-20 MiB PSS once it has served
 * FerretDB's tables under load (16 held 305 MiB PSS 90 s after `npm run bench`'s single part ended its
 * load). FerretDB's pool pings a connection idle for over a second before using it, so it drops one the
 * server ended and opens another, in a few milliseconds. The pool's own limit cannot do this: FerretDB
 * 1.24 turns any `pool_max_conn_idle_time` into a minute (left unset, it keeps idle connections 30
 * minutes), and the pool checks once a minute.
 */
const FERRETDB_IDLE_SESSION_TIMEOUT = '15s';
const FERRETDB_POOL_IDLE_TIME = '1m';
/** The MongoDB database the service uses locally, and the PostgreSQL database FerretDB keeps it in. */
export const LOCAL_DATABASE = 'sluice';
const FERRETDB_MODULE = 'github.com/FerretDB/FerretDB';
const FERRETDB_VERSION = 'v1.24.2';
/** The S3-compatible server for the `s3` blob driver's tests: versitygw over a plain directory (its posix backend). */
export const LOCAL_S3_PORT = 27020;
const VERSITYGW_MODULE = 'github.com/versity/versitygw';
const VERSITYGW_VERSION = 'v1.8.0';
/** Fixed, loopback-only credentials, so a server left running by an earlier start is reused. */
const LOCAL_S3_CREDENTIALS = { accessKeyId: 'sluice-local', secretAccessKey: 'sluice-local-secret' };
export const LOCAL_S3_BUCKET = 'sluice';

export interface LocalServices {
  mongoUrl: string;
  redisUrl: string;
  /** Set when the store is FerretDB on PostgreSQL: the database FerretDB keeps its tables in (see ferretdb-indexes). */
  ferretdbPostgresUrl?: string;
}

/** A local S3-compatible store and how to reach it (path-style addressing). */
export interface LocalS3 {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export class LocalServiceError extends Error {}

const say = (message: string) => process.stderr.write(`[local-services] ${message}\n`);

/** A Redis on that loopback port that answers PING (one still loading its append-only file does not). */
export async function redisAnswers(port: number): Promise<boolean> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, connectTimeout: 1000, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** A MongoDB-compatible server on that loopback port that answers a ping. */
export async function mongoAnswers(port: number): Promise<boolean> {
  const client = new MongoClient(`mongodb://127.0.0.1:${port}`, { serverSelectionTimeoutMS: 1000, directConnection: true });
  try {
    await client.db('admin').command({ ping: 1 });
    return true;
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

/** A server on that port that says it is FerretDB. */
async function ferretdbAnswers(port: number): Promise<boolean> {
  const client = new MongoClient(`mongodb://127.0.0.1:${port}`, { serverSelectionTimeoutMS: 1000, directConnection: true });
  try {
    const info = await client.db('admin').command({ buildInfo: 1 });
    return typeof info.ferretdbVersion === 'string';
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

/** A PostgreSQL database FerretDB can use: its URL, the pool it may open, and whether the server has `idle_session_timeout` (14 and later). */
interface UsablePostgres {
  url: string;
  poolSize: number;
  endsIdleSessions: boolean;
}
type PostgresCheck = ({ ok: true } & UsablePostgres) | { ok: false; reason: string };

/**
 * Connects to the PostgreSQL server at `adminUrl` and makes sure the service's own database exists.
 * Generic plans are turned off in it: FerretDB names the field as a statement parameter
 * (`_jsonb->$1 @> $2`), which only a custom plan can match to an expression index.
 */
async function preparePostgres(adminUrl: string): Promise<PostgresCheck> {
  const server = new URL(adminUrl);
  const where = `PostgreSQL at ${server.host}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
  let poolSize = 0;
  let endsIdleSessions = false;
  admin.on('error', () => {});
  try {
    await admin.connect();
  } catch (error) {
    return { ok: false, reason: `${where} does not answer (${(error as Error).message})` };
  }
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [LOCAL_DATABASE]);
    if (!rowCount) {
      say(`creating the database ${LOCAL_DATABASE} in ${where}`);
      await admin.query(`CREATE DATABASE ${LOCAL_DATABASE}`).catch((error: { code?: string }) => {
        // another process created it in the meantime
        if (error.code !== '42P04') throw error;
      });
    }
    await admin.query(`ALTER DATABASE ${LOCAL_DATABASE} SET plan_cache_mode = force_custom_plan`);
    // Error events carry their JSON (several kB), which PostgreSQL compresses: lz4 costs a fraction of
    // the default pglz's CPU (pglz alone was 13 % of PostgreSQL's time under the bench's error events).
    // A server built without lz4 refuses the value (invalid_parameter_value), and keeps pglz.
    await admin.query(`ALTER DATABASE ${LOCAL_DATABASE} SET default_toast_compression = lz4`).catch((error: { code?: string }) => {
      if (error.code !== '22023') throw error;
    });
    const { rows } = await admin.query<{ max_connections: string; version: string }>(
      "SELECT current_setting('max_connections') AS max_connections, current_setting('server_version_num') AS version",
    );
    // leaving some of a small server's connections for psql and the index module
    poolSize = Math.min(FERRETDB_POOL_SIZE, Math.max(2, Number(rows[0]!.max_connections) - 10));
    endsIdleSessions = Number(rows[0]!.version) >= 140000;
  } catch (error) {
    return { ok: false, reason: `${where} answers but cannot be used (${(error as Error).message}); set LOCAL_POSTGRES_URL to a role that may create databases` };
  } finally {
    await admin.end().catch(() => {});
  }
  server.pathname = `/${LOCAL_DATABASE}`;
  return { ok: true, url: server.toString(), poolSize, endsIdleSessions };
}

async function waitFor(check: () => Promise<boolean>, what: string, logFile: string, child: ChildProcess, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    if (await check()) return;
    if (child.exitCode !== null) throw new LocalServiceError(`${what} exited with code ${child.exitCode}; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new LocalServiceError(`${what} did not start within ${seconds}s; see ${logFile}`);
}

function which(command: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, command);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** An unprivileged user to run a server as (its log file is opened here, so it needs no access to it). */
interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

function startDetached(command: string, args: string[], logFile: string, runAs?: RunAs): ChildProcess {
  const out = openSync(logFile, 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], ...(runAs && { uid: runAs.uid, gid: runAs.gid }) });
  child.unref();
  return child;
}

/** A binary that cannot print its version (a broken or foreign build) is not used. */
function works(binary: string): boolean {
  try {
    execFileSync(binary, ['--version'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    say(`${binary} does not run (--version failed); not using it`);
    return false;
  }
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'inherit'], ...options }).toString();
}

function installRedis(): string {
  if (process.getuid?.() !== 0 || !which('apt-get')) {
    throw new LocalServiceError('redis-server is not installed: install it (Debian: apt-get install redis-server) or set REDIS_URL');
  }
  say('redis-server not found; installing it from Debian packages (apt-get install redis-server)');
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', 'redis-server'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const installed = which('redis-server') ?? (existsSync('/usr/bin/redis-server') ? '/usr/bin/redis-server' : undefined);
  if (!installed) throw new LocalServiceError('apt-get ran but redis-server is still missing; set REDIS_URL');
  return installed;
}

async function ensureRedis(dataDir: string): Promise<string> {
  const url = `redis://127.0.0.1:${LOCAL_REDIS_PORT}`;
  if (await redisAnswers(LOCAL_REDIS_PORT)) {
    say(`reusing Redis already listening on ${url}`);
    return url;
  }
  const binary = which('redis-server') ?? installRedis();
  const dir = join(dataDir, 'redis');
  const logFile = join(dataDir, 'logs', 'redis.log');
  mkdirSync(dir, { recursive: true });
  say(`starting ${binary} on ${url} (data in ${dir}, log in ${logFile})`);
  const child = startDetached(
    binary,
    ['--bind', '127.0.0.1', '--port', String(LOCAL_REDIS_PORT), '--dir', dir, '--appendonly', 'yes', '--maxmemory-policy', 'noeviction'],
    logFile,
  );
  await waitFor(() => redisAnswers(LOCAL_REDIS_PORT), 'Redis', logFile, child);
  return url;
}

const findGo = () => which('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);

/** `go install …@version` needs the proxy's version list, so the pinned module is downloaded and built in place. */
function buildFerretDB(dataDir: string): string {
  const go = findGo();
  if (!go) {
    throw new LocalServiceError('no MongoDB-compatible server: put mongod or ferretdb on PATH, install Go to build FerretDB, or set MONGO_URL');
  }
  const target = join(dataDir, 'bin', 'ferretdb');
  const source = join(dataDir, 'build', 'ferretdb');
  say(`building FerretDB ${FERRETDB_VERSION} with ${go} into ${target} (once; takes a minute or two)`);
  const env = { ...process.env, GOFLAGS: '-mod=mod', GO111MODULE: 'on' };
  const module = JSON.parse(run(go, ['mod', 'download', '-json', `${FERRETDB_MODULE}@${FERRETDB_VERSION}`], { cwd: dataDir, env })) as { Dir?: string };
  if (!module.Dir) throw new LocalServiceError(`go mod download of ${FERRETDB_MODULE}@${FERRETDB_VERSION} returned no directory`);
  rmSync(source, { recursive: true, force: true });
  cpSync(module.Dir, source, { recursive: true });
  chmodSync(source, 0o755);
  run('chmod', ['-R', 'u+w', source]);
  // The release's version stamp is generated by its own build tooling, which the module archive does not carry.
  writeFileSync(join(source, 'build', 'version', 'version.txt'), `${FERRETDB_VERSION}\n`);
  run(go, ['build', '-o', resolve(target), './cmd/ferretdb'], { cwd: source, env });
  rmSync(source, { recursive: true, force: true });
  return target;
}

/**
 * FerretDB's URL for its PostgreSQL: the pool's settings (its default size is 50), the idle timeout
 * its connections start their sessions with (a setting an older server would refuse), and no TLS to a
 * server on loopback unless the URL asks for it. Its driver tries TLS first, and a server with
 * `ssl = on` (Debian's default) then encrypts every statement both ways, a few percent of the
 * machine's CPU under load for nothing on a connection that never leaves it.
 */
function ferretdbPostgresUrl({ url, poolSize, endsIdleSessions }: UsablePostgres): string {
  const parsed = new URL(url);
  parsed.searchParams.set('pool_max_conns', String(poolSize));
  parsed.searchParams.set('pool_max_conn_idle_time', FERRETDB_POOL_IDLE_TIME);
  if (endsIdleSessions) parsed.searchParams.set('idle_session_timeout', FERRETDB_IDLE_SESSION_TIMEOUT);
  if (isLoopbackHost(parsed.hostname) && !parsed.searchParams.has('sslmode')) parsed.searchParams.set('sslmode', 'disable');
  return parsed.toString();
}

/** A FerretDB 1.24 binary that runs: built into DATA_DIR/bin before, on PATH, in ~/go/bin, else built now. */
export function ferretdbBinary(dataDir: string): string {
  const built = join(dataDir, 'bin', 'ferretdb');
  const goBin = join(homedir(), 'go', 'bin', 'ferretdb');
  const candidates = [built, which('ferretdb'), goBin].filter((path): path is string => !!path && existsSync(path));
  return candidates.find(works) ?? buildFerretDB(dataDir);
}

async function startFerretDB(dataDir: string, backend: 'postgresql' | 'sqlite', port: number, postgres?: UsablePostgres): Promise<string> {
  const url = `mongodb://127.0.0.1:${port}`;
  if (await ferretdbAnswers(port)) {
    say(`reusing FerretDB on ${backend} already listening on ${url}`);
    return url;
  }
  const ferretdb = ferretdbBinary(dataDir);
  const dir = join(dataDir, `ferretdb-${backend}`);
  const logFile = join(dataDir, 'logs', `ferretdb-${backend}.log`);
  mkdirSync(dir, { recursive: true });
  const handler = postgres
    ? ['--handler=postgresql', `--postgresql-url=${ferretdbPostgresUrl(postgres)}`]
    : ['--handler=sqlite', `--sqlite-url=file:${resolve(dir)}/`];
  say(`starting FerretDB (${ferretdb}) on ${backend} at ${url} (log in ${logFile})`);
  const child = startDetached(
    ferretdb,
    [...handler, `--listen-addr=127.0.0.1:${port}`, '--telemetry=disable', `--state-dir=${resolve(dir)}`, '--debug-addr=-', '--log-level=warn'],
    logFile,
  );
  await waitFor(() => ferretdbAnswers(port), 'FerretDB', logFile, child);
  return url;
}

async function startMongod(dataDir: string, mongod: string): Promise<string> {
  const url = `mongodb://127.0.0.1:${LOCAL_MONGO_PORT}`;
  const dir = join(dataDir, 'mongo');
  const logFile = join(dataDir, 'logs', 'mongod.log');
  mkdirSync(dir, { recursive: true });
  say(`starting ${mongod} on ${url} (data in ${dir})`);
  const child = startDetached(mongod, ['--bind_ip', '127.0.0.1', '--port', String(LOCAL_MONGO_PORT), '--dbpath', dir], logFile);
  await waitFor(() => mongoAnswers(LOCAL_MONGO_PORT), 'mongod', logFile, child);
  return url;
}

/** A PostgreSQL server's `initdb` and `postgres`, from one directory. */
interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

/**
 * PostgreSQL's server binaries: those of the version a cluster was made with (`version`), else from
 * PATH, Debian's /usr/lib/postgresql/<version>/bin (newest first) or /usr/local/bin.
 */
function postgresBinaries(version?: string): PostgresBinaries | undefined {
  const debian = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql').filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))
    : [];
  const dirs = [
    ...(version ? [`/usr/lib/postgresql/${version}/bin`] : []),
    ...(process.env.PATH ?? '').split(delimiter).filter(Boolean),
    ...debian.map((name) => `/usr/lib/postgresql/${name}/bin`),
    '/usr/local/bin',
  ];
  const dir = dirs.find((candidate) => existsSync(join(candidate, 'initdb')) && existsSync(join(candidate, 'postgres')));
  return dir ? { initdb: join(dir, 'initdb'), postgres: join(dir, 'postgres') } : undefined;
}

const canInstall = () => process.getuid?.() === 0 && !!which('apt-get');

function installPostgres(): PostgresBinaries {
  say('PostgreSQL is not installed; installing it from Debian packages (apt-get install postgresql)');
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', 'postgresql'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const installed = postgresBinaries();
  if (!installed) throw new LocalServiceError('apt-get ran but initdb and postgres are still missing');
  return installed;
}

/**
 * initdb and postgres refuse to run as root: as root, they run as Debian's `postgres` user, which then
 * owns the cluster's directory.
 */
function clusterOwner(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) throw new LocalServiceError('PostgreSQL will not run as root and there is no postgres user to run it as; create one or run Sluice as another user');
  return { name: 'postgres', uid: Number(entry[2]), gid: Number(entry[3]) };
}

async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error))]);
  } catch {
    return false;
  }
  server.close();
  await once(server, 'close');
  return true;
}

async function firstFreePort(from: number): Promise<number> {
  for (let port = from; port < from + 100; port++) if (await portIsFree(port)) return port;
  throw new LocalServiceError(`no free loopback port in ${from}-${from + 99}`);
}

async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The ports of our own cluster and of the FerretDB on it, recorded beside the cluster when it is made. */
interface OwnPorts {
  postgres: number;
  ferretdb: number;
}

/**
 * Settings for a PostgreSQL that shares a laptop with the service, given at each start so a newer
 * release's settings apply to an older cluster.
 */
function ownPostgresSettings(port: number): string[] {
  const settings = {
    port,
    // trust auth (initdb below) is safe only because nothing but loopback can connect
    listen_addresses: '127.0.0.1',
    // TCP only: the default socket directory (/var/run/postgresql) need not be writable by us
    unix_socket_directories: '',
    // FerretDB's pool (FERRETDB_POOL_SIZE), the index module and psql, and room for the second FerretDB
    // (pool of 32) and the PostgreSQL clients of the test suite; an unused slot costs a few KiB of shared
    // memory, a used one a backend
    max_connections: 128,
    // FerretDB's reads are sequential scans, which use a small ring rather than the cache; the OS page
    // cache holds the rest (PostgreSQL's default is 128MB)
    shared_buffers: '32MB',
    // FerretDB's statements are short: compiling them would cost more time and memory than it saves
    jit: 'off',
    // no replicas and no archive: minimal WAL writes less, and no WAL sender or replication launcher runs
    wal_level: 'minimal',
    max_wal_senders: 0,
    max_logical_replication_workers: 0,
    // fsync and synchronous_commit stay on (their defaults): a batch is acknowledged to the queue only
    // once stored, so a commit lost in a crash would be telemetry lost
  };
  return Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
}

/**
 * Our own PostgreSQL cluster in DATA_DIR/postgres: made with initdb the first time, started in the
 * background when it does not answer on its recorded port, and left running like the other servers.
 */
async function ownPostgres(dataDir: string, binaries: PostgresBinaries): Promise<{ check: PostgresCheck; ferretdbPort: number; where: string }> {
  const dir = join(dataDir, 'postgres');
  const logFile = join(dataDir, 'logs', 'postgres.log');
  const record = join(dataDir, 'postgres-ports.json');
  const runAs = clusterOwner();
  let ports = existsSync(record) ? (JSON.parse(readFileSync(record, 'utf8')) as OwnPorts) : undefined;
  if (!ports) {
    ports = { postgres: await firstFreePort(OWN_POSTGRES_FIRST_PORT), ferretdb: await firstFreePort(FERRETDB_PORTS.ownPostgresql) };
    writeFileSync(record, `${JSON.stringify(ports)}\n`);
  }
  const adminUrl = `postgres://${OWN_POSTGRES_ROLE}@127.0.0.1:${ports.postgres}/postgres`;
  const where = `our own PostgreSQL in ${dir} on 127.0.0.1:${ports.postgres}`;
  if (await postgresAnswers(adminUrl)) {
    say(`reusing ${where}`);
  } else {
    if (!existsSync(join(dir, 'PG_VERSION'))) {
      // only a directory made here is removed again when initdb fails
      const made = !existsSync(dir);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      if (runAs) chownSync(dir, runAs.uid, runAs.gid);
      say(`creating ${where} with ${binaries.initdb}${runAs ? ` as the ${runAs.name} user` : ''} (log in ${logFile})`);
      const out = openSync(logFile, 'a');
      try {
        // C locale and UTF-8: what FerretDB requires; trust auth for the role we own (listening on loopback only)
        const args = ['-D', dir, '-U', OWN_POSTGRES_ROLE, '--auth=trust', '--encoding=UTF8', '--no-locale'];
        execFileSync(binaries.initdb, args, { cwd: dir, stdio: ['ignore', out, out], ...(runAs && { uid: runAs.uid, gid: runAs.gid }) });
      } catch {
        if (made) rmSync(dir, { recursive: true, force: true });
        const reach = runAs ? ` (it runs as ${runAs.name}, who must be able to enter every directory above ${dir})` : '';
        throw new LocalServiceError(`initdb failed${reach}; see ${logFile}`);
      }
    }
    say(`starting ${where} (${binaries.postgres}, log in ${logFile})`);
    const child = startDetached(binaries.postgres, ['-D', dir, ...ownPostgresSettings(ports.postgres)], logFile, runAs);
    await waitFor(() => postgresAnswers(adminUrl), 'PostgreSQL', logFile, child);
  }
  return { check: await preparePostgres(adminUrl), ferretdbPort: ports.ferretdb, where };
}

interface Store {
  url: string;
  ferretdbPostgresUrl?: string;
  /** Which store it is, for the start-up log. */
  what: string;
}

async function ferretdbOnOwnPostgres(dataDir: string, binaries: PostgresBinaries): Promise<Store> {
  const own = await ownPostgres(dataDir, binaries);
  if (!own.check.ok) throw new LocalServiceError(own.check.reason);
  const url = await startFerretDB(dataDir, 'postgresql', own.ferretdbPort, own.check);
  return { url, ferretdbPostgresUrl: own.check.url, what: `FerretDB on ${own.where}` };
}

/**
 * The local store, in order of preference (LOCAL_STORE=auto): FerretDB on PostgreSQL, the one at
 * LOCAL_POSTGRES_URL when it answers, else a cluster of our own when the server binaries are installed;
 * else a MongoDB already on 27017 or a `mongod` on PATH; else our own PostgreSQL cluster after
 * installing PostgreSQL (as root on Debian); else FerretDB on SQLite, which needs nothing but itself.
 * `postgresql` and `sqlite` insist on that backend; LOCAL_POSTGRES_URL=own skips the shared server.
 */
async function ensureStore(dataDir: string, choice: LocalStoreChoice, adminUrl: string): Promise<Store> {
  if (choice === 'sqlite') return { url: await startFerretDB(dataDir, 'sqlite', FERRETDB_PORTS.sqlite), what: 'FerretDB on SQLite (LOCAL_STORE=sqlite)' };
  const insist = (reason: string) => {
    if (choice === 'postgresql') throw new LocalServiceError(`LOCAL_STORE=postgresql, but ${reason}`);
    say(`${reason}; not using PostgreSQL`);
  };
  if (adminUrl !== 'own') {
    const shared = await preparePostgres(adminUrl);
    if (shared.ok) return { url: await startFerretDB(dataDir, 'postgresql', FERRETDB_PORTS.postgresql, shared), ferretdbPostgresUrl: shared.url, what: `FerretDB on PostgreSQL at ${new URL(adminUrl).host}` };
    say(`${shared.reason}; trying a PostgreSQL of our own`);
  }
  const ownCluster = async (binaries: PostgresBinaries) => {
    try {
      return await ferretdbOnOwnPostgres(dataDir, binaries);
    } catch (error) {
      if (!(error instanceof LocalServiceError)) throw error;
      insist(error.message);
      return undefined;
    }
  };
  const version = existsSync(join(dataDir, 'postgres', 'PG_VERSION')) ? readFileSync(join(dataDir, 'postgres', 'PG_VERSION'), 'utf8').trim() : undefined;
  const binaries = postgresBinaries(version);
  const installable = !binaries && canInstall();
  if (binaries) {
    const store = await ownCluster(binaries);
    if (store) return store;
  } else if (!installable) {
    insist('PostgreSQL\'s server (initdb, postgres) is not installed');
  }
  if (choice === 'auto' && (await mongoAnswers(LOCAL_MONGO_PORT))) {
    say(`reusing the MongoDB server already listening on 127.0.0.1:${LOCAL_MONGO_PORT}`);
    return { url: `mongodb://127.0.0.1:${LOCAL_MONGO_PORT}`, what: `MongoDB on 127.0.0.1:${LOCAL_MONGO_PORT}` };
  }
  const mongod = choice === 'auto' ? which('mongod') : undefined;
  if (mongod) return { url: await startMongod(dataDir, mongod), what: `MongoDB (${mongod})` };
  if (installable) {
    let installed: PostgresBinaries | undefined;
    try {
      installed = installPostgres();
    } catch (error) {
      insist(`PostgreSQL could not be installed (${(error as Error).message})`);
    }
    const store = installed && (await ownCluster(installed));
    if (store) return store;
  }
  say(
    'WARNING: falling back to FerretDB on SQLite, where every read scans its whole collection: fine for a quick look, ' +
      'slow past tens of thousands of records (a batch of spans can take a minute). For the fast store, install ' +
      "PostgreSQL's server (Debian: apt-get install postgresql; macOS: brew install postgresql) and Sluice runs its own, " +
      'or set LOCAL_POSTGRES_URL to a PostgreSQL role that may create databases.',
  );
  return { url: await startFerretDB(dataDir, 'sqlite', FERRETDB_PORTS.sqlite), what: 'FerretDB on SQLite' };
}

/** Resolves the URLs to use: configured ones as given, missing ones from local servers (reused or started). */
export async function ensureLocalServices(
  config: Pick<Config, 'DATA_DIR' | 'MONGO_URL' | 'REDIS_URL' | 'LOCAL_STORE' | 'LOCAL_POSTGRES_URL' | 'FERRETDB_POSTGRES_URL'>,
): Promise<LocalServices> {
  const dataDir = resolve(config.DATA_DIR);
  if (!config.REDIS_URL || !config.MONGO_URL) mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const redisUrl = config.REDIS_URL ?? (await ensureRedis(dataDir));
  if (config.MONGO_URL) return { mongoUrl: config.MONGO_URL, redisUrl, ...(config.FERRETDB_POSTGRES_URL && { ferretdbPostgresUrl: config.FERRETDB_POSTGRES_URL }) };
  const store = await ensureStore(dataDir, config.LOCAL_STORE, config.LOCAL_POSTGRES_URL);
  say(`the store: ${store.what}, at ${store.url}`);
  return { mongoUrl: `${store.url}/${LOCAL_DATABASE}`, redisUrl, ...(store.ferretdbPostgresUrl && { ferretdbPostgresUrl: store.ferretdbPostgresUrl }) };
}

/** Anything answering HTTP there; whether it is an S3 server that takes the local credentials is checked next. */
async function httpAnswers(port: number): Promise<boolean> {
  try {
    const reply = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(1000) });
    await reply.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}

/** versitygw has no replace directives, so a plain `go install` of the pinned version builds it. */
function buildVersitygw(dataDir: string): string {
  const go = findGo();
  if (!go) throw new LocalServiceError('no S3-compatible server for the s3 blob tests: put versitygw on PATH or install Go to build it');
  const bin = resolve(dataDir, 'bin');
  say(`building versitygw ${VERSITYGW_VERSION} with ${go} into ${bin} (once; takes about a minute)`);
  run(go, ['install', `${VERSITYGW_MODULE}/cmd/versitygw@${VERSITYGW_VERSION}`], { cwd: dataDir, env: { ...process.env, GOBIN: bin, GO111MODULE: 'on' } });
  return join(bin, 'versitygw');
}

/**
 * The S3-compatible server the `s3` blob driver's tests run against: versitygw on 127.0.0.1:27020 over
 * DATA_DIR/s3 (one folder per bucket), reused when already listening, else built once with Go and
 * started in the background. The bucket is created if missing. `npm start` never calls this: with
 * BLOB_STORE=s3 the service uses the configured endpoint.
 */
export async function ensureLocalS3(config: Pick<Config, 'DATA_DIR'>): Promise<LocalS3> {
  const dataDir = resolve(config.DATA_DIR);
  const endpoint = `http://127.0.0.1:${LOCAL_S3_PORT}`;
  const local: LocalS3 = { endpoint, region: 'us-east-1', bucket: LOCAL_S3_BUCKET, ...LOCAL_S3_CREDENTIALS };
  const location: S3Location = { ...local, forcePathStyle: true };
  if (await httpAnswers(LOCAL_S3_PORT)) {
    say(`reusing the S3 server already listening on ${endpoint}`);
  } else {
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    const candidates = [join(dataDir, 'bin', 'versitygw'), which('versitygw'), join(homedir(), 'go', 'bin', 'versitygw')];
    const versitygw = candidates.filter((path): path is string => !!path && existsSync(path)).find(works) ?? buildVersitygw(dataDir);
    const dir = join(dataDir, 's3');
    const logFile = join(dataDir, 'logs', 'versitygw.log');
    mkdirSync(dir, { recursive: true });
    say(`starting versitygw (${versitygw}) on ${endpoint} (data in ${dir}, log in ${logFile})`);
    const child = startDetached(
      versitygw,
      ['--access', local.accessKeyId, '--secret', local.secretAccessKey, '--port', `127.0.0.1:${LOCAL_S3_PORT}`, '--quiet', 'posix', resolve(dir)],
      logFile,
    );
    await waitFor(() => httpAnswers(LOCAL_S3_PORT), 'versitygw', logFile, child);
  }
  try {
    await ensureS3Bucket(location);
  } catch (error) {
    throw new LocalServiceError(`the server on ${endpoint} does not serve the local bucket with the local credentials (${(error as Error).message}); stop whatever listens there`);
  }
  return local;
}
