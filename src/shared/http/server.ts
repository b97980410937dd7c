import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorCode } from '../errors.js';

export interface RunningServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** What Node answers a request it cannot parse (with an empty body), by its error code; anything else is 400. */
const clientErrors: Record<string, { status: number; code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, code: 'invalid_request', message: "the request's headers are larger than 16 KB" },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, code: 'payload_too_large', message: "the request's chunk extensions are too large" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'invalid_request', message: 'the request did not arrive in time' },
};

/**
 * Answers a request Node's parser refused (a URL or headers over 16 KB, bytes that aren't HTTP) with
 * the contract's JSON error body instead of Node's bare status line, then closes the connection as
 * Node does. Like Node, it writes nothing once a response on the connection has begun.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex) {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent && error.code !== 'ECONNRESET') {
    const { status, code, message } = clientErrors[error.code ?? ''] ?? { status: 400, code: 'invalid_request', message: 'the request is not valid HTTP/1.1' };
    const requestId = randomUUID();
    const body = JSON.stringify({ code, message, request_id: requestId });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

const IDLE_KEEP_ALIVE_MS = 65_000;

/** Listens, and closes by refusing new connections, letting in-flight requests finish, then dropping idle keep-alives. */
export function listen(handler: RequestListener, port: number, host: string): Promise<RunningServer> {
  // Keep-alive clients under steady load never leave their connection idle: once closing, every answer
  // also ends its connection, or close() would wait for them until the shutdown timeout.
  let closing = false;
  const server = createServer((req, res) => {
    if (closing) res.setHeader('connection', 'close');
    handler(req, res);
  });
  // Node drops an idle keep-alive connection after 5 s. A client or proxy that reuses one just as it is
  // dropped (a busy client whose own idle timer ran late, nginx's or a load balancer's upstream pool)
  // sees its request fail with a reset. Keep idle connections longer than those pools do (60 s).
  server.keepAliveTimeout = IDLE_KEEP_ALIVE_MS;
  server.headersTimeout = IDLE_KEEP_ALIVE_MS + 1000;
  server.on('clientError', answerClientError);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve({
        server,
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done, fail) => {
            closing = true;
            server.close((error) => (error ? fail(error) : done()));
            server.closeIdleConnections();
          }),
      });
    });
  });
}
