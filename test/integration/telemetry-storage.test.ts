import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Types } from 'mongoose';
import { createBlobStore, type BlobStore } from '../../src/shared/clients/blob.js';
import { loadConfig } from '../../src/shared/config.js';
import { CronCheck, CronPing } from '../../src/shared/features/cron/model.js';
import { ingestSdkCheckIns } from '../../src/shared/features/cron/service.js';
import { QueryRollup } from '../../src/shared/features/database/model.js';
import { EndpointRollup } from '../../src/shared/features/endpoints/model.js';
import { ErrorEvent, hourOfKey, Issue } from '../../src/shared/features/issues/model.js';
import { ingestErrorEvents } from '../../src/shared/features/issues/store.js';
import { Log, LogPattern } from '../../src/shared/features/logs/model.js';
import { ingestLogs } from '../../src/shared/features/logs/store.js';
import { cleanup } from '../../src/shared/features/maintenance/service.js';
import { MetricName, MetricPoint, MetricSeries } from '../../src/shared/features/metrics/model.js';
import { ingestMetricPoints } from '../../src/shared/features/metrics/store.js';
import { ReleaseHealth } from '../../src/shared/features/releases/model.js';
import { ingestSessions } from '../../src/shared/features/releases/service.js';
import { Replay, ReplaySegment } from '../../src/shared/features/replays/model.js';
import { ingestReplayEvents, ingestReplayRecordings } from '../../src/shared/features/replays/service.js';
import { SpanRollup } from '../../src/shared/features/services/model.js';
import { Span, Trace } from '../../src/shared/features/traces/model.js';
import { ingestSpans } from '../../src/shared/features/traces/store.js';
import { Usage } from '../../src/shared/features/usage/model.js';
import { countUsage } from '../../src/shared/features/usage/service.js';
import type {
  CheckInRecord,
  LogRecord,
  MetricPoint as MetricPointRecord,
  ReplayEventRecord,
  ReplayRecordingRecord,
  SessionRecord,
  SpanRecord,
  Stamped,
} from '../../src/shared/telemetry/records.js';
import { createProject, signUp, type Account } from '../support/factories/accounts.js';
import { hex } from '../support/factories/telemetry.js';
import { dropTestDatabase, type Harness, startHarness } from '../support/harness.js';

const DAY_MS = 86_400_000;
const NOW = Date.now();

let h: Harness;
let owner: Account;
let blobDir: string;
let blobs: BlobStore;
beforeAll(async () => {
  h = await startHarness();
  owner = await signUp(h);
  blobDir = await mkdtemp(join(tmpdir(), 'sluice-blobs-'));
  blobs = createBlobStore(loadConfig({ BLOB_DIR: blobDir }));
});
afterAll(async () => {
  await h.close();
  await dropTestDatabase();
  await rm(blobDir, { recursive: true, force: true });
});

/** A fresh project of `account`, and a way to stamp records with it. */
async function projectOf(account: Account = owner) {
  const project = await createProject(account);
  return {
    account,
    id: project.id,
    objectId: new Types.ObjectId(project.id),
    stamp: <T>(record: T): Stamped<T> => ({ orgId: account.organization.id, projectId: project.id, record }),
  };
}

function span(overrides: Partial<SpanRecord> = {}): SpanRecord {
  const startMs = overrides.startMs ?? NOW;
  return {
    traceId: hex(16),
    spanId: hex(8),
    parentSpanId: null,
    name: 'GET /cart',
    kind: 'server',
    service: 'shop',
    startMs,
    endMs: startMs + 120,
    durationMs: 120,
    status: 'ok',
    attributes: { 'http.route': '/cart', 'http.response.status_code': 200 },
    events: [],
    links: [],
    http: { method: 'GET', route: '/cart', statusCode: 200 },
    isSegment: true,
    category: 'http',
    source: 'otlp',
    ...overrides,
  };
}

const log = (body: string, overrides: Partial<LogRecord> = {}): LogRecord => ({
  timeMs: NOW,
  severityNumber: 9,
  level: 'info',
  body,
  attributes: { 'code.function': 'checkout' },
  service: 'shop',
  source: 'otlp',
  ...overrides,
});

const counter = (value: number, timeMs: number, overrides: Partial<MetricPointRecord> = {}): MetricPointRecord => ({
  name: 'http.server.requests',
  unit: '{request}',
  type: 'sum',
  temporality: 'cumulative',
  isMonotonic: true,
  timeMs,
  startTimeMs: NOW - DAY_MS,
  value,
  attributes: { 'http.route': '/cart' },
  service: 'shop',
  source: 'otlp',
  ...overrides,
});

const session = (overrides: Partial<SessionRecord> = {}): SessionRecord => ({
  release: 'shop@1.0.0',
  environment: 'production',
  startedMs: NOW,
  started: 1,
  exited: 1,
  errored: 0,
  crashed: 0,
  abnormal: 0,
  ...overrides,
});

const replayEvent = (replayId: string, segmentId: number, overrides: Partial<ReplayEventRecord> = {}): ReplayEventRecord => ({
  replayId,
  segmentId,
  replayType: 'session',
  timeMs: NOW + segmentId * 5000,
  urls: [],
  traceIds: [],
  errorIds: [],
  ...overrides,
});

const recording = (replayId: string, segmentId: number, bytes: Buffer, timeMs = NOW): ReplayRecordingRecord => ({
  replayId,
  segmentId,
  payloadBase64: bytes.toString('base64'),
  timeMs,
});

describe('spans and trace summaries', () => {
  test('spans are stored with typed fields and dotted attributes; the summary covers the whole trace', async () => {
    const project = await projectOf();
    const root = span({ events: [{ name: 'exception', timeMs: NOW + 10, attributes: { 'exception.type': 'TypeError' } }] });
    const child = span({ traceId: root.traceId, parentSpanId: root.spanId, name: 'SELECT cart', kind: 'client', service: 'db-proxy', startMs: NOW - 5, endMs: NOW + 300, durationMs: 305, status: 'error', category: 'db', isSegment: false, http: undefined, db: { system: 'postgresql', operation: 'SELECT' }, links: [{ traceId: hex(16), spanId: hex(8), attributes: { 'link.kind': 'follows' } }] });
    await ingestSpans([project.stamp(child), project.stamp(root)]);

    const stored = await Span.findOne({ projectId: project.objectId, spanId: child.spanId }).lean();
    expect(stored).toMatchObject({
      orgId: new Types.ObjectId(owner.organization.id),
      traceId: root.traceId,
      parentSpanId: root.spanId,
      startAt: new Date(NOW - 5),
      endAt: new Date(NOW + 300),
      durationMs: 305,
      status: 'error',
      category: 'db',
      db: { system: 'postgresql', operation: 'SELECT' },
      http: null,
      attributes: [{ key: 'http.response.status_code', value: 200 }, { key: 'http.route', value: '/cart' }],
      links: [{ attributes: [{ key: 'link.kind', value: 'follows' }] }],
    });
    const storedRoot = await Span.findOne({ projectId: project.objectId, spanId: root.spanId }).lean();
    expect(storedRoot?.events).toEqual([{ name: 'exception', time: new Date(NOW + 10), attributes: [{ key: 'exception.type', value: 'TypeError' }] }]);

    const trace = await Trace.findOne({ projectId: project.objectId, traceId: root.traceId }).lean();
    expect(trace).toMatchObject({ startAt: new Date(NOW - 5), endAt: new Date(NOW + 300), spanCount: 2, errorCount: 1, rootName: 'GET /cart', rootService: 'shop' });
    expect([...trace!.services].sort()).toEqual(['db-proxy', 'shop']);
  });

  test('the same batch twice stores and counts each span once; only new spans of a mixed batch are counted', async () => {
    const project = await projectOf();
    const root = span();
    const children = [1, 2].map((n) => span({ traceId: root.traceId, parentSpanId: root.spanId, name: `step ${n}`, startMs: NOW + n }));
    const batch = [root, ...children].map(project.stamp);
    await ingestSpans(batch);
    await ingestSpans(batch);
    expect(await Span.countDocuments({ projectId: project.objectId })).toBe(3);
    expect(await Trace.findOne({ projectId: project.objectId }).lean()).toMatchObject({ spanCount: 3, errorCount: 0 });

    const late = span({ traceId: root.traceId, parentSpanId: root.spanId, name: 'late', status: 'error', startMs: NOW + 5000, endMs: NOW + 6000 });
    await ingestSpans([project.stamp(children[0]!), project.stamp(late)]);
    expect(await Trace.findOne({ projectId: project.objectId }).lean()).toMatchObject({ spanCount: 4, errorCount: 1, endAt: new Date(NOW + 6000), rootName: 'GET /cart' });
  });

  test('a root arriving after its children names the trace then', async () => {
    const project = await projectOf();
    const root = span({ name: 'POST /checkout' });
    await ingestSpans([project.stamp(span({ traceId: root.traceId, parentSpanId: root.spanId, name: 'child' }))]);
    expect(await Trace.findOne({ projectId: project.objectId }).lean()).toMatchObject({ spanCount: 1 });
    expect((await Trace.findOne({ projectId: project.objectId }).lean())?.rootName).toBeUndefined();
    await ingestSpans([project.stamp(root)]);
    expect(await Trace.findOne({ projectId: project.objectId }).lean()).toMatchObject({ spanCount: 2, rootName: 'POST /checkout' });
  });

  test('batches bringing the first spans of one trace at once make one summary that counts them all', async () => {
    const project = await projectOf();
    const root = span({ name: 'GET /race' });
    const batches = [[root], ...[1, 2, 3, 4, 5].map((n) => [span({ traceId: root.traceId, parentSpanId: root.spanId, name: `step ${n}`, status: n === 3 ? 'error' : 'ok', startMs: NOW + n, endMs: NOW + 1000 * n })])];
    await Promise.all(batches.map((batch) => ingestSpans(batch.map(project.stamp))));
    const summaries = await Trace.find({ projectId: project.objectId }).lean();
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({ spanCount: 6, errorCount: 1, endAt: new Date(NOW + 5000), rootName: 'GET /race' });
  });

  test('flushes stored at once add up in the service, endpoint and query rollups, one document per key and minute', async () => {
    const project = await projectOf();
    // twelve flushes of one request each, stored side by side: their rollups are written together
    const flushes = Array.from({ length: 12 }, (_, n) => {
      const root = span({ startMs: NOW + n, endMs: NOW + n + 100 });
      const query = (ms: number) =>
        span({ traceId: root.traceId, parentSpanId: root.spanId, kind: 'client', name: 'SELECT cart', category: 'db', isSegment: false, http: undefined, db: { system: 'postgresql', statement: 'SELECT * FROM cart WHERE id = 1' }, attributes: {}, startMs: NOW + n, endMs: NOW + n + ms, durationMs: ms });
      return [root, query(10 + n), query(5)];
    });
    await Promise.all(flushes.map((flush) => ingestSpans(flush.map(project.stamp))));
    const endpoints = await EndpointRollup.find({ projectId: project.objectId }).lean();
    expect(endpoints.map(({ route, count }) => ({ route, count }))).toEqual([{ route: '/cart', count: 12 }]);
    const queries = await QueryRollup.find({ projectId: project.objectId }).lean();
    expect(queries).toHaveLength(1);
    expect(queries[0]).toMatchObject({ service: 'shop', system: 'postgresql', count: 24, totalMs: 12 * 5 + (10 + 21) * 6, maxMs: 21 });
    const rollups = await SpanRollup.find({ projectId: project.objectId }).lean();
    expect(rollups.map(({ kind, callee, count }) => ({ kind: String(kind), callee: callee ?? null, count })).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
      { kind: 'edge', callee: 'postgresql', count: 24 },
      { kind: 'service', callee: null, count: 12 },
    ]);
  });
});

describe('logs', () => {
  test('bodies are tokenized for search: lower-cased, distinct words, capped in number and length', async () => {
    const project = await projectOf();
    const long = 'x'.repeat(100);
    const many = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    await ingestLogs([project.stamp(log('Payment FAILED for order 1234: payment declined', { traceId: hex(16), spanId: hex(8) })), project.stamp(log(`${long} ${many}`))]);

    const found = await Log.find({ projectId: project.objectId, tokens: { $all: ['payment', 'declined'] } }).lean();
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ tokens: ['payment', 'failed', 'for', 'order', '1234', 'declined'], level: 'info', time: new Date(NOW), attributes: [{ key: 'code.function', value: 'checkout' }] });
    const capped = await Log.findOne({ projectId: project.objectId, tokens: 'x'.repeat(64) }).lean();
    expect(capped?.tokens).toHaveLength(64);
    expect(capped?.tokens.every((token) => token.length <= 64)).toBe(true);
  });

  test('logs differing only in numbers share a pattern; the SDK template wins; a replayed batch inserts nothing', async () => {
    const project = await projectOf();
    const batch = [
      log('User 42 logged in from 10.0.0.1 after 1.5s', { timeMs: NOW - 1000 }),
      log('User 7 logged in from 10.0.0.2 after 0.25s', { timeMs: NOW }),
      log('Cache miss for key 9f8e7d6c5b4a39281706f5e4d3c2b1a0'),
      log('order 17 shipped', { template: 'order %s shipped' }),
      log('order 18 shipped', { template: 'order %s shipped' }),
    ].map(project.stamp);
    await ingestLogs(batch);
    await ingestLogs(batch);
    expect(await Log.countDocuments({ projectId: project.objectId })).toBe(5);

    const patternOf = async (body: string) => (await Log.findOne({ projectId: project.objectId, body }).lean())!.patternId;
    expect(await patternOf('User 42 logged in from 10.0.0.1 after 1.5s')).toBe(await patternOf('User 7 logged in from 10.0.0.2 after 0.25s'));
    expect(await patternOf('User 42 logged in from 10.0.0.1 after 1.5s')).not.toBe(await patternOf('Cache miss for key 9f8e7d6c5b4a39281706f5e4d3c2b1a0'));
    expect(await patternOf('order 17 shipped')).toBe(await patternOf('order 18 shipped'));

    const patterns = await LogPattern.find({ projectId: project.objectId }).lean();
    expect(patterns.map((p) => p.pattern).sort()).toEqual(['Cache miss for key <*>', 'User <*> logged in from <*> after <*>s', 'order %s shipped']);
    expect(patterns.find((p) => p.pattern.startsWith('User'))).toMatchObject({ firstSeenAt: new Date(NOW - 1000), lastSeenAt: new Date(NOW) });
  });
});

describe('metric points', () => {
  const valuesOf = async (projectId: Types.ObjectId, name: string) =>
    (await MetricPoint.find({ projectId, name }).sort({ time: 1 }).lean()).map((point) => [point.time.getTime() - NOW, point.value, point.temporality]);
  const routeValues = async (projectId: Types.ObjectId, route: string) =>
    (await MetricPoint.find({ projectId, 'attributes.value': route }).sort({ time: 1 }).lean()).map((point) => point.value);

  test('cumulative monotonic sums become deltas per series; a drop or a new start time is a reset', async () => {
    const project = await projectOf();
    const pay = { attributes: { 'http.route': '/pay' } };
    const batch = [counter(10, NOW), counter(25, NOW + 2000), counter(15, NOW + 1000), counter(100, NOW, pay), counter(130, NOW + 1000, pay)].map(project.stamp);
    await ingestMetricPoints(batch);
    await ingestMetricPoints(batch);
    expect(await MetricPoint.countDocuments({ projectId: project.objectId })).toBe(5);
    expect(await routeValues(project.objectId, '/cart')).toEqual([10, 5, 10]);
    expect(await routeValues(project.objectId, '/pay')).toEqual([100, 30]);
    expect(await MetricPoint.countDocuments({ projectId: project.objectId, temporality: 'delta' })).toBe(5);

    // Fell from 25 to 4: the exporter restarted without a new start time, so 4 is all new.
    await ingestMetricPoints([project.stamp(counter(4, NOW + 3000)), project.stamp(counter(9, NOW + 4000))]);
    // A new start time: a new incarnation, whose first total counts in full.
    await ingestMetricPoints([project.stamp(counter(3, NOW + 5000, { startTimeMs: NOW + 4500 }))]);
    // Older than the series' last point: its increase is already in a later total.
    await ingestMetricPoints([project.stamp(counter(20, NOW + 1500))]);
    expect(await routeValues(project.objectId, '/cart')).toEqual([10, 5, 10, 4, 5, 3]);
    expect(await MetricSeries.countDocuments({ projectId: project.objectId })).toBe(3);
  });

  test('gauges and up-down sums are kept as sent; cumulative histograms become delta buckets', async () => {
    const project = await projectOf();
    const histogram = (count: number, sum: number, bucketCounts: number[], timeMs: number): MetricPointRecord => ({
      name: 'http.server.duration',
      unit: 'ms',
      type: 'histogram',
      temporality: 'cumulative',
      timeMs,
      startTimeMs: NOW - 60_000,
      count,
      sum,
      min: 1,
      max: 900,
      bucketCounts,
      explicitBounds: [10, 100],
      attributes: {},
      service: 'shop',
      source: 'otlp',
    });
    await ingestMetricPoints(
      [
        { name: 'queue.depth', type: 'gauge', timeMs: NOW, value: 7, attributes: {}, service: 'shop', source: 'otlp' } satisfies MetricPointRecord,
        counter(5, NOW, { name: 'jobs.active', isMonotonic: false }),
        counter(3, NOW + 1000, { name: 'jobs.active', isMonotonic: false }),
        histogram(2, 30, [1, 1, 0], NOW),
        histogram(5, 530, [2, 2, 1], NOW + 1000),
      ].map(project.stamp),
    );
    expect(await valuesOf(project.objectId, 'queue.depth')).toEqual([[0, 7, null]]);
    expect(await valuesOf(project.objectId, 'jobs.active')).toEqual([
      [0, 5, 'cumulative'],
      [1000, 3, 'cumulative'],
    ]);
    const histograms = await MetricPoint.find({ projectId: project.objectId, name: 'http.server.duration' }).sort({ time: 1 }).lean();
    expect(histograms.map(({ count, sum, bucketCounts, min, max, temporality }) => ({ count, sum, bucketCounts, min, max, temporality }))).toEqual([
      { count: 2, sum: 30, bucketCounts: [1, 1, 0], min: 1, max: 900, temporality: 'delta' },
      { count: 3, sum: 500, bucketCounts: [1, 1, 1], min: null, max: null, temporality: 'delta' },
    ]);
  });

  test('the name registry keeps type, unit and the first and last time each name was seen', async () => {
    const project = await projectOf();
    await ingestMetricPoints([counter(1, NOW), counter(2, NOW + 60_000)].map(project.stamp));
    await ingestMetricPoints([project.stamp(counter(3, NOW + 120_000, { unit: '1' }))]);
    expect(await MetricName.find({ projectId: project.objectId }).lean()).toEqual([
      expect.objectContaining({ name: 'http.server.requests', type: 'sum', unit: '1', firstSeenAt: new Date(NOW), lastSeenAt: new Date(NOW + 120_000) }),
    ]);
  });
});

describe('check-ins', () => {
  test("each status of an SDK check-in is recorded once; its monitor config creates the check, keeping keys MongoDB-compatible servers refuse out", async () => {
    const project = await projectOf();
    const checkInId = hex(16);
    const base: CheckInRecord = { checkInId, monitorSlug: 'nightly-report', status: 'in_progress', timeMs: NOW, monitorConfig: { schedule: { type: 'crontab', value: '0 3 * * *' }, 'odd.key': true } };
    const batch = [base, { ...base, status: 'ok' as const, durationMs: 4200, timeMs: NOW + 4200 }].map(project.stamp);
    await ingestSdkCheckIns(batch, new Date(NOW + 5000));
    await ingestSdkCheckIns(batch, new Date(NOW + 5000));
    const check = (await CronCheck.findOne({ projectId: project.objectId, slug: 'nightly-report' }).lean())!;
    expect(check).toMatchObject({ schedule: { type: 'crontab', value: '0 3 * * *' }, timezone: 'UTC', state: 'up', lastCheckinAt: new Date(NOW + 4200) });
    const pings = await CronPing.find({ checkId: check._id }).sort({ receivedAt: -1 }).lean();
    expect(pings.map((p) => [p.status, p.durationMs, p.runId])).toEqual([
      ['ok', 4200, checkInId],
      ['start', null, checkInId],
    ]);
  });
});

describe('release health and usage', () => {
  test('session outcomes roll up per release, environment and hour, once per batch id', async () => {
    const project = await projectOf();
    const hour = Math.floor(NOW / 3_600_000) * 3_600_000;
    const batch = [session(), session({ exited: 0, crashed: 1 }), session({ startedMs: hour - 1 }), session({ environment: undefined })].map(project.stamp);
    await ingestSessions(batch, `sessions-${hex(4)}`);
    const batchId = `sessions-${hex(4)}`;
    await ingestSessions(batch, batchId);
    await ingestSessions(batch, batchId);
    const rollups = await ReleaseHealth.find({ projectId: project.objectId }).lean();
    const current = rollups.find((r) => r.environment === 'production' && r.hour.getTime() === hour);
    expect(current).toMatchObject({ release: 'shop@1.0.0', started: 4, exited: 2, crashed: 2 });
    expect(rollups.find((r) => r.hour.getTime() === hour - 3_600_000)).toMatchObject({ started: 2 });
    expect(rollups.find((r) => r.environment === null)).toMatchObject({ started: 2 });
    expect(rollups).toHaveLength(3);
  });

  test('usage counts records per project, kind and UTC day, once per batch id', async () => {
    const project = await projectOf();
    const other = await projectOf();
    const items = [project.stamp({}), project.stamp({}), other.stamp({})];
    const day = new Date(NOW);
    await countUsage('spans', [{ batchId: 'usage-1', items }], day);
    await countUsage('spans', [{ batchId: 'usage-1', items }], day);
    await countUsage('logs', [{ batchId: 'usage-2', items: items.slice(0, 1) }], day);
    const usage = await Usage.find({ orgId: new Types.ObjectId(owner.organization.id), projectId: { $in: [project.objectId, other.objectId] } }).lean();
    const quantity = (projectId: Types.ObjectId, category: string) => usage.find((u) => u.projectId.equals(projectId) && u.category === category)?.quantity;
    expect(quantity(project.objectId, 'spans')).toBe(2);
    expect(quantity(other.objectId, 'spans')).toBe(1);
    expect(quantity(project.objectId, 'logs')).toBe(1);
    expect(usage.every((u) => u.day === day.toISOString().slice(0, 10))).toBe(true);
  });
});

describe('session replay', () => {
  test('replay events fold into one summary per replay, idempotently', async () => {
    const project = await projectOf();
    const replayId = hex(16);
    const batch = [
      replayEvent(replayId, 0, { startMs: NOW - 1000, urls: ['https://shop.test/'], user: { email: 'jane@example.test' }, release: 'shop@1.0.0' }),
      replayEvent(replayId, 2, { urls: ['https://shop.test/', 'https://shop.test/cart'], errorIds: [hex(16)] }),
      replayEvent(replayId, 1, { traceIds: [hex(16)] }),
    ].map(project.stamp);
    await ingestReplayEvents(batch);
    await ingestReplayEvents(batch);
    const replays = await Replay.find({ projectId: project.objectId }).lean();
    expect(replays).toHaveLength(1);
    expect(replays[0]).toMatchObject({ replayId, startedAt: new Date(NOW - 1000), lastSeenAt: new Date(NOW + 10_000), segmentCount: 3, urls: ['https://shop.test/', 'https://shop.test/cart'], user: { email: 'jane@example.test' }, release: 'shop@1.0.0', replayType: 'session' });
    expect(replays[0]!.errorIds).toHaveLength(1);
    expect(replays[0]!.traceIds).toHaveLength(1);
  });

  test('recordings are stored only while the project captures replays, and read back byte for byte', async () => {
    const project = await projectOf();
    const replayId = hex(16);
    const bytes = randomBytes(2048);
    await ingestReplayRecordings([project.stamp(recording(replayId, 0, bytes))], blobs);
    expect(await ReplaySegment.countDocuments({ projectId: project.objectId })).toBe(0);
    expect(await blobs.get(`replays/${project.id}/${replayId}/0`)).toBeUndefined();

    expect((await owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: true })).status).toBe(200);
    const batch = [recording(replayId, 0, bytes), recording(replayId, 1, Buffer.from('{"type":3}'))].map(project.stamp);
    await ingestReplayRecordings(batch, blobs);
    await ingestReplayRecordings(batch, blobs);
    const segments = await ReplaySegment.find({ projectId: project.objectId }).sort({ segmentId: 1 }).lean();
    expect(segments.map((s) => [s.segmentId, s.size])).toEqual([
      [0, 2048],
      [1, 10],
    ]);
    expect(await blobs.get(segments[0]!.blobKey)).toEqual(bytes);

    expect((await owner.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: false })).status).toBe(200);
    await ingestReplayRecordings([project.stamp(recording(replayId, 2, bytes))], blobs);
    expect(await ReplaySegment.countDocuments({ projectId: project.objectId })).toBe(2);
    expect(await blobs.get(`replays/${project.id}/${replayId}/2`)).toBeUndefined();
  });
});

// the workers delete by age in FerretDB's PostgreSQL tables when the store is that (FERRETDB_POSTGRES_URL), through the driver otherwise
const deletesByAge: [string, string | undefined][] = [
  ['through the driver', undefined],
  ...(process.env.TEST_FERRETDB_POSTGRES_URL ? [["in FerretDB's PostgreSQL tables", process.env.TEST_FERRETDB_POSTGRES_URL] as [string, string]] : []),
];

describe('retention cleanup', () => {
  test.each(deletesByAge)("removes each organisation's telemetry older than its retention, blobs included, and nothing newer (deletes by age %s)", async (_, ferretdbPostgresUrl) => {
    const shortLived = await signUp(h, 'short');
    expect((await shortLived.client.patch('/v1/settings', { retention_days: 7 })).status).toBe(200);
    const kept = await projectOf(); // 30 days, the default
    const brief = await projectOf(shortLived);
    const ages = { old: NOW - 40 * DAY_MS, middle: NOW - 10 * DAY_MS, fresh: NOW - DAY_MS };
    for (const project of [kept, brief]) {
      await project.account.client.put(`/v1/projects/${project.id}/session-replay`, { enabled: true });
      for (const [age, at] of Object.entries(ages)) {
        const replayId = hex(16);
        await ingestSpans([project.stamp(span({ startMs: at, endMs: at + 10, name: age }))]);
        await ingestLogs([project.stamp(log(age, { timeMs: at }))]);
        await ingestMetricPoints([project.stamp(counter(1, at, { name: `metric.${age}` }))]);
        await ingestSdkCheckIns([project.stamp({ checkInId: hex(16), monitorSlug: age, status: 'ok', timeMs: at, monitorConfig: { schedule: { type: 'interval', value: 1, unit: 'day' } } })]);
        await ingestSessions([project.stamp(session({ startedMs: at, release: age }))]);
        await ingestReplayEvents([project.stamp(replayEvent(replayId, 0, { timeMs: at, urls: [age] }))]);
        await ingestReplayRecordings([project.stamp(recording(replayId, 0, Buffer.from(age), at))], blobs);
        await ingestErrorEvents([project.stamp({ eventId: hex(16), timeMs: at, event: { message: age, level: 'error' } })], `retention-${age}`);
      }
    }
    const oldBlob = (await ReplaySegment.findOne({ projectId: kept.objectId, time: new Date(ages.old) }).lean())!.blobKey;
    const middleBlobOfBrief = (await ReplaySegment.findOne({ projectId: brief.objectId, time: new Date(ages.middle) }).lean())!.blobKey;
    const middleBlobOfKept = (await ReplaySegment.findOne({ projectId: kept.objectId, time: new Date(ages.middle) }).lean())!.blobKey;

    const removed = await cleanup(blobs, new Date(NOW), ferretdbPostgresUrl);
    expect(removed).toMatchObject({ errorEvents: 3, issues: 3, spans: 3, traces: 3, logs: 3, metricPoints: 3, cronPings: 3, releaseHealth: 3, replays: 3, replaySegments: 3 });

    const pinged = new Set((await CronPing.find({}, { checkId: 1 }).lean()).map((p) => p.checkId.toHexString()));
    const survivors = async (projectId: Types.ObjectId) => ({
      spans: (await Span.find({ projectId }).lean()).map((s) => s.name).sort(),
      traces: await Trace.countDocuments({ projectId }),
      logs: (await Log.find({ projectId }).lean()).map((l) => l.body).sort(),
      metrics: (await MetricName.find({ projectId }).lean()).map((m) => m.name).sort(),
      points: await MetricPoint.countDocuments({ projectId }),
      checkIns: (await CronCheck.find({ projectId }).lean()).filter((c) => pinged.has(c._id.toHexString())).map((c) => c.slug).sort(),
      releases: (await ReleaseHealth.find({ projectId }).lean()).map((r) => r.release).sort(),
      replays: (await Replay.find({ projectId }).lean()).flatMap((r) => r.urls).sort(),
      segments: await ReplaySegment.countDocuments({ projectId }),
      errorEvents: (await ErrorEvent.find({ projectId }).lean()).map((e) => e.title).sort(),
      issues: (await Issue.find({ projectId }).lean()).map((i) => i.title).sort(),
    });
    expect(await survivors(kept.objectId)).toEqual({
      spans: ['fresh', 'middle'],
      traces: 2,
      logs: ['fresh', 'middle'],
      metrics: ['metric.fresh', 'metric.middle'],
      points: 2,
      checkIns: ['fresh', 'middle'],
      releases: ['fresh', 'middle'],
      replays: ['fresh', 'middle'],
      segments: 2,
      errorEvents: ['fresh', 'middle'],
      issues: ['fresh', 'middle'],
    });
    expect(await survivors(brief.objectId)).toEqual({
      spans: ['fresh'],
      traces: 1,
      logs: ['fresh'],
      metrics: ['metric.fresh'],
      points: 1,
      checkIns: ['fresh'],
      releases: ['fresh'],
      replays: ['fresh'],
      segments: 1,
      errorEvents: ['fresh'],
      issues: ['fresh'],
    });
    expect(await blobs.get(oldBlob)).toBeUndefined();
    expect(await blobs.get(middleBlobOfBrief)).toBeUndefined();
    expect((await blobs.get(middleBlobOfKept))?.toString()).toBe('middle');
  });

  test("an issue that outlives its retention keeps only the hours of counts within it (each kept hour makes every count of it dearer)", async () => {
    const project = await projectOf();
    const event = { message: 'a long-lived issue', level: 'error', fingerprint: ['long-lived'] };
    const times = [NOW - 45 * DAY_MS, NOW - 31 * DAY_MS, NOW - 29 * DAY_MS, NOW - DAY_MS];
    for (const [index, timeMs] of times.entries()) await ingestErrorEvents([project.stamp({ eventId: hex(16), timeMs, event })], `long-lived-${index}`);
    const hoursOf = async () => Object.keys((await Issue.findOne({ projectId: project.objectId }).lean())!.hourly as Record<string, number>).map(hourOfKey).sort();
    expect(await hoursOf()).toHaveLength(4);

    const removed = await cleanup(blobs, new Date(NOW));
    expect(removed.issueHours).toBeGreaterThanOrEqual(2);
    expect(await hoursOf()).toEqual(times.slice(2).map((ms) => Math.floor(ms / 3_600_000)));
    const issue = (await Issue.findOne({ projectId: project.objectId }).lean())!;
    expect(issue.eventCount).toBe(4);
    // what the API answers for those hours: the kept ones still counted, the dropped ones 0 like any hour without events
    const series = await project.account.client.get(`/v1/issues/${issue._id.toHexString()}/series?from=${new Date(NOW - 46 * DAY_MS).toISOString()}&to=${new Date(NOW).toISOString()}`);
    const counted = (series.body.data as Array<{ time: string; events: number }>).filter((point) => point.events > 0).map((point) => Date.parse(point.time));
    expect(counted).toEqual(times.slice(2).map((ms) => Math.floor(ms / 3_600_000) * 3_600_000));
  });
});
