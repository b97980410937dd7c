/**
 * The embedded default: with no MONGO_URL/REDIS_URL, `npm start` and `npm test` reuse a Redis and a
 * MongoDB-compatible server already listening on loopback, or start them with their data under DATA_DIR.
 * Started servers are left running in the background (their logs are in DATA_DIR/logs), so the next
 * start reuses them. Anything that cannot be had fails with a message that says what to do.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, chmodSync, existsSync, mkdirSync, openSync, writeFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { mongo } from 'mongoose';
import pg from 'pg';
import { ensureS3Bucket, type S3Location } from './clients/blob.js';
import type { Config, LocalStoreChoice } from './config.js';

const { MongoClient } = mongo;

export const LOCAL_REDIS_PORT = 6379;
/** Where a MongoDB of the user's own is reused, or a `mongod` on PATH is started. */
export const LOCAL_MONGO_PORT = 27017;
/** Each FerretDB backend has a port of its own, so a server found listening is known to be the backend asked for. */
const FERRETDB_PORTS = { postgresql: 27018, sqlite: 27019 } as const;
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

type PostgresCheck = { ok: true; url: string; poolSize: number } | { ok: false; reason: string };

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
    const { rows } = await admin.query<{ max_connections: string }>('SHOW max_connections');
    // FerretDB's pool takes most of the server's connections, leaving some for psql and the index module.
    poolSize = Math.max(10, Number(rows[0]!.max_connections) - 20);
  } catch (error) {
    return { ok: false, reason: `${where} answers but cannot be used (${(error as Error).message}); set LOCAL_POSTGRES_URL to a role that may create databases` };
  } finally {
    await admin.end().catch(() => {});
  }
  server.pathname = `/${LOCAL_DATABASE}`;
  return { ok: true, url: server.toString(), poolSize };
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

function startDetached(command: string, args: string[], logFile: string): ChildProcess {
  const out = openSync(logFile, 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out] });
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

/** FerretDB reads its PostgreSQL pool's size from the URL (its default is 50). */
function withPoolSize(url: string, poolSize: number): string {
  const parsed = new URL(url);
  parsed.searchParams.set('pool_max_conns', String(poolSize));
  return parsed.toString();
}

/** A FerretDB 1.24 binary that runs: built into DATA_DIR/bin before, on PATH, in ~/go/bin, else built now. */
export function ferretdbBinary(dataDir: string): string {
  const built = join(dataDir, 'bin', 'ferretdb');
  const goBin = join(homedir(), 'go', 'bin', 'ferretdb');
  const candidates = [built, which('ferretdb'), goBin].filter((path): path is string => !!path && existsSync(path));
  return candidates.find(works) ?? buildFerretDB(dataDir);
}

async function startFerretDB(dataDir: string, backend: 'postgresql' | 'sqlite', postgres?: { url: string; poolSize: number }): Promise<string> {
  const port = FERRETDB_PORTS[backend];
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
    ? ['--handler=postgresql', `--postgresql-url=${withPoolSize(postgres.url, postgres.poolSize)}`]
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

/**
 * The local store, in order of preference (LOCAL_STORE=auto): FerretDB on PostgreSQL when a PostgreSQL
 * server answers at LOCAL_POSTGRES_URL; else a MongoDB already on 27017 or a `mongod` on PATH; else
 * FerretDB on SQLite, which needs nothing but itself. `postgresql` and `sqlite` insist on that backend.
 */
async function ensureStore(dataDir: string, choice: LocalStoreChoice, adminUrl: string): Promise<{ url: string; ferretdbPostgresUrl?: string }> {
  if (choice !== 'sqlite') {
    const postgres = await preparePostgres(adminUrl);
    if (postgres.ok) return { url: await startFerretDB(dataDir, 'postgresql', postgres), ferretdbPostgresUrl: postgres.url };
    if (choice === 'postgresql') throw new LocalServiceError(`LOCAL_STORE=postgresql, but ${postgres.reason}`);
    say(`${postgres.reason}; not using PostgreSQL`);
    if (await mongoAnswers(LOCAL_MONGO_PORT)) {
      say(`reusing the MongoDB server already listening on 127.0.0.1:${LOCAL_MONGO_PORT}`);
      return { url: `mongodb://127.0.0.1:${LOCAL_MONGO_PORT}` };
    }
    const mongod = which('mongod');
    if (mongod) return { url: await startMongod(dataDir, mongod) };
  }
  return { url: await startFerretDB(dataDir, 'sqlite') };
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
