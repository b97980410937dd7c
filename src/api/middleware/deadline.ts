import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { deadlineExceeded, requestContext } from '../../shared/context.js';

/**
 * Gives a request a deadline `ms` after it arrived: a request still working then is answered 503
 * `deadline_exceeded` (by `answer`, the app's error handler) while the process keeps serving others,
 * and its reads stop at their next step (checkDeadline) or when their query's time runs out
 * (untilDeadline). Requests for which `exempt` says so (uploads, whose time is the client's) have none.
 */
export const deadline =
  (ms: number, answer: ErrorRequestHandler, exempt: (req: Request) => boolean): RequestHandler =>
  (req, res, next) => {
    const context = requestContext.getStore();
    if (!context || exempt(req)) return next();
    context.deadline = Date.now() + ms;
    const timer = setTimeout(() => {
      if (!res.headersSent) answer(deadlineExceeded(), req, res, () => {});
    }, ms);
    res.on('close', () => clearTimeout(timer));
    next();
  };
