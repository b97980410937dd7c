/**
 * Metric names and series over OTLP/JSON metrics with controlled timestamps: a cumulative counter
 * (stored as deltas), a gauge and a cumulative explicit-bounds histogram. The series is read from its
 * hours' documents, from the points of minutes a step boundary cuts, and, for hours a previous version
 * stored, from its per-minute rollups or its points; either way it answers what the points say.
 */
import { Types } from 'mongoose';
import { MetricHour, MetricPoint, MetricRollup } from '../../src/shared/features/metrics/model.js';
import { ingestMetricPoints } from '../../src/shared/features/metrics/store.js';
import type { MetricPoint as MetricPointRecord } from '../../src/shared/telemetry/records.js';
import { markHours, RolledUpHours } from '../../src/shared/telemetry/rolled-up-hours.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { nanos, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });

/** On the hour, two hours ago: steps of a minute start at t0, t0 + 60 s, … */
const t0 = Math.floor((Date.now() - 2 * 3_600_000) / 3_600_000) * 3_600_000;
const route = (value: string) => [{ key: 'http.route', value: { stringValue: value } }];

async function send(metrics: unknown[]) {
  const body = { resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] }, scopeMetrics: [{ metrics }] }] };
  const reply = await h.ingest.request('POST', '/v1/metrics', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

const window = () => `project=${project.id}&from=${t0}&to=${t0 + 3_600_000}`;

beforeAll(async () => {
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  const totals = { '/a': [10, 25, 45], '/b': [1, 2, 3] };
  const histogram = [
    { count: 4, sum: 120, bucketCounts: [1, 2, 1, 0] },
    { count: 10, sum: 400, bucketCounts: [2, 5, 2, 1] },
  ];
  for (let i = 0; i < 3; i++) {
    const at = t0 + i * 60_000 + 30_000;
    await send([
      {
        name: 'http.requests',
        unit: '1',
        sum: {
          aggregationTemporality: 2,
          isMonotonic: true,
          dataPoints: Object.entries(totals).map(([path, values]) => ({ startTimeUnixNano: nanos(t0), timeUnixNano: nanos(at), asInt: String(values[i]), attributes: route(path) })),
        },
      },
      { name: 'queue.depth', gauge: { dataPoints: [{ timeUnixNano: nanos(at), asDouble: 3 + 2 * i }] } },
      ...(i < 2
        ? [
            {
              name: 'http.duration',
              unit: 'ms',
              histogram: {
                aggregationTemporality: 2,
                dataPoints: [{ startTimeUnixNano: nanos(t0), timeUnixNano: nanos(at), count: String(histogram[i]!.count), sum: histogram[i]!.sum, bucketCounts: histogram[i]!.bucketCounts.map(String), explicitBounds: [10, 50, 100] }],
              },
            },
          ]
        : []),
    ]);
    // an exporter's next export comes a step later, after this one is stored: a total that a later
    // one overtook before it was stored would be dropped as late (its increase is in the later one)
    await eventually(async () => {
      const reply = await owner.client.get(`/v1/metrics/series?${window()}&name=queue.depth&step=60`);
      return reply.body.points?.length === i + 1 ? true : undefined;
    }, `point ${i + 1} stored`);
  }
});

const values = async (filters: string) => {
  const reply = await owner.client.get(`/v1/metrics/series?${window()}&${filters}`);
  expect(reply.status).toBe(200);
  return reply.body.points.map((point: { t: string; value: number }) => [new Date(point.t).getTime() - t0, point.value]);
};

describe('GET /v1/metrics/names', () => {
  test('names with their type, unit and attribute keys', async () => {
    const reply = await owner.client.get(`/v1/metrics/names?${window()}`);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((name: { name: string }) => name.name)).toEqual(['http.duration', 'http.requests', 'queue.depth']);
    expect(reply.body.data[1]).toMatchObject({ name: 'http.requests', type: 'sum', unit: '1', attribute_keys: ['http.route'], project_ids: [project.id] });
    expect(reply.body.data[0]).toMatchObject({ type: 'histogram', unit: 'ms' });
  });
});

describe('GET /v1/metrics/series', () => {
  test('a cumulative counter gives its increases per step, and rates per second', async () => {
    expect(await values('name=http.requests&step=60&attribute=http.route:/a')).toEqual([
      [0, 10],
      [60_000, 15],
      [120_000, 20],
    ]);
    const reply = await owner.client.get(`/v1/metrics/series?${window()}&name=http.requests&step=60`);
    expect(reply.body).toMatchObject({ name: 'http.requests', type: 'sum', aggregation: 'sum', step: 60 });
    expect(reply.body.points.map((point: { value: number }) => point.value)).toEqual([11, 16, 21]);
    const rates = await values('name=http.requests&step=60&aggregation=rate&attribute=http.route:/b');
    expect(rates.map(([, rate]: [number, number]) => rate)).toEqual([1 / 60, 1 / 60, 1 / 60]);
    expect(await values('name=http.requests&step=3600')).toEqual([[0, 48]]);
  });

  test('a gauge averages by default, and takes min and max', async () => {
    expect(await values('name=queue.depth&step=60')).toEqual([
      [0, 3],
      [60_000, 5],
      [120_000, 7],
    ]);
    expect(await values('name=queue.depth&step=3600')).toEqual([[0, 5]]);
    expect(await values('name=queue.depth&step=3600&aggregation=max')).toEqual([[0, 7]]);
    expect(await values('name=queue.depth&step=3600&aggregation=min')).toEqual([[0, 3]]);
  });

  test('a histogram’s percentiles come from its merged buckets, interpolated within the bucket', async () => {
    // deltas [1,2,1,0] and [1,3,1,1]: [2,5,2,1] over the hour, bounds 10, 50, 100
    expect(await values('name=http.duration&step=3600&aggregation=p50')).toEqual([[0, 34]]);
    expect(await values('name=http.duration&step=3600&aggregation=p95')).toEqual([[0, 100]]);
    expect(await values('name=http.duration&step=3600&aggregation=avg')).toEqual([[0, 40]]);
    expect(await values('name=http.duration&step=3600&aggregation=count')).toEqual([[0, 10]]);
  });

  test('an unknown name answers 404, a missing one 400; another organisation sees nothing', async () => {
    const unknown = await owner.client.get(`/v1/metrics/series?${window()}&name=no.such.metric`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('not_found');
    const missing = await owner.client.get(`/v1/metrics/series?${window()}`);
    expect({ status: missing.status, code: missing.body.code }).toEqual({ status: 400, code: 'validation_failed' });
    const stranger = await signUp(h, 'stranger');
    expect((await stranger.client.get(`/v1/metrics/names?from=${t0}&to=${t0 + 3_600_000}`)).body.data).toEqual([]);
    expect((await stranger.client.get(`/v1/metrics/series?from=${t0}&to=${t0 + 3_600_000}&name=queue.depth`)).status).toBe(404);
    expect((await stranger.client.get(`/v1/metrics/names?${window()}`)).status).toBe(404);
  });
});

describe('GET /v1/metrics/series over rollups', () => {
  test('a step that starts inside a minute counts that minute’s points on each side of its start', async () => {
    const cut = await projectWithDsn(owner, h.ingest.baseUrl);
    const gauge = (seconds: number, value: number): MetricPointRecord => ({ name: 'cut.depth', type: 'gauge', timeMs: t0 + seconds * 1000, value, attributes: {}, service: 'api', source: 'otlp' });
    await ingestMetricPoints([gauge(10, 1), gauge(50, 2), gauge(70, 4), gauge(130, 8), gauge(610, 16), gauge(650, 32)].map((record) => ({ orgId: owner.organization.id, projectId: cut.id, record })));
    // steps of 10 minutes from 30 s into the hour: the window's start cuts minute 0, the second step's start minute 10
    const reply = await owner.client.get(`/v1/metrics/series?project=${cut.id}&from=${t0 + 30_000}&to=${t0 + 3_600_000}&name=cut.depth&step=600&aggregation=sum`);
    expect(reply.body.points.map((point: { t: string; value: number }) => [new Date(point.t).getTime() - t0, point.value])).toEqual([
      [30_000, 30],
      [630_000, 32],
    ]);
  });

  test('without `from`, the window is the last 24 hours from the whole minute, so its steps start on whole minutes and count the same', async () => {
    const before = Date.now();
    const reply = await owner.client.get(`/v1/metrics/series?project=${project.id}&name=http.requests&step=3600`);
    const [from, to] = [Date.parse(reply.body.from), Date.parse(reply.body.to)];
    expect(from % 60_000).toBe(0);
    expect(to - from).toBeGreaterThanOrEqual(86_400_000);
    expect(to - from).toBeLessThan(86_460_000);
    expect(to).toBeGreaterThanOrEqual(before);
    // the 48 requests of the three minutes from t0, in whichever hour-long steps they fall
    const steps = reply.body.points.filter((point: { t: string }) => Date.parse(point.t) + 3_600_000 > t0 && Date.parse(point.t) < t0 + 3 * 60_000);
    expect(steps.reduce((sum: number, point: { value: number }) => sum + point.value, 0)).toBe(48);
    expect(steps.every((point: { t: string }) => Date.parse(point.t) % 60_000 === 0)).toBe(true);
  });

  test('an hour whose minutes many steps cut is read from its points, with the same answer', async () => {
    // minute 1 is cut at 90 s, where its point falls after the cut
    expect(await values('name=http.requests&step=90')).toEqual([
      [0, 11],
      [90_000, 37],
    ]);
    // a window that starts 15 s into a minute, with steps of a minute: every minute is cut
    const reply = await owner.client.get(`/v1/metrics/series?project=${project.id}&from=${t0 + 15_000}&to=${t0 + 3_600_000}&name=queue.depth&step=60`);
    expect(reply.body.points.map((point: { t: string; value: number }) => [new Date(point.t).getTime() - t0, point.value])).toEqual([
      [15_000, 3],
      [75_000, 5],
      [135_000, 7],
    ]);
  });

  test('a minute the window ends in is read from its rollup when all its points fall before the end, and from its points when some fall after', async () => {
    const edge = await projectWithDsn(owner, h.ingest.baseUrl);
    const gauge = (name: string, seconds: number, value: number): MetricPointRecord => ({ name, type: 'gauge', timeMs: t0 + seconds * 1000, value, attributes: {}, service: 'api', source: 'otlp' });
    // a window that ends 40 s into minute 0, as one that ends now cuts the current minute
    await ingestMetricPoints([gauge('edge.before', 10, 1), gauge('edge.before', 20, 2), gauge('edge.across', 10, 4), gauge('edge.across', 50, 8)].map((record) => ({ orgId: owner.organization.id, projectId: edge.id, record })));
    const sum = async (name: string) =>
      (await owner.client.get(`/v1/metrics/series?project=${edge.id}&from=${t0}&to=${t0 + 40_000}&name=${name}&step=60&aggregation=sum`)).body.points.map((point: { t: string; value: number }) => [new Date(point.t).getTime() - t0, point.value]);
    expect(await sum('edge.before')).toEqual([[0, 3]]);
    expect(await sum('edge.across')).toEqual([[0, 4]]);
    // with its points gone, the minute whose points all came before the end still answers from its rollup
    await MetricPoint.deleteMany({ projectId: new Types.ObjectId(edge.id) });
    expect(await sum('edge.before')).toEqual([[0, 3]]);
    expect(await sum('edge.across')).toEqual([]);
  });

  test('a minute cut for one series and not another is read from its points once, every series counted once', async () => {
    const mixed = await projectWithDsn(owner, h.ingest.baseUrl);
    const gauge = (route: string, seconds: number, value: number): MetricPointRecord => ({ name: 'mixed.depth', type: 'gauge', timeMs: t0 + seconds * 1000, value, attributes: { 'http.route': route }, service: 'api', source: 'otlp' });
    // a window that ends 40 s into minute 0: /a's points all fall before the end, /b's on both sides of it
    await ingestMetricPoints([gauge('/a', 10, 1), gauge('/a', 20, 2), gauge('/b', 15, 4), gauge('/b', 50, 8)].map((record) => ({ orgId: owner.organization.id, projectId: mixed.id, record })));
    const reply = await owner.client.get(`/v1/metrics/series?project=${mixed.id}&from=${t0}&to=${t0 + 40_000}&name=mixed.depth&step=60&aggregation=sum`);
    expect(reply.body.points).toEqual([{ t: new Date(t0).toISOString(), value: 7 }]);
  });

  test('a batch stored twice (a retried job) counts its points once', async () => {
    const other = await projectWithDsn(owner, h.ingest.baseUrl);
    const point = (timeMs: number, value: number): MetricPointRecord => ({ name: 'jobs.done', type: 'sum', temporality: 'delta', isMonotonic: true, timeMs, value, attributes: { queue: 'mail' }, service: 'worker', source: 'otlp' });
    const batch = [point(t0 + 10_000, 4), point(t0 + 20_000, 6), point(t0 + 70_000, 1)].map((record) => ({ orgId: owner.organization.id, projectId: other.id, record }));
    await ingestMetricPoints(batch);
    await ingestMetricPoints(batch);
    const reply = await owner.client.get(`/v1/metrics/series?project=${other.id}&from=${t0}&to=${t0 + 3_600_000}&name=jobs.done&step=60`);
    expect(reply.body.points.map((p: { t: string; value: number }) => [new Date(p.t).getTime() - t0, p.value])).toEqual([
      [0, 10],
      [60_000, 1],
    ]);
    const count = await owner.client.get(`/v1/metrics/series?project=${other.id}&from=${t0}&to=${t0 + 3_600_000}&name=jobs.done&step=3600&aggregation=count`);
    expect(count.body.points).toEqual([{ t: new Date(t0).toISOString(), value: 3 }]);
    const hours = await MetricHour.find({ projectId: new Types.ObjectId(other.id) }).lean();
    expect(hours.map((hour) => [(hour.at as Date).getTime() - t0, hour.minutes])).toEqual([
      [
        0,
        {
          0: { points: 2, values: 2, valueSum: 10, valueMin: 4, valueMax: 6, earliestMs: t0 + 10_000, latestMs: t0 + 20_000 },
          1: { points: 1, values: 1, valueSum: 1, valueMin: 1, valueMax: 1, earliestMs: t0 + 70_000, latestMs: t0 + 70_000 },
        },
      ],
    ]);
  });

  test('hours stored before rollups were kept are read from their points, later ones from rollups, in one answer', async () => {
    const upgraded = await signUp(h, 'upgraded');
    const legacy = await projectWithDsn(upgraded, h.ingest.baseUrl);
    const orgId = new Types.ObjectId(upgraded.organization.id);
    const before = t0 - 3_600_000;
    const at = [before + 10 * 60_000, before + 40 * 60_000, t0 + 5 * 60_000];
    const body = { resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] }, scopeMetrics: [{ metrics: [{ name: 'pool.size', gauge: { dataPoints: at.map((time, i) => ({ timeUnixNano: nanos(time), asInt: String([1, 3, 10][i]) })) } }] }] }] };
    const reply = await h.ingest.request('POST', '/v1/metrics', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${legacy.publicKey}` });
    expect(reply.status).toBe(200);
    const series = async (step: number) => {
      const answer = await upgraded.client.get(`/v1/metrics/series?project=${legacy.id}&from=${before}&to=${t0 + 3_600_000}&name=pool.size&step=${step}`);
      return answer.body.points?.map((p: { t: string; value: number }) => [new Date(p.t).getTime() - before, p.value]);
    };
    await eventually(async () => ((await series(3600))?.length === 2 ? true : undefined), 'points stored');
    // as a version before rollups left it: the first hour's points without rollups (nor minutes), and the hours kept from its end on
    const hour = Math.floor(before / 3_600_000);
    await MetricHour.deleteMany({ orgId, hour });
    await MetricPoint.updateMany({ orgId, hour }, { $unset: { minute: 1 } });
    await RolledUpHours.updateOne({ orgId, rollup: MetricHour.collection.collectionName, since: { $exists: true } }, { $set: { since: new Date(t0 - 1) } });
    expect(await series(3600)).toEqual([
      [0, 2],
      [3_600_000, 10],
    ]);
    expect(await series(1800)).toEqual([
      [0, 1],
      [1_800_000, 3],
      [3_600_000, 10],
    ]);
  });

  test('hours a previous version rolled up by the minute are read from those rollups, a minute rolled up on both sides of the upgrade from both', async () => {
    const upgraded = await signUp(h, 'minutes');
    const legacy = await projectWithDsn(upgraded, h.ingest.baseUrl);
    const orgId = new Types.ObjectId(upgraded.organization.id);
    const projectId = new Types.ObjectId(legacy.id);
    const before = t0 - 3_600_000;
    const hour = Math.floor(before / 3_600_000);
    const gauge = (timeMs: number, value: number): MetricPointRecord => ({ name: 'pool.used', type: 'gauge', timeMs, value, attributes: {}, service: 'api', source: 'otlp' });
    await ingestMetricPoints([gauge(before + 10 * 60_000, 1), gauge(before + 40 * 60_000, 3), gauge(before + 40 * 60_000 + 20_000, 5), gauge(t0 + 5 * 60_000, 10)].map((record) => ({ orgId: upgraded.organization.id, projectId: legacy.id, record })));
    // as the previous version left it, upgraded 10 s into minute 40 of the first hour: minutes 10 and 40 (its first
    // point) rolled up by the minute, from the epoch on; the hours' documents kept from then on
    const minuteRollup = (atMs: number, value: number) => ({
      _id: new Types.ObjectId(),
      orgId,
      projectId,
      at: new Date(atMs),
      hour,
      name: 'pool.used',
      type: 'gauge',
      service: 'api',
      attributes: [],
      explicitBounds: null,
      points: 1,
      values: 1,
      valueSum: value,
      valueMin: value,
      valueMax: value,
      earliestMs: atMs,
      latestMs: atMs,
    });
    await markHours(MetricRollup.collection, [{ orgId, hour }]);
    await MetricRollup.collection.insertMany([minuteRollup(before + 10 * 60_000, 1), minuteRollup(before + 40 * 60_000, 3)]);
    await MetricHour.updateOne({ projectId, hour }, { $unset: { 'minutes.10': 1 }, $set: { 'minutes.40': { points: 1, values: 1, valueSum: 5, valueMin: 5, valueMax: 5, earliestMs: before + 40 * 60_000 + 20_000, latestMs: before + 40 * 60_000 + 20_000 } } });
    await RolledUpHours.updateOne({ orgId, rollup: MetricHour.collection.collectionName, since: { $exists: true } }, { $set: { since: new Date(before + 40 * 60_000 + 10_000) } });
    // the rollups answer for their minutes: the points they counted can be gone
    await MetricPoint.deleteMany({ projectId, time: { $lt: new Date(before + 40 * 60_000 + 10_000) } });
    const series = async (step: number, aggregation: string) => {
      const answer = await upgraded.client.get(`/v1/metrics/series?project=${legacy.id}&from=${before}&to=${t0 + 3_600_000}&name=pool.used&step=${step}&aggregation=${aggregation}`);
      return answer.body.points?.map((p: { t: string; value: number }) => [new Date(p.t).getTime() - before, p.value]);
    };
    expect(await series(3600, 'sum')).toEqual([
      [0, 9],
      [3_600_000, 10],
    ]);
    expect(await series(1800, 'max')).toEqual([
      [0, 1],
      [1_800_000, 5],
      [3_600_000, 10],
    ]);
  });
});
