import { pino, type DestinationStream, type Logger } from 'pino';
import { currentContext } from './context.js';

export type { Logger };

/** Secrets never reach a log line: credentials in headers, bodies and job payloads are censored. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-sentry-auth"]',
  'res.headers["set-cookie"]',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: redactPaths, censor: '[redacted]' },
      // Every line written inside a request or job carries its id.
      mixin: () => {
        const { requestId, jobId } = currentContext();
        return { ...(requestId && { request_id: requestId }), ...(jobId && { job_id: jobId }) };
      },
    },
    destination,
  );
}
