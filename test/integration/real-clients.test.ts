/**
 * Stock clients in other languages, pointed at the service as a new user would point them: Debian's
 * python3-sentry-sdk, sentry-go (built from the Go module proxy) and OpenTelemetry's telemetrygen
 * (installed from the Go module proxy). Each runs as its own process against the harness's ingest; the
 * assertions read what a user would see through the JSON API.
 *
 * The clients are prepared once, outside the timed tests: the apt package is installed when missing,
 * and the Go binaries are cached under .data/real-clients/ keyed by their sources and versions. Nothing
 * is skipped: a missing toolchain fails with what to install.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

const exec = promisify(execFile);
const FIXTURES = resolve('test/fixtures/real-clients');
const CACHE = resolve('.data/real-clients');
/** Debian's interpreter: the apt package installs sentry_sdk for it, not for a pyenv or venv python3 on PATH. */
const DEBIAN_PYTHON = '/usr/bin/python3';
const TELEMETRYGEN = 'github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen';
/** The newest release at the time of writing; it needs Go 1.25 or later. */
const TELEMETRYGEN_VERSION = 'v0.161.0';

async function tool(command: string, args: string[], what: string, options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}) {
  try {
    return await exec(command, args, { timeout: 10 * 60_000, maxBuffer: 16 * 1024 * 1024, ...options, env: { ...process.env, ...options.env } });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    if (failure.code === 'ENOENT') throw new Error(`${what}: ${command} is not installed`);
    throw new Error(`${what} failed: ${failure.message}\n${failure.stderr ?? ''}`);
  }
}

/** The Go toolchain on PATH or in its default install place; these tests need it (no skipping). */
async function goBinary(): Promise<string> {
  for (const go of ['go', '/usr/local/go/bin/go']) {
    try {
      await exec(go, ['version']);
      return go;
    } catch {
      // try the next place
    }
  }
  throw new Error('the Go toolchain is required to build sentry-go and telemetrygen for these tests: install Go 1.25 or later (https://go.dev/dl/)');
}

/** Debian's python3-sentry-sdk, installed with apt-get when missing (as the browser tests install chromium). */
async function ensurePythonSdk(): Promise<void> {
  const importable = () => exec(DEBIAN_PYTHON, ['-c', 'import sentry_sdk']).then(() => true, () => false);
  if (!existsSync(DEBIAN_PYTHON)) throw new Error(`${DEBIAN_PYTHON} is missing: install Debian's python3 and python3-sentry-sdk`);
  if (await importable()) return;
  if (process.getuid?.() !== 0) throw new Error('python3-sentry-sdk is not installed: run `apt-get install -y python3-sentry-sdk` as root');
  process.stderr.write("installing Debian's python3-sentry-sdk for the real-client tests (apt-get)\n");
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  await tool('apt-get', ['update', '-qq'], 'apt-get update', { env });
  await tool('apt-get', ['install', '-y', '-qq', 'python3-sentry-sdk'], 'apt-get install python3-sentry-sdk', { env });
  if (!(await importable())) throw new Error('apt-get installed python3-sentry-sdk but `import sentry_sdk` still fails');
}

/** The fixture Go program, built once per version of its sources; later runs reuse the binary. */
async function buildGoErrors(go: string): Promise<string> {
  const dir = join(FIXTURES, 'go-errors');
  const files = ['go.mod', 'main.go'];
  const flags = ['build', '-o'];
  const hash = createHash('sha256').update(flags.join(' '));
  for (const file of files) hash.update(file).update(await readFile(join(dir, file)));
  const binary = join(CACHE, `go-errors-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(binary)) return binary;
  // built in a copy: resolving the module writes go.sum, which stays out of the repository
  const work = `${binary}.src`;
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  for (const file of files) await copyFile(join(dir, file), join(work, file));
  await tool(go, [...flags, `${binary}.tmp`, '.'], 'go build of the sentry-go fixture', { cwd: work, env: { GOFLAGS: '-mod=mod', GO111MODULE: 'on', CGO_ENABLED: '0' } });
  await rename(`${binary}.tmp`, binary);
  await rm(work, { recursive: true, force: true });
  return binary;
}

async function installTelemetrygen(go: string): Promise<string> {
  const bin = join(CACHE, `telemetrygen-${TELEMETRYGEN_VERSION}`);
  const binary = join(bin, 'telemetrygen');
  if (existsSync(binary)) return binary;
  await mkdir(bin, { recursive: true });
  await tool(go, ['install', `${TELEMETRYGEN}@${TELEMETRYGEN_VERSION}`], `go install telemetrygen ${TELEMETRYGEN_VERSION}`, {
    cwd: CACHE,
    env: { GOBIN: bin, GOFLAGS: '-mod=mod', GO111MODULE: 'on', CGO_ENABLED: '0' },
  });
  return binary;
}

/** The JSON object a fixture client prints on its last line. */
const lastLine = (stdout: string) => JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, string>;

let h: Harness;
let owner: Account;
let goErrors: string;
let telemetrygen: string;
useHarness((started) => (h = started), {}, { workers: true });

beforeAll(async () => {
  await mkdir(CACHE, { recursive: true });
  const go = await goBinary();
  // the first run downloads and builds (a minute or more); later runs find the binaries cached
  [goErrors, telemetrygen] = await Promise.all([buildGoErrors(go), installTelemetrygen(go), ensurePythonSdk()]);
  owner = await signUp(h);
}, 15 * 60_000);

describe("Debian's python3-sentry-sdk", () => {
  let project: ProjectWithDsn;
  let sent: Record<string, string>;

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { stdout } = await tool(DEBIAN_PYTHON, [join(FIXTURES, 'python', 'orders.py')], 'the Python sentry_sdk app', { env: { SENTRY_DSN: project.dsn }, timeout: 30_000 });
    sent = lastLine(stdout);
  }, 60_000);

  test('a captured exception becomes an issue with its Python frames', async () => {
    const issue = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues?project=${project.id}`);
      return reply.body.data?.find((row: { type: string }) => row.type === 'ValueError');
    }, 'the ValueError issue');
    expect(issue).toMatchObject({ title: 'ValueError: card declined for order 42', platform: 'python', count: 1, environments: ['production'], releases: ['orders@1.4.0'] });
    const detail = await owner.client.get(`/v1/issues/${issue.id}`);
    expect(detail.body.latest_event.event_id).toBe(sent.event_id);
    const frames = detail.body.latest_event.exception.at(-1).frames;
    expect(frames.at(-1)).toMatchObject({ function: 'charge', filename: expect.stringMatching(/orders\.py$/), context_line: expect.stringContaining('raise ValueError') });
  });

  test('database spans with %s placeholders, IN lists of 3 and of 2, are one normalised statement', async () => {
    const statements = await eventually(async () => {
      const reply = await owner.client.get(`/v1/database/slow-queries?project=${project.id}`);
      const calls = (reply.body.data ?? []).reduce((sum: number, row: { calls: number }) => sum + row.calls, 0);
      return calls >= 2 ? reply.body.data : undefined;
    }, 'both database calls counted');
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatchObject({ statement: 'select * from orders where id in (?)', system: 'postgresql', calls: 2 });
  });
});

describe('sentry-go', () => {
  test('a captured error becomes an issue with the Go frames of the call that failed', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { stdout } = await tool(goErrors, [], 'the sentry-go app', { env: { SENTRY_DSN: project.dsn }, timeout: 30_000 });
    const sent = lastLine(stdout);
    const issue = await eventually(async () => (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data?.[0], 'the Go issue');
    expect(issue).toMatchObject({ platform: 'go', count: 1, environments: ['production'], releases: ['billing@2.0.0'] });
    expect(issue.title).toContain('load invoice 7: invoice not found');
    const detail = await owner.client.get(`/v1/issues/${issue.id}`);
    expect(detail.body.latest_event.event_id).toBe(sent.event_id);
    // the stack where CaptureException was called, crashing frame last, with the build's absolute paths
    const frames = detail.body.latest_event.exception.at(-1).frames;
    expect(frames.slice(-2)).toEqual([
      expect.objectContaining({ function: 'main', module: 'main', lineno: expect.any(Number), in_app: true }),
      expect.objectContaining({ function: 'handleRequest', module: 'main', lineno: expect.any(Number), in_app: true }),
    ]);
    expect(frames.at(-1).abs_path).toMatch(/\/main\.go$/);
  });
});

describe('telemetrygen over OTLP/HTTP', () => {
  let project: ProjectWithDsn;
  const run = (signal: string, service: string, flags: string[]) =>
    tool(telemetrygen, [signal, '--otlp-http', '--otlp-insecure', '--otlp-endpoint', new URL(h.ingest.baseUrl).host, '--otlp-header', `Authorization="Bearer ${project.publicKey}"`, '--service', service, '--rate', '0', ...flags], `telemetrygen ${signal}`, {
      timeout: 30_000,
    });

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
  });

  test('traces: each generated trace is stored with its parent and child span', async () => {
    const service = `tg-traces-${randomBytes(3).toString('hex')}`;
    await run('traces', service, ['--traces', '5', '--child-spans', '1']);
    const traces = await eventually(async () => {
      const reply = await owner.client.get(`/v1/traces?project=${project.id}&service=${service}`);
      const rows = reply.body.data ?? [];
      return rows.length === 5 && rows.every((row: { span_count: number }) => row.span_count === 2) ? rows : undefined;
    }, 'five traces of two spans');
    for (const trace of traces) expect(trace).toMatchObject({ root_service: service, root_name: 'lets-go', services: [service], error_count: 0 });
  });

  test('metrics: a cumulative Sum of 20 points in one request keeps every point', async () => {
    // --rate 0 and the default batching: 20 points microseconds apart, exported in one request; the
    // counter's totals are 0, 1, …, 19 from one start time, so the deltas are 0 and then 1 nineteen times
    const service = `tg-metrics-${randomBytes(3).toString('hex')}`;
    const name = `tg.jobs.${randomBytes(3).toString('hex')}`;
    await run('metrics', service, ['--metrics', '20', '--metric-type', 'Sum', '--aggregation-temporality', 'cumulative', '--otlp-metric-name', name]);
    const total = async (aggregation: string) => {
      const reply = await owner.client.get(`/v1/metrics/series?project=${project.id}&name=${name}&service=${service}&aggregation=${aggregation}`);
      return (reply.body.points ?? []).reduce((sum: number, point: { value: number | null }) => sum + (point.value ?? 0), 0) as number;
    };
    // the name is registered after the request's points are stored and counted
    await eventually(async () => {
      const reply = await owner.client.get(`/v1/metrics/names?project=${project.id}`);
      return reply.body.data?.find((metric: { name: string }) => metric.name === name);
    }, 'the counter stored');
    expect(await total('count')).toBe(20);
    expect(await total('sum')).toBe(19);
  });
});
