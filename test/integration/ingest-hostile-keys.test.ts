/**
 * Ingest against JSON nested past its limits and keys that look like MongoDB operators or paths
 * (`$where`, `a.b`) in every free-form part of an event and in OTLP attribute keys: nothing answers
 * 5xx, and what is stored keeps those keys as plain data, read back through the API.
 */
import fc from 'fast-check';
import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, nanos, otlpTraces, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { nestedText } from '../support/json-schema-arbitrary.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
});

const envelopePath = () => `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`;
const otlpHeaders = () => ({ 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const reply = await h.ingest.request('POST', path, body, headers);
  if (reply.status >= 400) expect(reply.body).toEqual(expect.objectContaining({ code: expect.any(String), request_id: expect.any(String) }));
  return reply;
}

/** A key a careless store would take for an operator or a path: `$…`, dotted, or both. */
const hostileKey = () =>
  fc.oneof(
    fc.constantFrom('$where', '$gt', '$set', 'a.b', 'x.$y', '$.', '..', '__proto__', 'constructor'),
    fc.string({ minLength: 1, maxLength: 10 }).map((name) => `$${name}`),
    fc.tuple(fc.string({ minLength: 1, maxLength: 6 }), fc.string({ minLength: 1, maxLength: 6 })).map(([a, b]) => `${a}.${b}`),
  );

/** Three distinct hostile keys, each with a value that would be an operator expression if read as one. */
const hostileRecord = () =>
  fc.uniqueArray(hostileKey(), { minLength: 3, maxLength: 3 }).map((keys) => Object.fromEntries(keys.map((key, i) => [key, [{ $gt: '' }, 'plain', { 'c.d': i }][i]])));

describe('JSON nested past the limit', () => {
  test('an event nested deeper than 128 levels anywhere is refused with 400, one within it is stored with 200', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 2000 }), fc.constantFrom('extra', 'contexts', 'tags', 'user'), fc.constantFrom('object' as const, 'array' as const), async (depth, field, kind) => {
        const event = errorEvent();
        const text = JSON.stringify({ ...event, [field]: { deep: '__DEEP__' } }).replace('"__DEEP__"', nestedText(depth, kind));
        const reply = await post(envelopePath(), `${JSON.stringify({ event_id: event.event_id })}\n{"type":"event"}\n${text}\n`);
        // the deep value sits three levels under the event (event → field → deep)
        expect({ depth, status: reply.status }).toEqual({ depth, status: depth + 2 > 128 ? 400 : 200 });
      }),
      { numRuns: 30 },
    );
  });

  test('OTLP JSON attribute values nested deeper than 16 levels are refused with 400, and a deep body is never a 5xx', async () => {
    const kvlist = (depth: number): unknown => (depth === 0 ? { stringValue: 'leaf' } : { kvlistValue: { values: [{ key: 'k', value: kvlist(depth - 1) }] } });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 400 }), fc.constantFrom('traces', 'logs'), async (depth, signal) => {
        const attributes = [{ key: 'deep', value: kvlist(depth) }];
        const body =
          signal === 'traces'
            ? { resourceSpans: [{ resource: { attributes }, scopeSpans: [{ spans: [{ traceId: hex(16), spanId: hex(8), name: 'deep', kind: 1, startTimeUnixNano: nanos(Date.now()), endTimeUnixNano: nanos(Date.now() + 1), attributes }] }] }] }
            : { resourceLogs: [{ resource: { attributes }, scopeLogs: [{ logRecords: [{ timeUnixNano: nanos(Date.now()), body: { stringValue: 'deep' }, attributes }] }] }] };
        const reply = await post(`/v1/${signal}`, JSON.stringify(body), otlpHeaders());
        expect({ depth, status: reply.status }).toEqual({ depth, status: depth > 16 ? 400 : 200 });
      }),
      { numRuns: 30 },
    );
    for (const text of [nestedText(5000, 'array'), `{"resourceSpans":${nestedText(3000, 'array')}}`]) {
      expect((await post('/v1/traces', text, otlpHeaders())).status).toBe(400);
    }
    // deep JSON under a field OTLP does not define is ignored, as the OTLP/JSON mapping says
    const ignored = await post('/v1/logs', `{"resourceLogs":[{"scopeLogs":[{"logRecords":[${nestedText(3000, 'object')}]}]}]}`, otlpHeaders());
    expect([200, 400]).toContain(ignored.status);
  });
});

describe('operator and dotted keys are kept as data', () => {
  test('in an event’s extra, contexts, tags and user: stored and read back through the API exactly', async () => {
    const samples = fc.sample(fc.record({ extra: hostileRecord(), contexts: hostileRecord(), tags: hostileRecord(), user: hostileRecord() }), { numRuns: 4, seed: 20_240_601 });
    const sent = samples.map((sample, i) => {
      const tags = Object.fromEntries(Object.keys(sample.tags).map((key) => [key, `value ${i}`]));
      const contexts = { ...sample.contexts, app: { $where: 'app', 'build.number': i } };
      const user = { id: `user-${i}`, ...sample.user };
      return { event: errorEvent({ extra: sample.extra, contexts, tags, user }, { type: `HostileKeys${i}Error` }), extra: sample.extra, tags, contexts, user };
    });
    for (const { event } of sent) expect((await post(envelopePath(), envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))).status).toBe(200);

    for (const { event, extra, tags, contexts, user } of sent) {
      const stored = await eventually(async () => {
        const issues = (await owner.client.get(`/v1/issues?project=${project.id}&q=${event.exception.values[0]!.type}`)).body.data;
        if (!issues?.length) return undefined;
        return (await owner.client.get(`/v1/issues/${issues[0].id}`)).body.latest_event ?? undefined;
      }, `the event ${event.event_id}`);
      expect(stored.event_id).toBe(event.event_id);
      expect(stored.extra).toEqual(extra);
      expect(stored.contexts).toEqual(expect.objectContaining(contexts));
      expect(stored.tags).toEqual(expect.objectContaining(tags));
      expect(stored.user).toEqual(expect.objectContaining(user));
    }
  });

  test('in OTLP span and log attribute keys: stored and read back through the API', async () => {
    // OTLP drops an attribute named __proto__ on purpose (decode.ts), so it is not one of the keys here
    const keys = fc.sample(fc.uniqueArray(hostileKey().filter((key) => key !== '__proto__'), { minLength: 4, maxLength: 4 }), { numRuns: 1, seed: 7 })[0]!;
    const attributes = Object.fromEntries(keys.map((key, i) => [key, `v${i}`]));
    const traceId = hex(16);
    const spanId = hex(8);
    const spans = otlpTraces({ checkout: [{ traceId, id: spanId, name: 'hostile keys', kind: 'server', startMs: Date.now(), durationMs: 5, attributes }] });
    expect((await post('/v1/traces', JSON.stringify(spans), otlpHeaders())).status).toBe(200);
    const marker = `hostile-keys-${hex(4)}`;
    const logs = {
      resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'checkout' } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: nanos(Date.now()), severityNumber: 9, body: { stringValue: marker }, attributes: keys.map((key, i) => ({ key, value: { stringValue: `v${i}` } })) }] }] }],
    };
    expect((await post('/v1/logs', JSON.stringify(logs), otlpHeaders())).status).toBe(200);

    const trace = await eventually(async () => {
      const reply = await owner.client.get(`/v1/traces/${traceId}`);
      return reply.status === 200 && reply.body.spans.length === 1 ? reply.body : undefined;
    }, 'the trace');
    expect(trace.spans[0].attributes).toEqual(expect.objectContaining(attributes));
    const line = await eventually(async () => (await owner.client.get(`/v1/logs?project=${project.id}&q=${marker}`)).body.data?.[0], 'the log line');
    expect(line.attributes).toEqual(expect.objectContaining(attributes));
  });
});

describe('U+0000, which the store cannot hold', () => {
  test('is stored as U+FFFD wherever an event or an OTLP span or log line carries it, in texts and keys', async () => {
    const type = `Nul${hex(4)}Error`;
    const event = errorEvent({ message: 'before\u0000after', tags: { 'region\u0000': 'eu\u0000west' }, extra: { 'note\u0000': ['a\u0000', { 'b\u0000': 'c\u0000' }] } }, { type, value: 'bad\u0000value' });
    expect((await post(envelopePath(), envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))).status).toBe(200);
    // "\\u0000" in JSON is a backslash and the text u0000: kept as written
    const literal = errorEvent({ message: 'path C:\\u0000\\x' }, { type: `${type}Literal` });
    expect((await post(`/api/${project.number}/store/?sentry_key=${project.publicKey}`, JSON.stringify(literal))).status).toBe(200);
    const stored = await eventually(async () => {
      const issues = (await owner.client.get(`/v1/issues?project=${project.id}&q=${type}`)).body.data;
      if (issues?.length !== 2) return undefined;
      return Promise.all(issues.map(async (issue: { id: string }) => (await owner.client.get(`/v1/issues/${issue.id}`)).body.latest_event));
    }, 'both events');
    const nul = stored.find((e: { event_id: string }) => e.event_id === event.event_id);
    expect(nul.message).toBe('before\uFFFDafter');
    expect(nul.exception[0].value).toBe('bad\uFFFDvalue');
    expect(nul.tags).toEqual(expect.objectContaining({ 'region\uFFFD': 'eu\uFFFDwest' }));
    expect(nul.extra).toEqual({ 'note\uFFFD': ['a\uFFFD', { 'b\uFFFD': 'c\uFFFD' }] });
    expect(stored.find((e: { event_id: string }) => e.event_id === literal.event_id).message).toBe('path C:\\u0000\\x');

    const traceId = hex(16);
    const spans = otlpTraces({ checkout: [{ traceId, id: hex(8), name: 'GET /nul\u0000', kind: 'server', startMs: Date.now(), durationMs: 5, attributes: { 'user\u0000id': 'u\u00001' } }] });
    expect((await post('/v1/traces', JSON.stringify(spans), otlpHeaders())).status).toBe(200);
    const marker = `nul-${hex(4)}`;
    const logs = { resourceLogs: [{ scopeLogs: [{ logRecords: [{ timeUnixNano: nanos(Date.now()), severityNumber: 9, body: { stringValue: `${marker}\u0000end` } }] }] }] };
    expect((await post('/v1/logs', JSON.stringify(logs), otlpHeaders())).status).toBe(200);
    const trace = await eventually(async () => {
      const reply = await owner.client.get(`/v1/traces/${traceId}`);
      return reply.status === 200 && reply.body.spans.length === 1 ? reply.body : undefined;
    }, 'the trace');
    expect(trace.spans[0]).toMatchObject({ name: 'GET /nul\uFFFD', attributes: expect.objectContaining({ 'user\uFFFDid': 'u\uFFFD1' }) });
    const line = await eventually(async () => (await owner.client.get(`/v1/logs?project=${project.id}&q=${marker}`)).body.data?.[0], 'the log line');
    expect(line.body).toBe(`${marker}\uFFFDend`);
  });
});

test('after all that, ingest and the API still answer and are ready', async () => {
  expect((await h.ingest.get('/readyz')).status).toBe(200);
  expect((await h.api.get('/readyz')).status).toBe(200);
  expect((await post(envelopePath(), envelope({}, [{ type: 'event', payload: errorEvent() }]))).status).toBe(200);
});
