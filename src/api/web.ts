import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aiEnabled } from '../shared/clients/ai.js';
import type { Config } from '../shared/config.js';
import { isLoopbackHost } from '../shared/links.js';

/** Where `npm run build` puts the dashboard: dist/web beside dist/main.js (and beside src/ when run from source). */
export const WEB_ROOT = fileURLToPath(new URL('../../dist/web/', import.meta.url));

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** The document the session-replay player draws in (src/web/public/replay-frame.html). */
export const REPLAY_STAGE_PATH = '/replay-frame.html';

const portOf = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');

export interface DashboardOptions {
  config: Pick<Config, 'API_PUBLIC_URL' | 'DASHBOARD_ORIGIN' | 'INGEST_PUBLIC_URL' | 'OLLAMA_HOST' | 'OLLAMA_API_KEY' | 'PAYMENT_API_KEY'>;
  /** The port the API listens on, for the API's URL on the host the browser used. */
  apiPort: number;
  root?: string;
}

/**
 * The built dashboard on its own origin (WEB_PORT): every path that is not a file answers index.html
 * (the app routes in the browser), hashed assets are cached for good and index.html never, and every
 * answer carries a Content-Security-Policy that lets scripts come only from here and requests go only
 * to the API. `/config.json` tells the app where the API is.
 */
export function dashboardHandler({ config, apiPort, root = WEB_ROOT }: DashboardOptions): RequestListener {
  const dashboard = new URL(config.DASHBOARD_ORIGIN);
  const apiUrlFor = (req: IncomingMessage) => {
    if (config.API_PUBLIC_URL) return config.API_PUBLIC_URL.replace(/\/+$/, '');
    // the API on the host name the browser used, so the session cookie stays on the same site
    const host = new URL(`http://${req.headers.host ?? 'localhost'}`).hostname;
    return `http://${host}:${apiPort}`;
  };
  const securityHeaders = (res: ServerResponse, apiOrigin: string) => {
    res.setHeader(
      'Content-Security-Policy',
      [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        `connect-src 'self' ${apiOrigin}`,
        // only the session-replay stage: every other page of this origin refuses to be framed (frame-ancestors)
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
      ].join('; '),
    );
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
  };
  const indexHtml = () => readFile(join(root, 'index.html'));
  /**
   * The session-replay stage (/replay-frame.html), framed by the replay page only: rrweb rebuilds the recorded
   * page inside it, inline styles and all, which the dashboard's own policy refuses. The stage runs no script
   * and loads nothing but its player's stylesheet, so a recording never makes the viewer's browser fetch anything.
   */
  const replayStagePolicy = (res: ServerResponse) =>
    res.setHeader(
      'Content-Security-Policy',
      ["default-src 'none'", "style-src 'self' 'unsafe-inline'", 'img-src data:', 'font-src data:', "base-uri 'none'", "form-action 'none'", "frame-ancestors 'self'"].join('; '),
    );

  return (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
      const apiUrl = apiUrlFor(req);
      securityHeaders(res, new URL(apiUrl).origin);
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('the dashboard only serves files\n');
        return;
      }
      // Opened as 127.0.0.1 while the API expects localhost (or the other way round): the API would refuse
      // the browser's Origin, so send it to the dashboard's own address.
      const requested = new URL(`http://${req.headers.host ?? 'localhost'}`);
      if (isLoopbackHost(requested.hostname) && isLoopbackHost(dashboard.hostname) && requested.host !== dashboard.host && portOf(requested) === portOf(dashboard)) {
        res.writeHead(302, { Location: `${dashboard.origin}${url.pathname}${url.search}` }).end();
        return;
      }
      if (url.pathname === '/config.json') {
        const body = JSON.stringify({ api_url: apiUrl, sso: Boolean(config.API_PUBLIC_URL), ai: aiEnabled(config), checkout: Boolean(config.PAYMENT_API_KEY), ingest_url: config.INGEST_PUBLIC_URL });
        res.writeHead(200, { 'Content-Type': types['.json']!, 'Cache-Control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
        return;
      }
      const file = normalize(join(root, decodeURIComponent(url.pathname)));
      const inside = file.startsWith(root.endsWith(sep) ? root : root + sep);
      const found = inside && extname(file) !== '' ? await stat(file).catch(() => undefined) : undefined;
      if (found?.isFile()) {
        const immutable = url.pathname.startsWith('/assets/');
        if (url.pathname === REPLAY_STAGE_PATH) replayStagePolicy(res);
        res.writeHead(200, {
          'Content-Type': types[extname(file)] ?? 'application/octet-stream',
          'Content-Length': found.size,
          'Cache-Control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        });
        if (req.method === 'HEAD') res.end();
        else createReadStream(file).pipe(res);
        return;
      }
      if (url.pathname.startsWith('/assets/')) {
        res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' }).end('not found\n');
        return;
      }
      const html = await indexHtml().catch(() => undefined);
      if (!html) {
        res
          .writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' })
          .end('The dashboard has not been built: run `npm run build` (npm start builds it).\n');
        return;
      }
      res.writeHead(200, { 'Content-Type': types['.html']!, 'Content-Length': html.length, 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : html);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('bad request\n');
    });
  };
}
