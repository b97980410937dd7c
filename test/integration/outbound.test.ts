import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import { createOutbound, OutboundError, parseAllowlist } from '../../src/shared/clients/outbound.js';

const DAY_MS = 86_400_000;

/** What the probed server saw, so tests can tell "refused before connecting" from "connected and failed". */
const seen = { connections: 0, requests: [] as { method: string; url: string; body: string; authorization?: string }[] };

function route(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
  const url = new URL(req.url!, 'http://probe');
  const hops = /^\/redirect\/(\d+)$/.exec(url.pathname);
  if (url.pathname === '/ok') {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Probe': 'yes' }).end('hello from the probed service');
  } else if (url.pathname === '/hang') {
    // Never answers: the caller's timeout has to end it.
  } else if (hops) {
    const left = Number(hops[1]);
    if (left === 0) res.writeHead(200).end('landed');
    else res.writeHead(302, { Location: `/redirect/${left - 1}` }).end();
  } else if (url.pathname === '/to') {
    res.writeHead(Number(url.searchParams.get('status') ?? 302), { Location: url.searchParams.get('location')! }).end();
  } else if (url.pathname === '/echo') {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ method: req.method, body }));
  } else if (url.pathname === '/big') {
    res.writeHead(200).end('x'.repeat(100_000));
  } else {
    res.writeHead(404).end();
  }
}

function handler(req: http.IncomingMessage, res: http.ServerResponse) {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString();
    seen.requests.push({ method: req.method!, url: req.url!, body, authorization: req.headers.authorization });
    route(req, res, body);
  });
}

async function listen<T extends http.Server>(server: T): Promise<number> {
  server.on('connection', () => seen.connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

const issued = new Date(Math.floor(Date.now() / 1000) * 1000);
const server = http.createServer(handler);
const other = http.createServer(handler);
let tlsServer: https.Server;
let base: string;
let otherBase: string;
let tlsBase: string;
const outbound = createOutbound({ allowlist: parseAllowlist('127.0.0.1') });

beforeAll(async () => {
  base = `http://127.0.0.1:${await listen(server)}`;
  otherBase = `http://127.0.0.1:${await listen(other)}`;
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec', algorithm: 'sha256', notBeforeDate: new Date(issued.getTime() - DAY_MS), notAfterDate: new Date(issued.getTime() + 5 * DAY_MS),
  });
  tlsServer = https.createServer({ key: pems.private, cert: pems.cert }, handler);
  tlsBase = `https://127.0.0.1:${await listen(tlsServer)}`;
});

afterAll(async () => {
  for (const s of [server, other, tlsServer]) {
    s.closeAllConnections();
    s.close();
    await once(s, 'close');
  }
});

/** The OutboundError a request rejects with (failing the test if it resolves or rejects with anything else). */
async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(OutboundError);
  return error as OutboundError;
}

test('a 200 comes back with body, lower-cased headers and latency', async () => {
  const response = await outbound.request({ url: `${base}/ok`, timeoutMs: 5000 });
  expect(response).toMatchObject({ status: 200, body: 'hello from the probed service', url: `${base}/ok`, tlsDaysLeft: null, tlsValidTo: null });
  expect(response.headers['x-probe']).toBe('yes');
  expect(response.latencyMs).toBeGreaterThanOrEqual(0);
  expect(response.latencyMs).toBeLessThan(5000);
});

test('a server that never answers is cut off at the timeout', async () => {
  const started = Date.now();
  const error = await refusal(outbound.request({ url: `${base}/hang`, timeoutMs: 300 }));
  expect(error.message).toBe('timed out after 300 ms');
  expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  expect(Date.now() - started).toBeLessThan(2000);
});

test('redirects are followed up to maxRedirects and refused beyond it', async () => {
  const followed = await outbound.request({ url: `${base}/redirect/2`, timeoutMs: 5000, maxRedirects: 2 });
  expect(followed).toMatchObject({ status: 200, body: 'landed', url: `${base}/redirect/0` });

  const error = await refusal(outbound.request({ url: `${base}/redirect/3`, timeoutMs: 5000, maxRedirects: 2 }));
  expect(error.message).toBe('too many redirects (max 2)');

  // Not following is the default: the redirect itself is the answer.
  const unfollowed = await outbound.request({ url: `${base}/redirect/1`, timeoutMs: 5000 });
  expect(unfollowed).toMatchObject({ status: 302, url: `${base}/redirect/1` });
  expect(unfollowed.headers.location).toBe('/redirect/0');
});

test('a redirect to a forbidden address is refused, naming the address', async () => {
  const toPrivate = await refusal(outbound.request({ url: `${base}/to?location=${encodeURIComponent('http://10.1.2.3/')}`, timeoutMs: 5000, maxRedirects: 3 }));
  expect(toPrivate.message).toMatch(/address 10\.1\.2\.3 is not allowed \(private network\)/);

  // ::1 is loopback too, and only 127.0.0.1 is allow-listed here.
  const port = new URL(base).port;
  const toLoopback = await refusal(outbound.request({ url: `${base}/to?location=${encodeURIComponent(`http://[::1]:${port}/ok`)}`, timeoutMs: 5000, maxRedirects: 3 }));
  expect(toLoopback.message).toMatch(/address ::1 is not allowed \(loopback\)/);
});

test('303 turns a POST into a GET without body; 307 keeps both; credentials stay with their origin', async () => {
  const seeOther = await outbound.request({ url: `${base}/to?status=303&location=/echo`, method: 'POST', body: '{"a":1}', headers: { 'Content-Type': 'application/json' }, timeoutMs: 5000, maxRedirects: 1 });
  expect(JSON.parse(seeOther.body)).toEqual({ method: 'GET', body: '' });

  const temporary = await outbound.request({ url: `${base}/to?status=307&location=/echo`, method: 'POST', body: '{"a":1}', timeoutMs: 5000, maxRedirects: 1 });
  expect(JSON.parse(temporary.body)).toEqual({ method: 'POST', body: '{"a":1}' });

  seen.requests.length = 0;
  await outbound.request({ url: `${base}/to?location=${encodeURIComponent(`${otherBase}/echo`)}`, headers: { Authorization: 'Bearer secret' }, timeoutMs: 5000, maxRedirects: 1 });
  expect(seen.requests.map((r) => r.authorization)).toEqual(['Bearer secret', undefined]);
});

test('a hostname is judged by what it resolves to', async () => {
  const port = new URL(base).port;
  const refused = await refusal(createOutbound({ allowlist: parseAllowlist('') }).request({ url: `http://localhost:${port}/ok`, timeoutMs: 5000 }));
  expect(refused.message).toBe('host localhost is not allowed (loopback)');

  // The name passes the URL check (::1 is allowed) but resolves to 127.0.0.1, which is not: no connection.
  const before = seen.connections;
  const resolved = await refusal(createOutbound({ allowlist: parseAllowlist('::1') }).request({ url: `http://localhost:${port}/ok`, timeoutMs: 5000 }));
  expect(resolved.message).toMatch(/^address 127\.0\.0\.1 \(localhost\) is not allowed \(loopback\)$/);
  expect(seen.connections).toBe(before);

  const allowed = await createOutbound({ allowlist: parseAllowlist('127.0.0.1,::1') }).request({ url: `http://localhost:${port}/ok`, timeoutMs: 5000 });
  expect(allowed.status).toBe(200);
});

test('a DNS failure fails closed', async () => {
  const error = await refusal(outbound.request({ url: 'http://does-not-exist.invalid/', timeoutMs: 5000 }));
  expect(error.message).toBe('DNS lookup failed for does-not-exist.invalid');
});

test('the default guard refuses loopback without connecting', async () => {
  const before = { connections: seen.connections, requests: seen.requests.length };
  const guarded = createOutbound({ allowlist: parseAllowlist(undefined) });
  expect(guarded.urlProblem(`${base}/ok`)).toBe('address 127.0.0.1 is not allowed (loopback)');
  const error = await refusal(guarded.request({ url: `${base}/ok`, timeoutMs: 5000 }));
  expect(error.message).toBe('address 127.0.0.1 is not allowed (loopback)');
  expect({ connections: seen.connections, requests: seen.requests.length }).toEqual(before);
});

test('https reports the days left on the certificate, and refuses it when verifying', async () => {
  const atIssue = createOutbound({ allowlist: parseAllowlist('127.0.0.1'), now: () => issued });
  const response = await atIssue.request({ url: `${tlsBase}/ok`, timeoutMs: 5000, verifyTls: false });
  expect(response).toMatchObject({ status: 200, body: 'hello from the probed service', tlsDaysLeft: 5 });
  expect(response.tlsValidTo).toEqual(new Date(issued.getTime() + 5 * DAY_MS));

  const sixDaysOn = createOutbound({ allowlist: parseAllowlist('127.0.0.1'), now: () => new Date(issued.getTime() + 6 * DAY_MS) });
  expect((await sixDaysOn.request({ url: `${tlsBase}/ok`, timeoutMs: 5000, verifyTls: false })).tlsDaysLeft).toBe(-1);

  const error = await refusal(atIssue.request({ url: `${tlsBase}/ok`, timeoutMs: 5000 }));
  expect(error.message).toMatch(/certificate/);
});

test('the body is read up to maxBodyBytes and the rest discarded', async () => {
  const response = await outbound.request({ url: `${base}/big`, timeoutMs: 5000, maxBodyBytes: 10 });
  expect(response.status).toBe(200);
  expect(response.body).toBe('x'.repeat(10));
});
