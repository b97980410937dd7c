/**
 * The HTTP ceiling: a bare node:http server, in a process of its own, that does the least any receiver
 * of these payloads must do and nothing else: read the body, gunzip it when it says gzip, and parse it
 * (a Sentry envelope split into lines, each JSON.parse'd; an OTLP export decoded with protobufjs from the
 * service's own descriptor, or JSON.parse'd), then answer 200 `{}`. No auth, no queue, no Redis.
 * The ingest service's accept rate is compared with this one's at the same concurrency.
 */
import { fork } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { traceRequestType } from './payloads.js';

/**
 * The body, gunzipped in one call when it says gzip. Plain events and one call, as the least a receiver
 * needs: until 2026-11-30 this piped the request through `stream.pipeline` and a gunzip stream, whose
 * machinery cost about as much CPU per request as everything else this server does (docs/performance.md).
 */
function bodyOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req
      .on('data', (chunk: Buffer) => chunks.push(chunk))
      .on('end', () => {
        try {
          const body = Buffer.concat(chunks);
          resolve(req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body);
        } catch (error) {
          reject(error);
        }
      })
      .on('error', reject);
  });
}

function parse(url: string, contentType: string, body: Buffer): unknown {
  if (url.startsWith('/v1/') && contentType.startsWith('application/x-protobuf')) return traceRequestType.toObject(traceRequestType.decode(body), { longs: String });
  if (url.startsWith('/v1/')) return JSON.parse(body.toString('utf8'));
  // an envelope: a header line, then each item's header line and payload line
  return body
    .toString('utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line));
}

export interface CeilingServer {
  baseUrl: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the ceiling server process and waits until it listens. */
export async function startCeilingServer(): Promise<CeilingServer> {
  const child = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, NODE_OPTIONS: '' } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => resolve((message as { port: number }).port));
    child.once('exit', () => reject(new Error('the ceiling server exited before listening')));
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

// As the child: listen on a free loopback port, say which, and serve until told to stop.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = createServer((req, res) => {
    bodyOf(req)
      .then((body) => {
        parse(req.url ?? '', req.headers['content-type'] ?? '', body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      })
      .catch(() => res.writeHead(400, { 'content-type': 'application/json' }).end('{}'));
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
