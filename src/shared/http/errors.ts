import type { ErrorRequestHandler, RequestHandler } from 'express';
import { deadlineExceeded } from '../context.js';
import { AppError, isDuplicateKey, type ErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';

/** Errors raised by Express's body parsers, by their `type`. */
const parserErrors: Record<string, { code: ErrorCode; message: string }> = {
  'entity.too.large': { code: 'payload_too_large', message: 'request body is over its size limit' },
  'entity.parse.failed': { code: 'invalid_request', message: 'request body is not valid JSON' },
  'encoding.unsupported': { code: 'unsupported_media_type', message: 'unsupported content encoding' },
  'charset.unsupported': { code: 'unsupported_media_type', message: 'unsupported charset' },
  'request.aborted': { code: 'invalid_request', message: 'request aborted' },
};

export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDuplicateKey(error)) return new AppError('conflict', 'that already exists', { cause: error });
  // MaxTimeMSExpired: a read given the time left before its request's deadline (untilDeadline) ran out of it
  if ((error as { code?: unknown } | null)?.code === 50) return deadlineExceeded();
  // CursorNotFound: a long read's getMore came after FerretDB had dropped its cursor (views.ts, readOnce):
  // the read did not finish in its time, which is what deadline_exceeded says
  if ((error as { code?: unknown } | null)?.code === 43) return deadlineExceeded();
  const type = (error as { type?: unknown } | null)?.type;
  const parser = typeof type === 'string' ? parserErrors[type] : undefined;
  if (parser) return new AppError(parser.code, parser.message, { cause: error });
  return new AppError('internal_error', 'internal error', { cause: error });
}

export const notFoundRoute: RequestHandler = (req) => {
  throw new AppError('not_found', `no route for ${req.method} ${req.path}`);
};

/** CONTRACT.md's error body: what every refusal answers, never internals. */
export const errorBody = (appError: AppError, requestId: string | undefined) => ({
  code: appError.code,
  message: appError.message,
  request_id: requestId,
  ...(appError.details && { details: appError.details }),
});

/** The one place an error becomes a response: CONTRACT.md's body (or `body`'s, for an API that speaks another's shape), never internals. */
export function errorHandler(logger: Logger, body: (appError: AppError, requestId: string | undefined) => unknown = errorBody): ErrorRequestHandler {
  return (error, req, res, _next) => {
    const appError = toAppError(error);
    if (appError.code === 'internal_error') logger.error({ err: error }, 'unhandled error');
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(appError.headers ?? {})) res.setHeader(name, value);
    res.status(appError.status).json(body(appError, req.requestId));
  };
}
