/** The error codes of CONTRACT.md and the one place they map to HTTP status. */
export const errorStatus = {
  invalid_request: 400,
  validation_failed: 400,
  unauthenticated: 401,
  invalid_credentials: 401,
  origin_rejected: 403,
  forbidden: 403,
  consent_withdrawn: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  sso_unavailable: 501,
  ai_unavailable: 501,
  email_unavailable: 501,
  not_ready: 503,
  /** A request still working at REQUEST_DEADLINE_MS: answered, and its reads stopped. */
  deadline_exceeded: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.status = errorStatus[code];
    this.details = options.details;
    this.headers = options.headers;
  }
}

export const notFound = (what = 'resource') => new AppError('not_found', `${what} not found`);

/**
 * A unique clash, which callers turn into `conflict` or "already done": MongoDB's duplicate-key error,
 * or FerretDB's answer to an update that breaks a unique index: code 1 carrying PostgreSQL's 23505 or
 * SQLite's "UNIQUE constraint failed".
 */
export function isDuplicateKey(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 11000 || (code === 1 && typeof message === 'string' && /23505|UNIQUE constraint failed/.test(message));
}
