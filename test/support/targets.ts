import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';

const DAY_MS = 86_400_000;

/** What a probed service answers; `delayMs` holds the answer back (a slow service). */
export interface Answer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export interface SeenRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body as text (a webhook's, whose signature covers exactly these bytes). */
  body: string;
}

/** A loopback service for monitors to probe or webhooks to reach, recording every request it receives. */
export interface Target {
  /** Base URL, e.g. http://127.0.0.1:40123 or http://[::1]:40123 */
  url: string;
  port: number;
  requests: SeenRequest[];
  /** Changes what every later request is answered (a service going down or recovering). */
  answer(answer: Answer | ((req: http.IncomingMessage) => Answer)): void;
  /** https only: serves another certificate from now on (a renewal). */
  setCertificate(pems: { key: string; cert: string }): void;
  close(): Promise<void>;
}

export async function startTarget(
  answer: Answer | ((req: http.IncomingMessage) => Answer),
  /** `host`: a loopback address, e.g. 127.0.0.2 for one the outbound allowlist leaves out. */
  options: { host?: string; tls?: { key: string; cert: string } } = {},
): Promise<Target> {
  const host = options.host ?? '127.0.0.1';
  let current = answer;
  const requests: SeenRequest[] = [];
  const held = new Set<NodeJS.Timeout>();
  const handle = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    // answered once the whole request is read, so its body is recorded with it
    req.on('end', () => {
      requests.push({ method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const { status = 200, body = '', headers = {}, delayMs = 0 } = typeof current === 'function' ? current(req) : current;
      const send = () => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(body);
      };
      if (delayMs === 0) return send();
      const timer = setTimeout(() => {
        held.delete(timer);
        send();
      }, delayMs);
      held.add(timer);
    });
  };
  const server = options.tls ? https.createServer(options.tls, handle) : http.createServer(handle);
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const scheme = options.tls ? 'https' : 'http';
  return {
    url: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    requests,
    answer: (next) => {
      current = next;
    },
    setCertificate: (pems) => {
      if (!(server instanceof https.Server)) throw new Error('not an https target');
      server.setSecureContext(pems);
    },
    close: async () => {
      for (const timer of held) clearTimeout(timer);
      held.clear();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** Starts targets and closes every one of them at the end (call in afterAll). */
export function targetPool() {
  const started: Target[] = [];
  return {
    start: async (...args: Parameters<typeof startTarget>) => {
      const target = await startTarget(...args);
      started.push(target);
      return target;
    },
    closeAll: async () => {
      await Promise.all(started.splice(0).map((target) => target.close()));
    },
  };
}

/** A self-signed certificate for localhost, issued yesterday and valid until `validTo` (whole seconds). */
export async function selfSignedCertificate(validTo: Date): Promise<{ key: string; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    notBeforeDate: new Date(Date.now() - DAY_MS),
    notAfterDate: validTo,
  });
  return { key: pems.private, cert: pems.cert };
}
