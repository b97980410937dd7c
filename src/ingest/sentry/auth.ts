import type { IncomingHttpHeaders } from 'node:http';
import { AppError } from '../../shared/errors.js';

export interface SentryAuthSources {
  /** Parsed query string (Express's `req.query`). */
  query?: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** The envelope's header, for its `dsn`. */
  envelopeHeader?: Record<string, unknown>;
}

/**
 * The DSN public key a Sentry or OTLP client presented: `sentry_key` in the query,
 * `X-Sentry-Auth: Sentry …`, `Authorization: Sentry …` or `Bearer …`, or the envelope header's `dsn`.
 * Sources naming different keys are refused, as Relay refuses more than one credential.
 */
export function sentryKeyFrom({ query, headers, envelopeHeader }: SentryAuthSources): string | undefined {
  const keys = new Set<string>();
  const add = (key: string | undefined) => {
    const trimmed = key?.trim();
    if (trimmed) keys.add(trimmed);
  };
  for (const value of [query?.sentry_key].flat()) if (typeof value === 'string') add(value);
  for (const value of [headers['x-sentry-auth']].flat()) add(fromSentryScheme(value));
  add(fromSentryScheme(headers.authorization));
  add(/^\s*bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1]);
  if (typeof envelopeHeader?.dsn === 'string') add(fromDsn(envelopeHeader.dsn));

  if (keys.size > 1) throw new AppError('invalid_request', 'the request names more than one Sentry key');
  return keys.values().next().value;
}

/** `Sentry sentry_key=…, sentry_version=7, …`: the scheme name is case-insensitive, pairs comma-separated. */
function fromSentryScheme(header: string | undefined): string | undefined {
  const params = /^\s*sentry\s+(.*)$/is.exec(header ?? '')?.[1];
  if (params === undefined) return undefined;
  for (const pair of params.split(',')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === 'sentry_key') return pair.slice(eq + 1);
  }
  return undefined;
}

/** A DSN's public key is its URL's user name (`https://<key>[:<secret>]@host/<project>`). */
function fromDsn(dsn: string): string | undefined {
  try {
    return decodeURIComponent(new URL(dsn).username);
  } catch {
    return undefined;
  }
}
