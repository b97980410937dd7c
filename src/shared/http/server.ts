import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';

export interface RunningServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Listens, and closes by refusing new connections, letting in-flight requests finish, then dropping idle keep-alives. */
export function listen(handler: RequestListener, port: number, host: string): Promise<RunningServer> {
  // Keep-alive clients under steady load never leave their connection idle: once closing, every answer
  // also ends its connection, or close() would wait for them until the shutdown timeout.
  let closing = false;
  const server = createServer((req, res) => {
    if (closing) res.setHeader('connection', 'close');
    handler(req, res);
  });
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
