import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { type Harness, useHarness } from '../support/harness.js';
import { signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';

let h: Harness;
let project: ProjectWithDsn;
useHarness((started) => (h = started));
beforeAll(async () => {
  project = await projectWithDsn(await signUp(h), h.ingest.baseUrl);
});

async function post(path: string, body: Uint8Array, headers: Record<string, string> = {}) {
  const response = await fetch(`${h.ingest.baseUrl}${path}`, { method: 'POST', body, headers });
  const text = await response.text();
  return { status: response.status, text };
}

/** Every refusal is one of the documented statuses with the error body; nothing is a 5xx. */
function expectDocumented(reply: { status: number; text: string }, allowed: number[]) {
  expect(allowed).toContain(reply.status);
  if (reply.status >= 400) expect(JSON.parse(reply.text)).toEqual(expect.objectContaining({ code: expect.any(String), request_id: expect.any(String) }));
}

const validEnvelope = () =>
  Buffer.from(
    envelope({ event_id: 'a'.repeat(32), sent_at: new Date().toISOString() }, [
      { type: 'event', payload: errorEvent() },
      { type: 'attachment', payload: 'log line one\nlog line two', length: true },
      { type: 'session', payload: { sid: 'b'.repeat(32), init: true, started: new Date().toISOString(), status: 'ok', attrs: { release: 'r@1' } } },
    ]),
  );

/** Flips, deletes, inserts and truncates bytes of a valid body. */
const mutated = (valid: Buffer) =>
  fc
    .array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 })
    .map((edits) => {
      let bytes = Buffer.from(valid);
      for (const [position, kind, value] of edits) {
        const at = position % Math.max(1, bytes.length);
        if (kind === 0) bytes[at] = value;
        else if (kind === 1) bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]);
        else if (kind === 2) bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from([value]), bytes.subarray(at)]);
        else bytes = bytes.subarray(0, at);
      }
      return bytes;
    });

const envelopePath = () => `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`;

describe('ingest never answers 5xx to malformed input', () => {
  test('arbitrary bytes as an envelope, plain or gzipped', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), async (bytes, gzip) => {
        const reply = await post(envelopePath(), gzip ? gzipSync(bytes) : bytes, gzip ? { 'content-encoding': 'gzip' } : {});
        expectDocumented(reply, [200, 400]);
      }),
      { numRuns: 60 },
    );
  });

  test('mutated valid envelopes', async () => {
    await fc.assert(
      fc.asyncProperty(mutated(validEnvelope()), async (bytes) => expectDocumented(await post(envelopePath(), bytes), [200, 400])),
      { numRuns: 80 },
    );
  });

  test('arbitrary item payloads under every known item type', async () => {
    const types = ['event', 'transaction', 'span', 'log', 'trace_metric', 'check_in', 'session', 'sessions', 'feedback', 'user_report', 'replay_event', 'client_report'];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...types), fc.jsonValue({ maxDepth: 4 }), async (type, payload) => {
        const reply = await post(envelopePath(), Buffer.from(envelope({}, [{ type, payload }])));
        expectDocumented(reply, [200, 400]);
      }),
      { numRuns: 80 },
    );
  });

  test('arbitrary OTLP bodies, protobuf and JSON, on every signal', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('traces', 'logs', 'metrics'),
        fc.constantFrom('application/x-protobuf', 'application/json'),
        fc.oneof(fc.uint8Array({ maxLength: 1024 }), fc.jsonValue({ maxDepth: 5 }).map((v) => Buffer.from(JSON.stringify(v)))),
        async (signal, contentType, body) => {
          const reply = await post(`/v1/${signal}`, body, { 'content-type': contentType, authorization: `Bearer ${project.publicKey}` });
          expect([200, 400]).toContain(reply.status);
        },
      ),
      { numRuns: 80 },
    );
  });

  test('after all that, the service still answers', async () => {
    expect((await h.ingest.get('/healthz')).status).toBe(200);
    expect((await post(envelopePath(), validEnvelope())).status).toBe(200);
  });
});
