import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { requestContext } from '../context.js';

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

/** A caller's X-Request-Id when it is safe to echo and log, else a new one. */
export const requestIdFrom = (incoming: string | undefined): string => (incoming && SAFE_REQUEST_ID.test(incoming) ? incoming : randomUUID());

/** Reuses a caller's safe X-Request-Id or makes one, echoes it, and runs the request inside its context. */
export const requestId: RequestHandler = (req, res, next) => {
  const id = requestIdFrom(req.get('x-request-id'));
  req.requestId = id;
  res.setHeader('X-Request-Id', id);
  requestContext.run({ requestId: id }, next);
};
