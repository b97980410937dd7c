/**
 * Property-based fuzzing of every JSON API operation the OpenAPI document lists. The operations come from
 * the served document itself, so a new route is fuzzed without editing this file. For each one, requests
 * are generated from its parameter and body schemas (real ids, other organisations' ids, malformed ids;
 * valid, out-of-range, wrong-typed and unknown query parameters; valid, mutated, random, hostile and
 * over-deep bodies) and sent with an owner's API key, a member's key, a DSN or no credential. Every answer
 * must be below 500, a status the document lists for that operation or one of the contract's generic
 * refusals, and every 4xx must carry the error body.
 */
import fc, { type Arbitrary } from 'fast-check';
import { type Harness, useHarness } from '../support/harness.js';
import type { Client, Reply } from '../support/http.js';
import { createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn } from '../support/factories/telemetry.js';
import { hugeNumber, mutated, nestedText, oddString, operatorKeyed, outOfBounds, valueOf, type JsonSchema, type Overrides } from '../support/json-schema-arbitrary.js';

/** CONTRACT.md's refusals any route may give: malformed, unauthenticated, forbidden, missing, clash, too large, wrong type, throttled. */
const GENERIC_STATUSES = [400, 401, 403, 404, 409, 413, 415, 429];
const RUNS_PER_OPERATION = 14;

let h: Harness;
useHarness((started) => (h = started), {
  RATE_LIMIT_LOGIN: '100000',
  RATE_LIMIT_LOGIN_ADDRESS: '100000',
  RATE_LIMIT_REGISTER: '100000',
  RATE_LIMIT_API: '100000',
  CHECKIN_RATE_LIMIT_PER_MINUTE: '100000',
});

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: 'path' | 'query'; required: boolean; schema: JsonSchema }[];
  requestBody?: { content: { 'application/json': { schema: JsonSchema } } };
  responses: Record<string, unknown>;
}

type Credential = 'owner' | 'member' | 'dsn' | 'none' | 'bogus';

interface FuzzRequest {
  credential: Credential;
  path: string;
  query: [string, string][];
  body?: { text: string; contentType: string };
}

let owner: Account;
let ownerKey: string;
let memberKey: string;
let dsnKey: string;
let operations: Operation[];
/** Path parameter name → ids of real objects: this organisation's first, then another organisation's. */
const ids: Record<string, string[]> = {};

const remember = (name: string, ...values: (string | undefined)[]) => (ids[name] ??= []).push(...values.filter((v): v is string => Boolean(v)));

async function created(client: Client, path: string, body: unknown): Promise<{ id: string } & Record<string, any>> {
  const reply = await client.post(path, body);
  if (reply.status !== 201) throw new Error(`${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

/** One of each object a path can name, in the account's organisation. */
async function plantObjects(account: Account) {
  const client = account.client;
  const project = await projectWithDsn(account, h.ingest.baseUrl);
  const spareDsn = await created(client, `/v1/projects/${project.id}/dsns`, { label: 'spare' });
  const spareKey = await createApiKey(account, 'member');
  const invited = await created(client, '/v1/members', { email: `invited-${project.number}@example.test`, role: 'member' });
  const check = await created(client, '/v1/cron/checks', { project_id: project.id, name: 'nightly', schedule: { type: 'interval', value: 1, unit: 'day' } });
  const monitor = await created(client, '/v1/uptime/monitors', { project_id: project.id, name: 'home', url: 'https://shop.example/health' });
  const destination = await created(client, '/v1/alert-destinations', { type: 'webhook', url: 'https://hooks.example.com/sluice' });
  const dashboard = await created(client, '/v1/dashboards', { name: 'overview' });
  const deployment = await created(client, '/v1/deployments', { project_id: project.id, version: 'shop@1.0.0' });
  remember('projectID', project.id);
  remember('keyID', spareDsn.id, spareKey.id);
  remember('memberID', invited.id);
  remember('checkID', check.id);
  remember('token', String(check.ping_url).split('/').pop());
  remember('monitorID', monitor.id);
  remember('destinationID', destination.id);
  remember('dashboardID', dashboard.id);
  remember('deploymentID', deployment.id);
  return project;
}

beforeAll(async () => {
  owner = await signUp(h);
  ownerKey = (await createApiKey(owner, 'owner')).secret;
  memberKey = (await createApiKey(owner, 'member')).secret;
  dsnKey = (await plantObjects(owner)).publicKey;
  await plantObjects(await signUp(h, 'other'));
  operations = Object.entries((await h.api.get('/v1/openapi.json')).body.paths as Record<string, Record<string, Operation>>).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ ...operation, method: method.toUpperCase(), path })),
  );
}, 60_000);

/** Percent-encodes every byte but the unreserved ones, so any text (lone surrogates too) can be a path segment. */
const segment = (text: string) => [...Buffer.from(text)].map((byte) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).padStart(2, '0')}`)).join('');

/** Short hostile text: what fits in a URL without tripping the HTTP server's header size limit. */
const shortOdd = () => oddString().filter((text) => text.length <= 512);

const malformedId = () =>
  fc.oneof(fc.constantFrom('000000000000000000000000', 'ffffffffffffffffffffffff', '-1', '0', 'null', 'undefined', '$where', 'a.b', '{"$gt":""}', 'x'.repeat(300)), shortOdd());

function pathValue(name: string, schema: JsonSchema): Arbitrary<string> {
  const real = ids[name]?.length ? [fc.constantFrom(...ids[name]!)] : [];
  return fc.oneof(...real, ...real, valueOf(schema).map(String), malformedId());
}

const serialise = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value));

/**
 * `from` and `to`: ISO-8601 or epoch milliseconds in the last few days (a view reads each hour of its
 * window, so a year-long one takes seconds), and edges: the epoch, the last date a Date holds, past it.
 */
const instant = () =>
  fc.oneof(
    fc.integer({ min: Date.now() - 3 * 86_400_000, max: Date.now() + 3_600_000 }).map((ms) => new Date(ms).toISOString()),
    fc.integer({ min: Date.now() - 3 * 86_400_000, max: Date.now() }).map(String),
    fc.constantFrom('0', '8640000000000000', '8640000000000001', '18446744073709552000', '2024-02-30T00:00:00Z', '-1', '1e3'),
  );

const projectIds = () => fc.constantFrom(...ids.projectID!);
/** Properties and query parameters that name a project get real ids (ours and another organisation's) as often as not. */
const overrides = (): Overrides => ({
  project_id: fc.oneof(projectIds(), fc.string()),
  project: fc.oneof(projectIds(), fc.array(projectIds(), { maxLength: 3 }), fc.string()),
  project_ids: fc.array(projectIds(), { maxLength: 3 }),
  from: instant(),
  to: instant(),
});

function queryPairs(operation: Operation): Arbitrary<[string, string][]> {
  const params = operation.parameters.filter((p) => p.in === 'query');
  const each = params.map((param) => {
    const valid = (overrides()[param.name] ?? valueOf(param.schema)).map((value): [string, string][] => (Array.isArray(value) ? value.map((v) => [param.name, serialise(v)]) : [[param.name, serialise(value)]]));
    const hostile = outOfBounds(param.schema)
      .filter((value) => serialise(value).length <= 512)
      .map((value): [string, string][] => [[param.name, serialise(value)]]);
    const operator = fc.constantFrom<[string, string][]>([[`${param.name}[$ne]`, '']], [[`${param.name}.$gt`, '']], [[param.name, '{"$gt":""}']]);
    return fc.oneof({ arbitrary: fc.constant<[string, string][]>([]), weight: 3 }, { arbitrary: valid, weight: 3 }, hostile, operator);
  });
  const unknown = fc.option(fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), shortOdd()), { freq: 5 }).map((pair): [string, string][] => (pair ? [pair] : []));
  return fc.tuple(unknown, ...each).map((lists) => lists.flat());
}

const json = (value: unknown) => ({ text: JSON.stringify(value) ?? 'null', contentType: 'application/json' });

function bodyOf(operation: Operation): Arbitrary<FuzzRequest['body']> {
  const schema = operation.requestBody?.content['application/json'].schema;
  const hostile = [
    fc.jsonValue({ maxDepth: 4 }).map(json),
    operatorKeyed().map(json),
    fc.tuple(fc.integer({ min: 30, max: 400 }), fc.constantFrom('object' as const, 'array' as const), fc.boolean()).map(([depth, kind, wrapped]) => {
      const deep = nestedText(depth, kind);
      return { text: wrapped ? `{"name":${deep},"widgets":${deep}}` : deep, contentType: 'application/json' };
    }),
    fc.constantFrom('not json', '{"a":1e999}', '{"a":', '\u0000', '{"__proto__":{"role":"owner"}}', '[]', 'null', '"text"', '{"a":1,"a":2}').map((text) => ({ text, contentType: 'application/json' })),
    fc.oneof(oddString(), hugeNumber()).map((value) => json({ name: value, message: value, email: value, url: value })),
  ];
  // fetch sends no body with GET
  if (operation.method === 'GET') return fc.constant(undefined);
  if (!schema) return fc.oneof({ arbitrary: fc.constant(undefined), weight: 12 }, ...hostile);
  const valid = valueOf(schema, overrides());
  return fc.oneof(
    { arbitrary: valid.map(json), weight: 4 },
    { arbitrary: mutated(valid, schema).map(json), weight: 6 },
    { arbitrary: valid.map((value) => ({ text: JSON.stringify(value), contentType: 'text/plain' })), weight: 1 },
    ...hostile,
  );
}

function requestsFor(operation: Operation): Arbitrary<FuzzRequest> {
  const pathParams = operation.parameters.filter((p) => p.in === 'path');
  const path = fc.tuple(...pathParams.map((p) => pathValue(p.name, p.schema))).map((values) =>
    pathParams.reduce((filled, param, i) => filled.replace(`{${param.name}}`, segment(values[i]!)), operation.path),
  );
  const credential = fc.oneof(
    { arbitrary: fc.constant<Credential>('owner'), weight: 8 },
    fc.constantFrom<Credential>('member', 'dsn', 'none', 'bogus'),
  );
  return fc.record({ credential, path, query: queryPairs(operation), body: bodyOf(operation) });
}

function send(operation: Operation, request: FuzzRequest): Promise<Reply> {
  const client = {
    owner: h.api.with({ bearer: ownerKey }),
    member: h.api.with({ bearer: memberKey }),
    dsn: h.api.with({ authorization: `DSN ${dsnKey}` }),
    none: h.api,
    bogus: h.api.with({ bearer: `slk_${'A'.repeat(43)}` }),
  }[request.credential];
  const query = request.query.length ? `?${new URLSearchParams(request.query)}` : '';
  const headers: Record<string, string> = request.body ? { 'content-type': request.body.contentType } : {};
  return client.request(operation.method, `${request.path}${query}`, request.body?.text, headers);
}

/** What is wrong with an answer, or nothing. */
function violation(operation: Operation, reply: Reply): string | undefined {
  const documented = Object.keys(operation.responses).filter((key) => /^\d{3}$/.test(key)).map(Number);
  // the only 5xx allowed is one the document lists (a switched-off feature's 501), never 500 or 503
  if (reply.status >= 500 && !documented.includes(reply.status)) return `answered ${reply.status}: ${reply.text.slice(0, 300)}`;
  if (!documented.includes(reply.status) && !GENERIC_STATUSES.includes(reply.status)) return `undocumented status ${reply.status}: ${reply.text.slice(0, 300)}`;
  if (reply.status >= 400) {
    const body = reply.body as Record<string, unknown> | undefined;
    if (typeof body?.code !== 'string' || typeof body.message !== 'string' || typeof body.request_id !== 'string') return `a ${reply.status} without the error body: ${reply.text.slice(0, 300)}`;
  }
  return undefined;
}

const describeRequest = (request: FuzzRequest) => ({ ...request, body: request.body && { ...request.body, text: request.body.text.slice(0, 400) } });

test('every operation in the OpenAPI document answers hostile requests with documented statuses and error bodies, never 5xx', async () => {
  expect(operations.length).toBeGreaterThan(50);
  const failures: unknown[] = [];
  for (const operation of operations) {
    const result = await fc.check(
      fc.asyncProperty(requestsFor(operation), async (request) => {
        const problem = violation(operation, await send(operation, request));
        if (problem) throw new Error(problem);
      }),
      { numRuns: RUNS_PER_OPERATION, interruptAfterTimeLimit: 15_000 },
    );
    if (result.failed) {
      failures.push({
        operation: `${operation.method} ${operation.path}`,
        request: result.counterexample && describeRequest(result.counterexample[0]),
        problem: result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance),
        seed: result.seed,
      });
    }
  }
  expect(failures).toEqual([]);
}, 110_000);

test('a view asked for epoch milliseconds past what a date can hold answers 400, not 500', async () => {
  for (const to of ['18446744073709552000', '8640000000000001']) {
    const reply = await h.api.with({ bearer: ownerKey }).get(`/v1/endpoints/surges?to=${to}`);
    expect({ to, status: reply.status, code: reply.body.code, details: reply.body.details }).toEqual({
      to,
      status: 400,
      code: 'validation_failed',
      details: [{ path: 'query.to', message: 'must be ISO-8601 or epoch milliseconds' }],
    });
  }
});

test('a view asked for a window longer than a year (from the epoch, say) answers 400 at once instead of reading every hour since', async () => {
  const started = Date.now();
  const reply = await h.api.with({ bearer: ownerKey }).get('/v1/services?from=0');
  expect({ status: reply.status, code: reply.body.code, details: reply.body.details }).toEqual({
    status: 400,
    code: 'validation_failed',
    details: [{ path: 'query.from', message: 'at most 366 days before to' }],
  });
  expect(Date.now() - started).toBeLessThan(5_000);
  expect((await h.api.with({ bearer: ownerKey }).get(`/v1/services?from=${Date.now() - 86_400_000}`)).status).toBe(200);
});

test('keys starting with $ or holding dots are stored as plain data or refused with 400, and never change another document', async () => {
  const client = h.api.with({ bearer: ownerKey });
  const projectId = ids.projectID![0]!;
  const bystander = await created(client, '/v1/uptime/monitors', { project_id: projectId, name: 'bystander', url: 'https://shop.example/a' });
  const headers = { $where: 'sleep(100)', 'a.b': 'dotted', $set: 'plain' };
  const monitor = await created(client, '/v1/uptime/monitors', { project_id: projectId, name: 'operators', url: 'https://shop.example/b', headers });
  // the names are kept as plain data; the values are sealed and read back masked
  const masked = { $where: '[Filtered]', 'a.b': '[Filtered]', $set: '[Filtered]' };
  expect((await client.get(`/v1/uptime/monitors/${monitor.id}`)).body.headers).toEqual(masked);

  for (const body of [{ name: { $gt: '' } }, { $set: { name: 'taken over' } }, { 'name.first': 'x' }, { headers: { 'a.b': { $ne: null } } }]) {
    const reply = await client.patch(`/v1/uptime/monitors/${monitor.id}`, body);
    expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
  }
  expect((await client.get(`/v1/uptime/monitors/${monitor.id}`)).body).toEqual(expect.objectContaining({ name: 'operators', headers: masked }));
  expect((await client.get(`/v1/uptime/monitors/${bystander.id}`)).body).toEqual(expect.objectContaining({ name: 'bystander', headers: {} }));

  for (const params of [{ $where: '1' }, { 'a.b': 1 }, { filter: { $gt: '' } }]) {
    const reply = await client.post('/v1/dashboards', { name: 'operators', widgets: [{ title: 't', type: 'table', query: { view: 'issues', params }, layout: { x: 0, y: 0, w: 4, h: 2 } }] });
    expect({ params, status: reply.status }).toEqual({ params, status: 400 });
  }
  const listed = await client.get(`/v1/issues?project[$ne]=${projectId}`);
  expect({ status: listed.status, code: listed.body.code }).toEqual({ status: 400, code: 'invalid_request' });
});

test('U+0000, which the store cannot hold, is refused with 400 in a body or query and names nothing in a path, on every API', async () => {
  const client = h.api.with({ bearer: ownerKey });
  const projectId = ids.projectID![0]!;
  const before = (await client.get('/v1/projects')).body.data.length;
  const refusals = [
    await client.post('/v1/projects', { name: 'shop\u0000' }),
    await client.post('/v1/projects', { name: 'shop', platform: '\u0000' }),
    await client.patch(`/v1/projects/${projectId}`, { scrub_fields: ['a\u0000'] }),
    await client.post('/v1/dashboards', { name: 'd', widgets: [{ title: 't', type: 'table', query: { view: 'issues', params: { 'q\u0000': '1' } }, layout: { x: 0, y: 0, w: 4, h: 2 } }] }),
    await client.get(`/v1/issues?project=${projectId}&q=${encodeURIComponent('a\u0000b')}`),
    await client.get(`/v1/logs?project=${projectId}&q=%00`),
  ];
  expect(refusals.map((reply) => [reply.status, reply.body.code, reply.body.message])).toEqual(refusals.map(() => [400, 'invalid_request', 'text may not hold the NUL character (U+0000)']));
  expect((await client.get('/v1/projects')).body.data).toHaveLength(before);
  const { organization } = (await client.get('/v1/me')).body;
  const release = await fetch(`${h.api.baseUrl}/api/0/organizations/${organization.slug}/releases/${encodeURIComponent('shop@1\u0000')}/`, { headers: { authorization: `Bearer ${ownerKey}` } });
  expect(release.status).toBe(404);
  expect((await client.get(`/v1/checkins/${encodeURIComponent('\u0000')}`)).status).toBe(404);
});

test('single sign-on and AI routes document the 501 they answer while switched off', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  for (const [path, code] of [['/v1/settings/sso', 'sso_unavailable'], ['/v1/investigations', 'ai_unavailable']] as const) {
    const reply = await h.api.with({ bearer: ownerKey }).get(path);
    expect({ path, status: reply.status, code: reply.body.code }).toEqual({ path, status: 501, code });
    expect({ path, documented: doc.paths[path].get.responses['501']?.description }).toEqual({ path, documented: expect.stringContaining(code) });
  }
});

test('after the run the API still answers and is ready', async () => {
  expect((await h.api.get('/healthz')).status).toBe(200);
  expect((await h.api.get('/readyz')).status).toBe(200);
  expect((await h.api.with({ bearer: ownerKey }).get('/v1/me')).status).toBe(200);
});
