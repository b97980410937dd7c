import { once } from 'node:events';
import { connect } from 'node:net';
import { type Harness, startHarness, useHarness } from '../support/harness.js';
import { signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';

let h: Harness;
let project: ProjectWithDsn;
useHarness((started) => (h = started));
beforeAll(async () => {
  project = await projectWithDsn(await signUp(h), h.ingest.baseUrl);
});

const anEnvelope = () => envelope({}, [{ type: 'event', payload: errorEvent() }]);

describe('ingest routes', () => {
  test('paths match whatever their case and with or without a trailing slash', async () => {
    for (const path of [`/api/${project.number}/envelope/`, `/api/${project.number}/envelope`, `/API/${project.number}/Envelope/`]) {
      const reply = await h.ingest.request('POST', `${path}?sentry_key=${project.publicKey}`, anEnvelope());
      expect({ path, status: reply.status }).toEqual({ path, status: 200 });
    }
    expect((await h.ingest.get('/HEALTHZ/')).body).toEqual({ status: 'ok' });
  });

  test('an unknown path, or a known one with another method, answers 404 with the error body and its request id', async () => {
    for (const [method, path] of [['GET', `/api/${project.number}/envelope/`], ['POST', '/v2/traces'], ['DELETE', '/healthz'], ['POST', '/']] as const) {
      const reply = await h.ingest.request(method, path, undefined, { 'x-request-id': 'lost-one' });
      expect({ method, path, status: reply.status, type: reply.headers.get('content-type') }).toEqual({ method, path, status: 404, type: 'application/json; charset=utf-8' });
      expect(reply.body).toEqual({ code: 'not_found', message: `no route for ${method} ${path}`, request_id: 'lost-one' });
      expect(reply.headers.get('x-request-id')).toBe('lost-one');
    }
  });

  test('every answer carries a request id: the caller’s when it is safe, a new one otherwise', async () => {
    const accepted = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, anEnvelope(), { 'x-request-id': 'sdk-req.42' });
    expect(accepted.headers.get('x-request-id')).toBe('sdk-req.42');
    const unsafe = await h.ingest.request('POST', `/api/${project.number}/envelope/`, anEnvelope(), { 'x-request-id': 'no spaces <allowed>' });
    expect(unsafe.status).toBe(401);
    expect(unsafe.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(unsafe.body.request_id).toBe(unsafe.headers.get('x-request-id'));
  });

  test('a CORS preflight from any site gets the methods, headers and max age browsers need; a request without Origin gets no CORS headers', async () => {
    const preflight = await h.ingest.request('OPTIONS', '/v1/traces', undefined, {
      origin: 'https://shop.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, x-sentry-auth',
    });
    expect(preflight.status).toBe(204);
    expect(Object.fromEntries([...preflight.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary'))).toEqual({
      'access-control-allow-origin': 'https://shop.example',
      'access-control-allow-methods': 'POST,OPTIONS',
      'access-control-allow-headers': 'Content-Type,Content-Encoding,Authorization,X-Sentry-Auth,sentry-trace,baggage,X-Request-Id',
      'access-control-expose-headers': 'X-Sentry-Rate-Limits,Retry-After,X-Request-Id',
      'access-control-max-age': '3600',
      vary: 'Origin',
    });
    const refused = await h.ingest.request('POST', `/api/${project.number}/envelope/`, anEnvelope(), { origin: 'https://shop.example' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    const server = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, anEnvelope());
    expect(server.headers.get('access-control-allow-origin')).toBeNull();
    // without Origin, OPTIONS says which methods the path takes
    const options = await h.ingest.request('OPTIONS', '/readyz');
    expect([options.status, options.headers.get('allow')]).toEqual([200, 'GET, HEAD']);
  });

  test('a request target in absolute form (as a forward proxy passes it on) is served like its path', async () => {
    const body = anEnvelope();
    const port = Number(new URL(h.ingest.baseUrl).port);
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.write(
      `POST http://ingest.example:${port}/api/${project.number}/envelope/?sentry_key=${project.publicKey} HTTP/1.1\r\nHost: ingest.example\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    await once(socket, 'close');
    expect(Buffer.concat(chunks).toString()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  });

  test('a HEAD of /healthz answers its status without a body', async () => {
    const reply = await h.ingest.request('HEAD', '/healthz');
    expect([reply.status, reply.text]).toEqual([200, '']);
  });
});

test('behind TRUST_PROXY_HOPS proxies, requests without a valid key are limited per forwarded client address', async () => {
  const proxied = await startHarness({ TRUST_PROXY_HOPS: '1', INGEST_UNAUTHENTICATED_PER_MINUTE: '2' });
  try {
    const from = (client: string) => proxied.ingest.request('POST', `/api/${project.number}/envelope/`, anEnvelope(), { 'x-forwarded-for': `198.51.100.7, ${client}` });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await from('203.0.113.1')).status);
    expect(statuses).toEqual([401, 401, 429]);
    // the proxy's own address and the spoofable left part of the header are not the client
    expect((await from('203.0.113.2')).status).toBe(401);
  } finally {
    await proxied.close();
  }
});
