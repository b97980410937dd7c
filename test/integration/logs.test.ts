/**
 * Log search and log patterns over logs sent as an OTLP/JSON exporter sends them, with controlled
 * timestamps.
 */
import { randomBytes } from 'node:crypto';
import { signUp, type Account } from '../support/factories/accounts.js';
import { otlpLogs, projectWithDsn, type OtlpLogLine, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });

const traceId = randomBytes(16).toString('hex');
/** Two hours ago, on the hour, plus ten minutes: the window is known exactly. */
const t0 = Math.floor((Date.now() - 2 * 3_600_000) / 3_600_000) * 3_600_000 + 10 * 60_000;

/** A line of the shared shape, in this file's trace when `trace` is set. */
type LogSpec = Omit<OtlpLogLine, 'traceId'> & { trace?: boolean };

const lines: LogSpec[] = [
  { service: 'checkout', body: 'Payment declined for order 1001', level: 'error', at: t0, attributes: { 'customer.tier': 'gold' }, trace: true },
  { service: 'checkout', body: 'Payment accepted for order 1002', level: 'info', at: t0 + 60_000 },
  { service: 'auth', body: 'User 42 logged in from 10.0.0.1', level: 'info', at: t0 + 120_000 },
  { service: 'auth', body: 'User 7 logged in from 10.0.0.2', level: 'info', at: t0 + 180_000 },
  { service: 'checkout', body: 'User 9 logged in from 10.0.0.3', level: 'warn', at: t0 + 240_000 },
  { service: 'checkout', body: 'Payment declined for order 1003', level: 'error', at: t0 + 300_000, attributes: { 'customer.tier': 'silver' } },
];

async function send(logs: LogSpec[]) {
  const body = otlpLogs(logs.map(({ trace, ...line }) => ({ ...line, ...(trace && { traceId }) })));
  const reply = await h.ingest.request('POST', '/v1/logs', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

const window = () => `project=${project.id}&from=${t0 - 60_000}&to=${t0 + 3_600_000}`;
const bodies = async (filters: string) => {
  const reply = await owner.client.get(`/v1/logs?${window()}&${filters}`);
  expect(reply.status).toBe(200);
  return reply.body.data.map((line: { body: string }) => line.body);
};

beforeAll(async () => {
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  await send(lines);
  await eventually(async () => ((await owner.client.get(`/v1/logs?${window()}`)).body.data?.length === lines.length ? true : undefined), 'every line stored');
});

describe('GET /v1/logs', () => {
  test('lines newest first, each with its fields', async () => {
    const reply = await owner.client.get(`/v1/logs?${window()}`);
    expect(reply.body.data.map((line: { body: string }) => line.body)).toEqual([...lines].reverse().map((line) => line.body));
    expect(reply.body.data.at(-1)).toMatchObject({
      project_id: project.id,
      timestamp: new Date(t0).toISOString(),
      service: 'checkout',
      level: 'error',
      severity_number: 17,
      body: 'Payment declined for order 1001',
      trace_id: traceId,
      attributes: { 'customer.tier': 'gold' },
      pattern_id: expect.any(String),
    });
  });

  test('every word of q must match, in any case; filters by service, level, trace and attribute', async () => {
    expect(await bodies('q=payment%20DECLINED')).toEqual(['Payment declined for order 1003', 'Payment declined for order 1001']);
    expect(await bodies('q=declined%20accepted')).toEqual([]);
    expect(await bodies('q=logged&service=auth')).toEqual(['User 7 logged in from 10.0.0.2', 'User 42 logged in from 10.0.0.1']);
    expect(await bodies('level=warn')).toEqual(['User 9 logged in from 10.0.0.3']);
    expect(await bodies(`trace_id=${traceId.toUpperCase()}`)).toEqual(['Payment declined for order 1001']);
    expect(await bodies('attribute=customer.tier:silver')).toEqual(['Payment declined for order 1003']);
    expect(await bodies('service=checkout&level=error&q=order')).toHaveLength(2);
  });

  test('pages follow one another without repeats; the window bounds the lines; bad filters are refused', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const reply: { body: { data: { body: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/logs?${window()}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...reply.body.data.map((line) => line.body));
      cursor = reply.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...lines].reverse().map((line) => line.body));
    const early = await owner.client.get(`/v1/logs?project=${project.id}&from=${t0}&to=${t0 + 60_000}`);
    expect(early.body.data.map((line: { body: string }) => line.body)).toEqual(['Payment declined for order 1001']);
    for (const bad of ['level=loud', 'trace_id=xyz', 'attribute=nocolon']) {
      const reply = await owner.client.get(`/v1/logs?${bad}`);
      expect({ bad, status: reply.status, code: reply.body.code }).toEqual({ bad, status: 400, code: 'validation_failed' });
    }
  });
});

describe('GET /v1/logs/patterns', () => {
  test('lines differing only in their variables share a Drain template, counted in the window with levels and services', async () => {
    const reply = await owner.client.get(`/v1/logs/patterns?${window()}`);
    expect(reply.status).toBe(200);
    const [login, payment] = reply.body.data;
    expect(reply.body.data).toHaveLength(2);
    expect(login).toMatchObject({
      template: 'User <*> logged in from <*>',
      count: 3,
      levels: { info: 2, warn: 1 },
      services: ['auth', 'checkout'],
      example: 'User 42 logged in from 10.0.0.1',
      first_seen: new Date(t0 + 120_000).toISOString(),
      last_seen: new Date(t0 + 240_000).toISOString(),
    });
    // "declined" and "accepted" differ in one word of five: the template widens over it
    expect(payment).toMatchObject({ template: 'Payment <*> for order <*>', count: 3, levels: { error: 2, info: 1 }, services: ['checkout'], example: 'Payment declined for order 1001' });
    // each line carries its pattern's id
    const lineIds = (await owner.client.get(`/v1/logs?${window()}&q=logged`)).body.data.map((line: { pattern_id: string }) => line.pattern_id);
    expect(new Set(lineIds)).toEqual(new Set([login.id]));
    const auth = await owner.client.get(`/v1/logs/patterns?${window()}&service=auth`);
    expect(auth.body.data).toEqual([expect.objectContaining({ id: login.id, count: 2, services: ['auth'] })]);
  });

  test('another organisation sees no lines and no patterns, and naming the project answers like a missing one', async () => {
    const stranger = await signUp(h, 'stranger');
    for (const path of ['/v1/logs', '/v1/logs/patterns']) {
      expect((await stranger.client.get(`${path}?from=${t0 - 60_000}&to=${t0 + 3_600_000}`)).body.data).toEqual([]);
      const named = await stranger.client.get(`${path}?${window()}`);
      expect(named.status).toBe(404);
      expect(named.body.code).toBe('not_found');
    }
  });
});

describe('a 366-day window', () => {
  const DAY_MS = 86_400_000;
  /** Two days before the other lines: the year's logs lie on two days. */
  const earlier: LogSpec[] = [0, 1, 2].map((i) => ({ service: 'cache', body: `Cache warmed in ${10 + i} ms`, level: 'info', at: t0 - 2 * DAY_MS + i * 60_000 }));
  const year = () => {
    const now = Date.now();
    return `project=${project.id}&from=${now - 366 * DAY_MS}&to=${now}`;
  };
  const timed = async (path: string) => {
    const started = Date.now();
    const reply = await owner.client.get(path);
    return { reply, ms: Date.now() - started };
  };

  beforeAll(async () => {
    await send(earlier);
    await eventually(async () => ((await owner.client.get(`/v1/logs?${year()}&service=cache`)).body.data?.length === earlier.length ? true : undefined), 'the earlier lines stored');
  });

  test('a search matching nothing reads only the hours that hold logs: it answers in well under 3 s', async () => {
    const { reply, ms } = await timed(`/v1/logs?${year()}&q=nowhere-to-be-found`);
    expect(reply.status).toBe(200);
    expect(ms).toBeLessThan(3000);
    expect(reply.body).toEqual({ data: [], next_cursor: null });
    const all = await timed(`/v1/logs?${year()}&limit=200`);
    expect(all.ms).toBeLessThan(3000);
    expect(all.reply.body.data).toHaveLength(lines.length + earlier.length);
  });

  test('the patterns of both days, in well under 3 s', async () => {
    const { reply, ms } = await timed(`/v1/logs/patterns?${year()}`);
    expect(reply.status).toBe(200);
    expect(ms).toBeLessThan(3000);
    const counts = Object.fromEntries(reply.body.data.map((pattern: { template: string; count: number }) => [pattern.template, pattern.count]));
    expect(counts).toEqual({ 'User <*> logged in from <*>': 3, 'Payment <*> for order <*>': 3, 'Cache warmed in <*> ms': 3 });
  });
});
