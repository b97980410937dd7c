/**
 * Views over whole hours read the hourly span and log rollups (views.ts, inWindowByWholeHour) and answer
 * exactly what the per-minute rollups answer: spans and logs spread over three whole hours and parts of
 * the hours around them are read both ways, the second time with the hourly rollups' `since` removed, so
 * that every hour is read by minute as for rollups written before hourly ones were kept.
 */
import { Types } from 'mongoose';
import { LogRollup, LogRollupHourly } from '../../src/shared/features/logs/model.js';
import { SpanRollup, SpanRollupHourly } from '../../src/shared/features/services/model.js';
import { RolledUpHours } from '../../src/shared/telemetry/rolled-up-hours.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { hex, otlpLogs, otlpTraces, projectWithDsn, type OtlpLogLine, type OtlpSpan, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });

const HOUR = 3_600_000;
/** The first of three whole hours, five hours ago; the data starts 40 minutes before it and ends 40 after them. */
const H = (Math.floor(Date.now() / HOUR) - 5) * HOUR;
const START = H - 40 * 60_000;
const SPREAD = 3 * HOUR + 80 * 60_000;
const TRACES = 60;
const LOGS = 90;

async function post(path: string, body: unknown) {
  const reply = await h.ingest.request('POST', path, JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

beforeAll(async () => {
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  const byService: Record<string, OtlpSpan[]> = { web: [], api: [] };
  for (let i = 0; i < TRACES; i++) {
    const traceId = hex(16);
    const at = START + Math.floor((i * SPREAD) / TRACES);
    const ids = { web: hex(8), call: hex(8), api: hex(8) };
    const failed = i % 5 === 0;
    byService.web!.push(
      { traceId, id: ids.web, name: 'GET /shop', kind: 'server', startMs: at, durationMs: 50 + i * 3, attributes: { 'http.route': '/shop', 'http.response.status_code': 200 } },
      { traceId, id: ids.call, parent: ids.web, name: 'GET', kind: 'client', startMs: at + 2, durationMs: 40 + i, ...(failed && { status: 'error' as const }), attributes: { 'http.request.method': 'GET', 'peer.service': 'api' } },
    );
    byService.api!.push(
      { traceId, id: ids.api, parent: ids.call, name: 'GET /items', kind: 'server', startMs: at + 3, durationMs: 30 + i, ...(failed && { status: 'error' as const }), attributes: { 'http.route': '/items', 'http.response.status_code': failed ? 500 : 200 } },
      { traceId, id: hex(8), parent: ids.api, name: 'SELECT items', kind: 'client', startMs: at + 5, durationMs: 5 + (i % 7), attributes: { 'db.system': 'postgresql', 'db.query.text': 'SELECT * FROM items' } },
    );
  }
  await post('/v1/traces', otlpTraces(byService));
  const lines: OtlpLogLine[] = Array.from({ length: LOGS }, (_, i) => ({
    service: i % 3 === 0 ? 'web' : 'api',
    body: i % 2 === 0 ? `cache miss for item ${i}` : `request ${i} took ${i * 3} ms`,
    level: i % 4 === 0 ? 'warn' : 'info',
    at: START + Math.floor((i * SPREAD) / LOGS),
  }));
  await post('/v1/logs', otlpLogs(lines));
  await eventually(async () => {
    const [services, patterns] = await Promise.all([owner.client.get(`/v1/services?${windowQuery()}`), owner.client.get(`/v1/logs/patterns?${windowQuery()}`)]);
    const requests = (services.body.data ?? []).reduce((sum: number, service: { requests: number }) => sum + service.requests, 0);
    const logs = (patterns.body.data ?? []).reduce((sum: number, pattern: { count: number }) => sum + pattern.count, 0);
    return requests === 2 * TRACES && logs === LOGS ? true : undefined;
  }, 'every span and log counted');
});

const windowQuery = (from = START - 60_000, to = START + SPREAD + 60_000) => `project=${project.id}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;

/** Every view that reads whole hours, and the lists that use the rollups to find their minutes. */
const reads = () => [
  `/v1/services?${windowQuery()}`,
  `/v1/services?${windowQuery(H, H + 3 * HOUR)}`,
  `/v1/services/map?${windowQuery()}`,
  `/v1/services/dependencies?${windowQuery()}`,
  `/v1/services/structure?${windowQuery()}`,
  `/v1/traffic?${windowQuery()}`,
  // hour-long steps from a whole hour: each hour read as one
  `/v1/traffic?${windowQuery(H - HOUR, H + 4 * HOUR)}&step=3600`,
  `/v1/logs/patterns?${windowQuery()}`,
  `/v1/logs/surges?${windowQuery()}`,
  `/v1/logs?${windowQuery()}&limit=40`,
  `/v1/traces?${windowQuery()}&limit=40`,
];

test('views over whole hours read the hourly rollups and answer what the minutes answer', async () => {
  const orgId = new Types.ObjectId(owner.organization.id);
  // the hourly rollups hold the same counts in far fewer documents
  const [minuteSpans, hourlySpans, minuteLogs, hourlyLogs] = await Promise.all([
    SpanRollup.countDocuments({ orgId }),
    SpanRollupHourly.countDocuments({ orgId }),
    LogRollup.countDocuments({ orgId }),
    LogRollupHourly.countDocuments({ orgId }),
  ]);
  expect(hourlySpans).toBeGreaterThan(0);
  expect(hourlySpans).toBeLessThan(minuteSpans);
  expect(hourlyLogs).toBeGreaterThan(0);
  expect(hourlyLogs).toBeLessThan(minuteLogs);

  const byHour = [];
  for (const path of reads()) {
    const reply = await owner.client.get(path);
    expect(reply.status).toBe(200);
    byHour.push(reply.body);
  }
  const services = byHour[0].data.map((service: { name: string; requests: number; errors: number }) => [service.name, service.requests, service.errors]);
  expect(services).toEqual([
    ['api', TRACES, TRACES / 5],
    ['web', TRACES, 0],
  ]);

  // without their `since`, the hourly rollups are not known to hold any hour whole: every hour is read by minute
  const removed = await RolledUpHours.deleteMany({ orgId, rollup: { $in: [SpanRollupHourly.collection.collectionName, LogRollupHourly.collection.collectionName] }, since: { $exists: true } });
  expect(removed.deletedCount).toBe(2);
  for (const [index, path] of reads().entries()) {
    const reply = await owner.client.get(path);
    expect(reply.status).toBe(200);
    expect({ path, body: reply.body }).toEqual({ path, body: byHour[index] });
  }
});
