/**
 * GET /v1/usage over telemetry sent through the ingest service and counted by the workers: per
 * category and project against PLAN_INCLUDED, this UTC month only; a tiny plan figure never stops
 * telemetry from being stored.
 */
import { Redis } from 'ioredis';
import { Types } from 'mongoose';
import { createApiApp } from '../../src/api/app.js';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { Usage } from '../../src/shared/features/usage/model.js';
import { createProject, signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, eventId, hex, nanos, otlpTraces, projectWithDsn, replayEnvelope, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

const PLAN = { errors: 2, spans: 1000, logs: 4, metrics: 1000, replays: 10, checkins: 100, feedback: 10 };
const CATEGORIES = ['errors', 'spans', 'logs', 'metrics', 'replays', 'checkins', 'feedback'];

let h: Harness;
let owner: Account;
let shop: ProjectWithDsn;
let api: ProjectWithDsn;
useHarness((started) => (h = started), { PLAN_INCLUDED: Object.entries(PLAN).map(([category, quantity]) => `${category}=${quantity}`).join(',') }, { workers: true });

const sentry = async (project: ProjectWithDsn, body: string | Buffer) => {
  const response = await fetch(`${h.ingest.baseUrl}/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, { method: 'POST', body, headers: { 'content-type': 'text/plain;charset=UTF-8' } });
  expect(response.status).toBe(200);
};
const otlp = async (project: ProjectWithDsn, signal: 'traces' | 'logs' | 'metrics', body: unknown) => {
  const reply = await h.ingest.request('POST', `/v1/${signal}`, JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
};
const logs = (count: number) => ({
  resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }] }, scopeLogs: [{ logRecords: Array.from({ length: count }, (_, i) => ({ timeUnixNano: nanos(Date.now()), severityNumber: 9, body: { stringValue: `line ${i}` } })) }] }],
});
const gauge = (points: number) => ({
  resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] }, scopeMetrics: [{ metrics: [{ name: 'queue.depth', gauge: { dataPoints: Array.from({ length: points }, (_, i) => ({ timeUnixNano: nanos(Date.now() - i * 1000), asDouble: i })) } }] }] }],
});

type Usage = { categories: { category: string; used: number; included: number | null; percent_used: number | null }[]; projects: { project_id: string; name: string | null; categories: { category: string; used: number }[] }[] };
const usedOf = (usage: Usage, category: string) => usage.categories.find((c) => c.category === category)!.used;
const projectUsed = (usage: Usage, projectId: string) => Object.fromEntries(usage.projects.find((p) => p.project_id === projectId)!.categories.map((c) => [c.category, c.used]));

const expectedShop = { errors: 3, spans: 0, logs: 6, metrics: 0, replays: 0, checkins: 0, feedback: 1 };
const expectedApi = { errors: 1, spans: 2, logs: 0, metrics: 3, replays: 2, checkins: 0, feedback: 0 };

beforeAll(async () => {
  owner = await signUp(h);
  shop = await projectWithDsn(owner, h.ingest.baseUrl);
  api = await projectWithDsn(owner, h.ingest.baseUrl);
  expect((await owner.client.put(`/v1/projects/${api.id}/session-replay`, { enabled: true })).status).toBe(200);

  // the shop sends three errors against a plan of two, six log lines against four, and a feedback
  for (let i = 0; i < 3; i++) {
    const event = errorEvent();
    await sentry(shop, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  }
  await otlp(shop, 'logs', logs(6));
  const feedbackId = eventId();
  await sentry(shop, envelope({ event_id: feedbackId }, [{ type: 'feedback', payload: { event_id: feedbackId, timestamp: Date.now() / 1000, type: 'feedback', contexts: { feedback: { message: 'Great search' } } } }]));

  // the api project sends an error, two spans, three metric points and two replay segments
  const event = errorEvent({}, { type: 'RangeError' });
  await sentry(api, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  const traceId = hex(16);
  const root = hex(8);
  await otlp(api, 'traces', otlpTraces({ api: [
    { traceId, id: root, name: 'GET /orders', kind: 'server', startMs: Date.now() - 100, durationMs: 50 },
    { traceId, id: hex(8), parent: root, name: 'SELECT orders', kind: 'client', startMs: Date.now() - 90, durationMs: 20 },
  ] }));
  await otlp(api, 'metrics', gauge(3));
  const replayId = eventId();
  await sentry(api, replayEnvelope(replayId, { segmentId: 0 }));
  await sentry(api, replayEnvelope(replayId, { segmentId: 1 }));

  await eventually(async () => {
    const usage = (await owner.client.get('/v1/usage')).body as Usage;
    const done = [[shop.id, expectedShop], [api.id, expectedApi]].every(([id, expected]) =>
      Object.entries(expected as Record<string, number>).every(([category, used]) => projectUsed(usage, id as string)[category] === used),
    );
    return done ? true : undefined;
  }, 'every batch counted', 30_000);
});

describe('GET /v1/usage', () => {
  test('this UTC month per category against the plan, per project, with the caveat', async () => {
    const reply = await owner.client.get('/v1/usage');
    expect(reply.status).toBe(200);
    const now = new Date();
    expect(reply.body.period).toEqual({
      start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    });
    expect(reply.body.categories).toEqual([
      { category: 'errors', used: 4, included: 2, percent_used: 200 },
      { category: 'spans', used: 2, included: 1000, percent_used: 0.2 },
      { category: 'logs', used: 6, included: 4, percent_used: 150 },
      { category: 'metrics', used: 3, included: 1000, percent_used: 0.3 },
      { category: 'replays', used: 2, included: 10, percent_used: 20 },
      { category: 'checkins', used: 0, included: 100, percent_used: 0 },
      { category: 'feedback', used: 1, included: 10, percent_used: 10 },
    ]);
    expect(reply.body.projects.map((p: { project_id: string }) => p.project_id).sort()).toEqual([shop.id, api.id].sort());
    expect(projectUsed(reply.body, shop.id)).toEqual(expectedShop);
    expect(projectUsed(reply.body, api.id)).toEqual(expectedApi);
    expect(reply.body.projects.find((p: { project_id: string }) => p.project_id === shop.id).name).toMatch(/^project-/);
    expect(reply.body.projects[0].categories.map((c: { category: string }) => c.category)).toEqual(CATEGORIES);
    expect(reply.body.caveat).toMatch(/per UTC day/);
    expect(reply.body.caveat).toMatch(/never throttles/);
  });

  test('exceeding a plan figure throttles nothing: every error is stored and counted in its issue', async () => {
    const usage = (await owner.client.get('/v1/usage')).body as Usage;
    expect(usedOf(usage, 'errors')).toBeGreaterThan(PLAN.errors);
    const issues = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues?project=${shop.id}`);
      const counted = reply.body.data.reduce((sum: number, issue: { count: number }) => sum + issue.count, 0);
      return counted === 3 ? reply.body.data : undefined;
    }, 'three events in the issue');
    expect(issues).toEqual([expect.objectContaining({ count: 3 })]);
    // and more telemetry past the figure is still accepted
    const event = errorEvent();
    await sentry(shop, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    await eventually(async () => (usedOf((await owner.client.get('/v1/usage')).body, 'errors') === 5 ? true : undefined), 'the fifth error counted');
  });

  test('counters of a previous month are not counted; every answer carries the caveat', async () => {
    const before = (await owner.client.get('/v1/usage')).body as Usage;
    const now = new Date();
    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 0)).toISOString().slice(0, 10);
    await Usage.collection.insertOne({ _id: new Types.ObjectId(), orgId: new Types.ObjectId(owner.organization.id), projectId: new Types.ObjectId(shop.id), category: 'errors', day: lastMonth, quantity: 500 });
    const after = await owner.client.get('/v1/usage');
    expect(usedOf(after.body, 'errors')).toBe(usedOf(before, 'errors'));
    expect(projectUsed(after.body, shop.id).errors).toBe(projectUsed(before, shop.id).errors);
    expect(typeof after.body.caveat).toBe('string');
  });

  test('the project filter narrows projects and totals', async () => {
    const reply = await owner.client.get(`/v1/usage?project=${api.id}`);
    expect(reply.status).toBe(200);
    expect(reply.body.projects.map((p: { project_id: string }) => p.project_id)).toEqual([api.id]);
    expect(Object.fromEntries(reply.body.categories.map((c: { category: string; used: number }) => [c.category, c.used]))).toEqual(expectedApi);
    const both = await owner.client.get(`/v1/usage?project=${api.id}&project=${shop.id}`);
    expect(both.body.projects).toHaveLength(2);
    expect((await owner.client.get('/v1/usage?project=0123456789abcdef01234567')).status).toBe(404);
    const unknown = await owner.client.get('/v1/usage?month=2020-01');
    expect([unknown.status, unknown.body.code]).toEqual([400, 'invalid_request']);
  });

  test('another organisation sees only its own usage; it cannot name ours', async () => {
    const stranger = await signUp(h, 'stranger');
    const reply = await stranger.client.get('/v1/usage');
    expect(reply.status).toBe(200);
    expect(reply.body.projects).toEqual([]);
    expect(reply.body.categories.every((c: { used: number }) => c.used === 0)).toBe(true);
    expect(reply.body.caveat).toEqual(expect.any(String));
    const ours = await stranger.client.get(`/v1/usage?project=${shop.id}`);
    expect([ours.status, ours.body.code]).toEqual([404, 'not_found']);
  });

  test('feedback posted to the API counts like feedback from an SDK', async () => {
    const project = await createProject(owner);
    expect((await owner.client.post('/v1/feedback', { project_id: project.id, message: 'the export button does nothing' })).status).toBe(201);
    const usage: Usage = (await owner.client.get(`/v1/usage?project=${project.id}`)).body;
    expect(usedOf(usage, 'feedback')).toBe(1);
  });

  test('items dropped from accepted requests are counted by category and reason, apart from what was used', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const kept = errorEvent();
    // one valid event beside an event that is not JSON, one over the 1 MiB event limit, and a log container holding a number
    const body = envelope({ event_id: kept.event_id }, [
      { type: 'event', payload: kept },
      { type: 'event', payload: '{"event_id": ' },
      { type: 'event', payload: JSON.stringify(errorEvent({ extra: { blob: 'x'.repeat(1024 * 1024) } })) },
      { type: 'log', payload: { items: [7] } },
    ]);
    await sentry(project, body);
    // an OTLP export with one good span and one whose ids are malformed
    const traceId = hex(16);
    const spans = otlpTraces({ api: [{ traceId, id: hex(8), name: 'GET /', kind: 'server', startMs: Date.now() - 10, durationMs: 5 }] });
    const exported = spans.resourceSpans[0]!.scopeSpans[0]!.spans;
    exported.push({ ...exported[0]!, spanId: 'not-hex' });
    await otlp(project, 'traces', spans);

    const usage = await eventually(async () => {
      const reply = (await owner.client.get(`/v1/usage?project=${project.id}`)).body;
      return reply.dropped.length === 4 && usedOf(reply, 'spans') === 1 ? reply : undefined;
    }, 'the dropped items counted');
    const expected = [
      { category: 'errors', reason: 'invalid', quantity: 1 },
      { category: 'errors', reason: 'too_large', quantity: 1 },
      { category: 'logs', reason: 'invalid', quantity: 1 },
      { category: 'spans', reason: 'invalid', quantity: 1 },
    ];
    expect(usage.dropped).toEqual(expected);
    expect(usage.projects).toEqual([expect.objectContaining({ project_id: project.id, dropped: expected })]);
    expect(usedOf(usage, 'errors')).toBe(1);
    expect(usedOf(usage, 'logs')).toBe(0);
    // the organisation's totals hold them too, and projects that dropped nothing list none
    const all = (await owner.client.get('/v1/usage')).body;
    expect(all.dropped).toEqual(expected);
    expect(all.projects.find((p: { project_id: string }) => p.project_id === shop.id).dropped).toEqual([]);
  });

  test('a DSN cannot read usage (403); no credential is 401', async () => {
    const dsn = await h.api.with({ authorization: `DSN ${shop.publicKey}` }).get('/v1/usage');
    expect([dsn.status, dsn.body.code]).toEqual([403, 'forbidden']);
    const anonymous = await h.api.get('/v1/usage');
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'unauthenticated']);
  });
});

test('an unknown or repeated category in PLAN_INCLUDED stops the API at boot, each one named', () => {
  const redis = new Redis({ lazyConnect: true });
  const config = loadConfig({ MONGO_URL: process.env.TEST_MONGO_URL, REDIS_URL: process.env.TEST_REDIS_URL, PLAN_INCLUDED: 'errors=10,replay=5,errors=3,spans=1' });
  expect(() => createApiApp({ config, logger: createLogger('silent'), redis })).toThrow(/PLAN_INCLUDED: unknown category "replay"; "errors" given twice/);
  redis.disconnect();
});
