import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { type Harness, startHarness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, gzipBomb, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';

let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
useHarness((started) => (h = started), { INGEST_DSN_CACHE_MS: '2000' });
beforeAll(async () => {
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
});

const envelopePath = (p: ProjectWithDsn, auth = `?sentry_version=7&sentry_key=${p.publicKey}&sentry_client=sentry.javascript.node%2F11.12.0`) =>
  `/api/${p.number}/envelope/${auth}`;

describe('Sentry envelope endpoint', () => {
  test('accepts an envelope with no Content-Type and answers with the event id', async () => {
    const event = errorEvent();
    const reply = await h.ingest.request('POST', envelopePath(project), envelope({ event_id: event.event_id, sent_at: new Date().toISOString() }, [{ type: 'event', payload: event }]));
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ id: event.event_id });
  });

  test('takes the key from every source Sentry clients use', async () => {
    const body = envelope({}, [{ type: 'event', payload: errorEvent() }]);
    const noQuery = `/api/${project.number}/envelope/`;
    const sources: Record<string, string>[] = [
      { 'x-sentry-auth': `Sentry sentry_version=7, sentry_client=raven-python/9.0, sentry_key=${project.publicKey}` },
      { authorization: `Sentry sentry_key=${project.publicKey}, sentry_version=7` },
      { authorization: `Bearer ${project.publicKey}` },
    ];
    for (const headers of sources) {
      expect((await h.ingest.request('POST', noQuery, body, headers)).status).toBe(200);
    }
    const withDsnHeader = envelope({ dsn: project.dsn }, [{ type: 'event', payload: errorEvent() }]);
    expect((await h.ingest.request('POST', noQuery, withDsnHeader)).status).toBe(200);
  });

  test('a browser-shaped request: text/plain body, CORS preflight and exposed rate-limit headers', async () => {
    const preflight = await h.ingest.request('OPTIONS', envelopePath(project), undefined, {
      origin: 'https://shop.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    const reply = await h.ingest.request('POST', envelopePath(project), envelope({}, [{ type: 'event', payload: errorEvent({ platform: 'javascript' }) }]), {
      origin: 'https://shop.example',
      'content-type': 'text/plain;charset=UTF-8',
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(reply.headers.get('access-control-expose-headers')).toMatch(/X-Sentry-Rate-Limits/i);
  });

  test('no key → 401; unknown key → 403; a DSN of another project → 403; a non-numeric project → 404', async () => {
    const body = envelope({}, [{ type: 'event', payload: errorEvent() }]);
    expect((await h.ingest.request('POST', `/api/${project.number}/envelope/`, body)).status).toBe(401);
    expect((await h.ingest.request('POST', envelopePath(project, '?sentry_key=0123456789abcdef0123456789abcdef'), body)).status).toBe(403);
    const other = await projectWithDsn(owner, h.ingest.baseUrl);
    const crossed = await h.ingest.request('POST', `/api/${other.number}/envelope/?sentry_key=${project.publicKey}`, body);
    expect(crossed.status).toBe(403);
    expect(crossed.body.code).toBe('forbidden');
    expect((await h.ingest.request('POST', `/api/abc/envelope/?sentry_key=${project.publicKey}`, body)).status).toBe(404);
  });

  test('refusals are logged with their status and path, without the query that may carry a key; accepted requests are not logged at info', async () => {
    const accepted = await h.ingest.request('POST', envelopePath(project), envelope({}, [{ type: 'event', payload: errorEvent() }]), { 'x-request-id': 'accepted-one' });
    const refused = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${'c'.repeat(32)}`, envelope({}, [{ type: 'event', payload: errorEvent() }]), { 'x-request-id': 'refused-one' });
    expect([accepted.status, refused.status]).toEqual([200, 403]);
    const lines = h.logs.lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'ingest request');
    expect(lines.find((line) => line.request_id === 'refused-one')).toMatchObject({ level: 30, method: 'POST', path: `/api/${project.number}/envelope/`, status: 403, ms: expect.any(Number) });
    expect(lines.find((line) => line.request_id === 'accepted-one')).toBeUndefined();
    expect(h.logs.text).not.toContain('c'.repeat(32));
  });

  test('a revoked DSN is refused within 5 seconds', async () => {
    const fresh = await projectWithDsn(owner, h.ingest.baseUrl);
    const body = envelope({}, [{ type: 'event', payload: errorEvent() }]);
    expect((await h.ingest.request('POST', envelopePath(fresh), body)).status).toBe(200);
    expect((await owner.client.delete(`/v1/projects/${fresh.id}/dsns/${fresh.dsnId}`)).status).toBe(204);
    const revokedAt = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - revokedAt < 6000) {
      status = (await h.ingest.request('POST', envelopePath(fresh), body)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(403);
    expect(Date.now() - revokedAt).toBeLessThan(5000);
  });

  test('malformed envelopes answer 400 with the error body', async () => {
    for (const body of ['', 'not json\n', '{}\n{"length": 50}\nshort', '{}\n{"type":"event","length":3}\nabcdef\n', '{"event_id":"not-an-id"}\n']) {
      const reply = await h.ingest.request('POST', envelopePath(project), body);
      expect({ body, status: reply.status, code: reply.body?.code }).toEqual({ body, status: 400, code: 'invalid_request' });
    }
  });

  test('an item that is not valid JSON is dropped and the rest accepted, as Relay does', async () => {
    const event = errorEvent();
    const body = `{"event_id":"${event.event_id}"}\n{"type":"event"}\n{not json}\n{"type":"event"}\n${JSON.stringify(event)}\n`;
    const reply = await h.ingest.request('POST', envelopePath(project), body);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ id: event.event_id });
  });

  test('an envelope none of whose items can be stored is 400 saying why; one of skipped kinds only is still 200', async () => {
    const event = errorEvent();
    const invalid = `{"event_id":"${event.event_id}"}\n{"type":"event"}\n{not json}\n{"type":"transaction"}\n[1,2]\n`;
    const refused = await h.ingest.request('POST', envelopePath(project), invalid);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'invalid_request', message: "none of the envelope's items could be stored: 2 items were invalid (not JSON of their type, a missing or malformed id, or over their size limit)" });
    // a client report alone is what SDKs send between events: nothing to store, nothing wrong
    const report = envelope({}, [{ type: 'client_report', payload: { timestamp: Date.now() / 1000, discarded_events: [] } }]);
    expect((await h.ingest.request('POST', envelopePath(project), report)).status).toBe(200);
  });

  test('unknown item types are skipped and the rest is accepted', async () => {
    const event = errorEvent();
    const reply = await h.ingest.request('POST', envelopePath(project), envelope({ event_id: event.event_id }, [{ type: 'something_new', payload: { a: 1 } }, { type: 'event', payload: event }]));
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ id: event.event_id });
  });

  test('a gzip bomb answers 413 and an unknown encoding 415', async () => {
    const bomb = await fetch(`${h.ingest.baseUrl}${envelopePath(project)}`, { method: 'POST', body: gzipBomb(), headers: { 'content-encoding': 'gzip' } });
    expect(bomb.status).toBe(413);
    expect(((await bomb.json()) as { code: string }).code).toBe('payload_too_large');
    const odd = await fetch(`${h.ingest.baseUrl}${envelopePath(project)}`, { method: 'POST', body: 'x', headers: { 'content-encoding': 'lzma' } });
    expect(odd.status).toBe(415);
  });
});

describe('OTLP endpoints', () => {
  test('a body none of whose records can be stored is 400 saying why; with one good span it is 200 with the rest counted as rejected', async () => {
    const auth = { authorization: `Bearer ${project.publicKey}`, 'content-type': 'application/json' };
    const span = (traceId: string, name: string) => ({ traceId, spanId: '00f067aa0ba902b7', name, startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000000100000000' });
    const body = (spans: unknown[]) => JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }] }, scopeSpans: [{ spans }] }] });
    const refused = await h.ingest.request('POST', '/v1/traces', body([span('00000000000000000000000000000000', 'zero'), span('xyz', 'short')]), auth);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('invalid_request');
    expect(refused.body.message).toMatch(/^none of the 2 traces items could be stored: .*traceId must be 32 hex characters/);
    const partial = await h.ingest.request('POST', '/v1/traces', body([span('4bf92f3577b34da6a3ce929d0e0e4736', 'good'), span('xyz', 'short')]), auth);
    expect(partial.status).toBe(200);
    expect(partial.body.partialSuccess).toMatchObject({ rejectedSpans: '1' });
  });

  test('wrong content type → 415; no key → 401; malformed protobuf or JSON → 400', async () => {
    const auth = { authorization: `Bearer ${project.publicKey}` };
    expect((await h.ingest.request('POST', '/v1/traces', '{}', { ...auth, 'content-type': 'text/plain' })).status).toBe(415);
    expect((await h.ingest.request('POST', '/v1/traces', '{}', { 'content-type': 'application/json' })).status).toBe(401);
    const badProto = await fetch(`${h.ingest.baseUrl}/v1/traces`, { method: 'POST', body: Buffer.from([0x0a, 0xff, 0xff, 0xff]), headers: { ...auth, 'content-type': 'application/x-protobuf' } });
    expect(badProto.status).toBe(400);
    // The OTLP spec's refusal for a protobuf request: a google.rpc.Status { code = 3 INVALID_ARGUMENT, message }.
    expect(badProto.headers.get('content-type')).toMatch(/^application\/x-protobuf/);
    const status = protobuf.Reader.create(new Uint8Array(await badProto.arrayBuffer()));
    expect([status.uint32(), status.int32(), status.uint32()]).toEqual([8, 3, 18]);
    expect(status.string()).toMatch(/.+/);
    const revoked = await fetch(`${h.ingest.baseUrl}/v1/traces`, { method: 'POST', body: Buffer.alloc(0), headers: { authorization: `Bearer ${'e'.repeat(32)}`, 'content-type': 'application/x-protobuf' } });
    expect(revoked.status).toBe(403);
    expect(revoked.headers.get('content-type')).toMatch(/^application\/x-protobuf/);
    expect((await h.ingest.request('POST', '/v1/logs', '{"resourceLogs": 5}', { ...auth, 'content-type': 'application/json' })).status).toBe(400);
    const ok = await h.ingest.request('POST', '/v1/metrics', '{"resourceMetrics": []}', { ...auth, 'content-type': 'application/json' });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({});
  });
});

describe('abuse limits and unavailable Redis', () => {
  test('over the per-DSN limit: 429 with Retry-After and X-Sentry-Rate-Limits', async () => {
    const limited = await startHarness({ INGEST_RATE_LIMIT_PER_SECOND: '2' });
    try {
      const body = envelope({}, [{ type: 'event', payload: errorEvent() }]);
      const replies = [];
      for (let i = 0; i < 4; i++) replies.push(await limited.ingest.request('POST', envelopePath(project), body));
      expect(replies.slice(0, 2).map((r) => r.status)).toEqual([200, 200]);
      const refusal = replies.find((r) => r.status === 429);
      expect(refusal?.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refusal?.headers.get('x-sentry-rate-limits')).toMatch(/^\d+::key/);
    } finally {
      await limited.close();
    }
  });

  test('requests without a valid key are limited per address', async () => {
    const strict = await startHarness({ INGEST_UNAUTHENTICATED_PER_MINUTE: '2' });
    try {
      const body = envelope({}, [{ type: 'event', payload: errorEvent() }]);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await strict.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${'f'.repeat(32)}`, body)).status);
      expect(statuses).toEqual([403, 403, 429]);
      expect((await strict.ingest.request('POST', envelopePath(project), body)).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  test('gzip bombs without a key, with a key only in a bogus envelope header, or with a bad key are refused having decoded next to nothing', async () => {
    // each decodes to 256 MiB of zeros from about 256 KiB; the first three name no live key before the zeros
    const bomb = gzipBomb();
    const headed = (header: Record<string, unknown>) => Buffer.concat([gzipSync(`${JSON.stringify(header)}\n`), bomb]);
    const gzip = { 'content-encoding': 'gzip' };
    const keyless = `/api/${project.number}/envelope/`;
    const attacks = [
      { path: keyless, body: bomb, headers: gzip, status: 400, code: 'invalid_request' },
      { path: keyless, body: headed({}), headers: gzip, status: 401, code: 'unauthenticated' },
      { path: keyless, body: headed({ dsn: `http://${'d'.repeat(32)}@localhost/${project.number}` }), headers: gzip, status: 403, code: 'forbidden' },
      { path: `${keyless}?sentry_key=${'b'.repeat(32)}`, body: bomb, headers: gzip, status: 403, code: 'forbidden' },
      { path: '/v1/traces', body: bomb, headers: { ...gzip, 'content-type': 'application/json', authorization: `Bearer ${'b'.repeat(32)}` }, status: 403, code: 'forbidden' },
    ];
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 2);
    try {
      const replies = await Promise.all(
        [...attacks, ...attacks].map(async ({ path, body, headers }) => {
          const response = await fetch(`${h.ingest.baseUrl}${path}`, { method: 'POST', body, headers });
          return { status: response.status, body: (await response.json()) as Record<string, unknown> };
        }),
      );
      expect(replies).toEqual([...attacks, ...attacks].map(({ status, code }) => ({ status, body: expect.objectContaining({ code, request_id: expect.any(String) }) })));
    } finally {
      clearInterval(sampler);
    }
    // ten bodies that would each decode to the 100 MiB cap if read before their key is checked
    expect(peak - baseline).toBeLessThan(32 * 1024 * 1024);
  });

  test('a key-less envelope naming a live DSN in its header is read whole, however large, and does not count against its address', async () => {
    const strict = await startHarness({ INGEST_UNAUTHENTICATED_PER_MINUTE: '2' });
    try {
      const event = errorEvent();
      // random bytes do not compress: the body is over 1 MiB on the wire as well as decoded
      const attachment = Buffer.from(randomBytes(3 * 1024 * 1024).toString('base64'));
      const body = gzipSync(Buffer.concat([Buffer.from(envelope({ event_id: event.event_id, dsn: project.dsn }, [{ type: 'event', payload: event }])), Buffer.from(`{"type":"attachment","length":${attachment.length},"filename":"dump.txt"}\n`), attachment, Buffer.from('\n')]));
      expect(body.length).toBeGreaterThan(2 * 1024 * 1024);
      for (let i = 0; i < 4; i++) {
        const response = await fetch(`${strict.ingest.baseUrl}/api/${project.number}/envelope/`, { method: 'POST', body, headers: { 'content-encoding': 'gzip' } });
        expect({ i, status: response.status, body: await response.json() }).toEqual({ i, status: 200, body: { id: event.event_id } });
      }
    } finally {
      await strict.close();
    }
  });

  test('malformed key-less requests count against their address before their body is read: 429 with Retry-After past the limit', async () => {
    const strict = await startHarness({ INGEST_UNAUTHENTICATED_PER_MINUTE: '3' });
    try {
      const keyless = `/api/${project.number}/envelope/`;
      const statuses = [];
      for (const body of ['not json\n', '', '[1,2]\n']) statuses.push((await strict.ingest.request('POST', keyless, body)).status);
      expect(statuses).toEqual([400, 400, 400]);
      const refused = await strict.ingest.request('POST', keyless, 'not json\n');
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ code: 'rate_limited', message: expect.any(String), request_id: expect.any(String) });
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused.headers.get('x-sentry-rate-limits')).toMatch(/^\d+::key/);
      // the address is refused before its body is read, even a well-formed one
      const valid = await strict.ingest.request('POST', keyless, envelope({ dsn: project.dsn }, [{ type: 'event', payload: errorEvent() }]));
      expect(valid.status).toBe(429);
      // a key in the URL is that DSN's to spend, not the address's
      expect((await strict.ingest.request('POST', envelopePath(project), envelope({}, [{ type: 'event', payload: errorEvent() }]))).status).toBe(200);
    } finally {
      await strict.close();
    }
  });

  test('with Redis unreachable and the disk spool full, ingest answers 503 with Retry-After within a second, and /readyz says why', async () => {
    const down = await startHarness({ REDIS_URL: 'redis://127.0.0.1:1', INGEST_SPOOL_MAX_MB: '0.0005' });
    try {
      const started = Date.now();
      const reply = await down.ingest.request('POST', envelopePath(project), envelope({}, [{ type: 'event', payload: errorEvent({ extra: { padding: 'x'.repeat(1000) } }) }]));
      expect(Date.now() - started).toBeLessThan(1000);
      expect(reply.status).toBe(503);
      expect(reply.body).toMatchObject({ code: 'not_ready', message: expect.stringMatching(/spool is full/) });
      expect(reply.headers.get('retry-after')).toMatch(/^\d+$/);
      const ready = await down.ingest.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: 'spool', status: 'down', error: expect.stringMatching(/disk spool is full/) }),
          expect.objectContaining({ name: 'redis', status: 'down', required: false }),
        ]),
      );
    } finally {
      await down.close();
    }
  });
});

describe('requests Node cannot parse', () => {
  /** Sends `head` as it is on a new connection and returns everything the server wrote before closing it. */
  async function raw(baseUrl: string, head: string): Promise<string> {
    const socket = connect(Number(new URL(baseUrl).port), '127.0.0.1');
    await once(socket, 'connect');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.write(head);
    await once(socket, 'close');
    return Buffer.concat(chunks).toString();
  }

  test('a URL over 16 KB answers 431 with the JSON error body on the API and on ingest', async () => {
    for (const client of [h.api, h.ingest]) {
      const answer = await raw(client.baseUrl, `GET /v1/me?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      expect(head).toMatch(/\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      const parsed = JSON.parse(body!);
      expect(parsed).toEqual({ code: 'invalid_request', message: "the request's headers are larger than 16 KB", request_id: expect.any(String) });
      expect(head).toContain(`X-Request-Id: ${parsed.request_id}`);
    }
  });

  test('bytes that are not HTTP answer 400 with the JSON error body', async () => {
    const [head, body] = (await raw(h.ingest.baseUrl, 'HELLO\r\n\r\n')).split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(body!)).toEqual({ code: 'invalid_request', message: 'the request is not valid HTTP/1.1', request_id: expect.any(String) });
  });
});

describe('keep-alive connections', () => {
  /** Writes one request on an open connection and resolves with the head of the answer once it has fully arrived. */
  function exchange(socket: ReturnType<typeof connect>): Promise<string> {
    if (socket.destroyed) return Promise.reject(new Error('the server closed the idle connection'));
    return new Promise((resolve, reject) => {
      let received = '';
      const onData = (chunk: Buffer) => {
        received += chunk.toString();
        const [head, body = ''] = received.split('\r\n\r\n');
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head!)?.[1] ?? 0);
        if (received.includes('\r\n\r\n') && Buffer.byteLength(body) >= length) {
          socket.off('data', onData);
          resolve(head!);
        }
      };
      socket.on('data', onData);
      socket.once('close', () => reject(new Error(`the server closed the connection after ${JSON.stringify(received.slice(0, 80))}`)));
      socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
  }

  test('an idle connection still answers after the 5 s Node drops idle connections at, on the API and on ingest', async () => {
    await Promise.all(
      [h.api, h.ingest].map(async (client) => {
        const socket = connect(Number(new URL(client.baseUrl).port), '127.0.0.1');
        await once(socket, 'connect');
        try {
          const first = await exchange(socket);
          expect(first).toMatch(/^HTTP\/1\.1 200 /);
          expect(first).toMatch(/\r\nkeep-alive: timeout=65(\r\n|$)/i);
          await new Promise((resolve) => setTimeout(resolve, 6_000));
          expect(await exchange(socket)).toMatch(/^HTTP\/1\.1 200 /);
        } finally {
          socket.destroy();
        }
      }),
    );
  }, 20_000);
});
