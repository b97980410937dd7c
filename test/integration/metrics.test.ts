/**
 * Metric names and series over OTLP/JSON metrics with controlled timestamps: a cumulative counter
 * (stored as deltas), a gauge and a cumulative explicit-bounds histogram.
 */
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
