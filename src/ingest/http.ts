import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery, type ParsedUrlQuery } from 'node:querystring';
import { AppError } from '../shared/errors.js';
import { errorBody, toAppError } from '../shared/http/errors.js';
import type { Logger } from '../shared/logger.js';

/**
 * One ingest request as the routes see it: node:http's request and response and what the handler
 * read off them once. Ingest answers thousands of requests a second on the hot path, so it has no
 * framework's request objects, only this.
 */
export interface IngestCall {
  req: IncomingMessage;
  res: ServerResponse;
  requestId: string;
  /** The URL's path, as sent (not decoded). */
  path: string;
  /** What follows the `?`, if anything. */
  search: string;
  /** When the request arrived (performance.now()), for the request log. */
  started: number;
  /** The parsed query, once something asked for it (queryOf). */
  query?: ParsedUrlQuery;
}

/**
 * The path and query of a request target: origin-form (`/api/1/envelope/?…`) as it is, absolute-form
 * (`http://host/api/1/envelope/?…`, which HTTP/1.1 servers must accept) without its scheme and host.
 */
export function originFormOf(target: string): string {
  if (target.startsWith('/')) return target;
  try {
    const url = new URL(target);
    return `${url.pathname}${url.search}`;
  } catch {
    return target;
  }
}

/** The query string parsed as Express's default ("simple") parser does, once per request. */
export const queryOf = (call: IngestCall): ParsedUrlQuery => (call.query ??= parseQuery(call.search));

/** The request's `Content-Type` without parameters, lowercased: what routes decide on. */
export const mediaTypeOf = (req: IncomingMessage): string => (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();

/**
 * The client's address: the peer's, or with `hops` proxies trusted, the address that many entries
 * from the right of X-Forwarded-For (as Express's `trust proxy` with a hop count reads it).
 */
export function clientAddress(req: IncomingMessage, hops: number): string | undefined {
  const peer = req.socket.remoteAddress;
  if (hops === 0) return peer;
  const forwarded = [req.headers['x-forwarded-for'] ?? ''].flat().join(',').split(',');
  const chain = [peer, ...forwarded.map((address) => address.trim()).filter((address) => address !== '').reverse()];
  return chain[Math.min(hops, chain.length - 1)];
}

/** Answers `body` (already serialised) with `status`. */
export function send(call: IngestCall, status: number, contentType: string, body: string | Uint8Array): void {
  const { res } = call;
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  res.end(body);
}

export const sendJson = (call: IngestCall, status: number, value: unknown): void => send(call, status, 'application/json; charset=utf-8', JSON.stringify(value));

/** Answers a refusal with its headers and CONTRACT.md's error body; anything unexpected is logged and answered 500. */
export function sendError(call: IngestCall, error: unknown, logger: Logger): void {
  const appError = toAppError(error);
  if (appError.code === 'internal_error') logger.error({ err: error, request_id: call.requestId }, 'unhandled error');
  if (call.res.headersSent) {
    call.res.end();
    return;
  }
  for (const [name, value] of Object.entries(appError.headers ?? {})) call.res.setHeader(name, value);
  sendJson(call, appError.status, errorBody(appError, call.requestId));
}

export const noRoute = (call: IngestCall) => new AppError('not_found', `no route for ${call.req.method} ${call.path}`);
