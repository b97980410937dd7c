import { AppError } from '../shared/errors.js';
import { consumeLimit, refundLimit, type Limiter } from '../shared/http/rate-limit.js';
import type { OtlpExport } from '../shared/queues.js';
import type { RecordKind, Stamped } from '../shared/telemetry/records.js';
import type { TelemetryBatcher } from './batcher.js';
import type { DsnCache, IngestDsn } from './dsn.js';
import { clientAddress, queryOf, type IngestCall } from './http.js';
import { sentryKeyFrom } from './sentry/auth.js';

/** What every ingest route shares: DSN resolution, the per-DSN abuse limit and the batcher. */
export interface IngestContext {
  dsns: DsnCache;
  /** Per DSN, counted across ingest processes a share at a time (see SharedLimiter). */
  limiter: Limiter;
  /** Per client address, for requests without a valid key: a flood of bad keys is refused early. */
  unauthenticated: Limiter;
  batcher: TelemetryBatcher;
  /** Proxies in front of ingest whose X-Forwarded-For is believed (TRUST_PROXY_HOPS). */
  trustProxyHops: number;
}

/** Sentry SDKs back off per category on this header; an empty category list means every category. */
const sentryRateLimitHeader = (retryAfter: number) => ({ 'X-Sentry-Rate-Limits': `${retryAfter}::key:rate_limited` });

/** The key a request carries in its URL or headers, before any body is read. */
export const requestKey = (call: IngestCall) => sentryKeyFrom({ query: queryOf(call), headers: call.req.headers });

const addressKey = (ctx: IngestContext, call: IngestCall) => `ip:${clientAddress(call.req, ctx.trustProxyHops)}`;

/**
 * Takes one point of the per-address limit: for a request refused for its key, and before any body
 * is read of a request whose key can only be in its body, so a flood of such requests is refused with
 * 429 before it costs any reading or decompression.
 */
export const chargeAddress = (ctx: IngestContext, call: IngestCall) => consumeLimit(ctx.unauthenticated, addressKey(ctx, call), call.res, sentryRateLimitHeader);

/**
 * Gives back the point `chargeAddress` took once the body named a live DSN: a Sentry tunnel forwards
 * a whole site's envelopes from one address, with the DSN only in their envelope headers.
 */
export const refundAddress = (ctx: IngestContext, call: IngestCall) => refundLimit(ctx.unauthenticated, addressKey(ctx, call));

async function refuse(ctx: IngestContext, call: IngestCall, error: AppError, addressCharged: boolean): Promise<never> {
  if (!addressCharged) await chargeAddress(ctx, call);
  throw error;
}

/**
 * A DSN that passed its checks, and the verdict of its abuse limit (rejecting with 429), which the
 * route awaits once it has read the body: the limit's Redis round trip runs while the body arrives.
 */
export interface AdmittedDsn {
  dsn: IngestDsn;
  limit: Promise<void>;
}

/**
 * Resolves the key a client presented (any source Sentry or OTLP clients use), checks it is live and,
 * for Sentry routes, that it belongs to the project number in the path; then takes one point of the
 * DSN's abuse limit. Requests without a valid key count against their address instead.
 */
export async function authorizeDsn(
  ctx: IngestContext,
  call: IngestCall,
  /** `addressCharged`: the caller already took this request's point of the per-address limit. */
  options: { envelopeHeader?: Record<string, unknown>; projectNumber?: number; addressCharged?: boolean } = {},
): Promise<AdmittedDsn> {
  const charged = options.addressCharged ?? false;
  const key = sentryKeyFrom({ query: queryOf(call), headers: call.req.headers, envelopeHeader: options.envelopeHeader });
  if (!key) return refuse(ctx, call, new AppError('unauthenticated', 'no DSN key: send sentry_key, X-Sentry-Auth or Authorization: Bearer <public key>'), charged);
  let dsn: IngestDsn | undefined;
  try {
    dsn = await ctx.dsns.resolve(key);
  } catch (error) {
    throw new AppError('not_ready', 'the DSN cannot be checked right now; retry later', { headers: { 'Retry-After': '5' }, cause: error });
  }
  if (!dsn) return refuse(ctx, call, new AppError('forbidden', 'DSN is unknown or revoked'), charged);
  if (options.projectNumber !== undefined && dsn.projectNumber !== options.projectNumber) {
    throw new AppError('forbidden', 'this DSN does not belong to that project');
  }
  const limit = consumeLimit(ctx.limiter, `dsn:${dsn.publicKey}`, call.res, sentryRateLimitHeader);
  // awaited by the route; until then a refusal must not count as unhandled
  limit.catch(() => {});
  return { dsn, limit };
}

/**
 * Stamps records (and an OTLP export as it came) with their project and hands them to the batcher as
 * one unit, so a request's records of every kind are queued together or not at all; resolves once
 * they are durable.
 */
export async function enqueueRecords(ctx: IngestContext, dsn: IngestDsn, records: Partial<Record<RecordKind, unknown[]>>, sent?: OtlpExport): Promise<void> {
  const stamp = <T>(record: T): Stamped<T> => ({ orgId: dsn.orgId, projectId: dsn.projectId, record });
  await ctx.batcher.enqueue(Object.fromEntries(Object.entries(records).map(([kind, list]) => [kind, (list ?? []).map(stamp)])), sent ? [stamp(sent)] : []);
}
