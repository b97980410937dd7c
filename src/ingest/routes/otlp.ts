import protobuf from 'protobufjs';
import { AppError, type ErrorCode } from '../../shared/errors.js';
import { toAppError } from '../../shared/http/errors.js';
import { readBody } from '../body.js';
import { authorizeDsn, enqueueRecords, type IngestContext } from '../context.js';
import { mediaTypeOf, send, type IngestCall } from '../http.js';
import { exportBodyEncoding } from '../../shared/queues.js';
import { decodeExport, exportResponse, type OtlpContentType, type OtlpSignal } from '../../shared/telemetry/otlp/decode.js';

/** PROTOCOLS.md: OTLP bodies are capped at 64 MiB once decompressed. */
const MAX_DECOMPRESSED = 64 * 1024 * 1024;
const MAX_COMPRESSED = 20 * 1024 * 1024;

const mediaTypes: Record<string, OtlpContentType> = { 'application/x-protobuf': 'protobuf', 'application/json': 'json' };

/** The gRPC status code OTLP clients read from a refusal's `google.rpc.Status`. */
const grpcCodes: Partial<Record<ErrorCode, number>> = {
  invalid_request: 3, // INVALID_ARGUMENT
  validation_failed: 3,
  unsupported_media_type: 3,
  payload_too_large: 8, // RESOURCE_EXHAUSTED
  rate_limited: 8,
  unauthenticated: 16, // UNAUTHENTICATED
  forbidden: 7, // PERMISSION_DENIED
  not_found: 5, // NOT_FOUND
  not_ready: 14, // UNAVAILABLE
};

/** `google.rpc.Status { int32 code = 1; string message = 2; }`, written field by field. */
const statusMessage = (code: number, message: string) => protobuf.Writer.create().uint32(8).int32(code).uint32(18).string(message).finish();

/**
 * The OTLP spec answers a protobuf request's refusal with a protobuf Status. Anything else is thrown on,
 * to get the JSON error body every other refusal gets: a JSON request's refusal, and an unexpected
 * error (logged, and answered 500).
 */
function refuseInProtobuf(call: IngestCall, error: unknown): void {
  const appError = toAppError(error);
  const grpcCode = grpcCodes[appError.code];
  if (mediaTypeOf(call.req) !== 'application/x-protobuf' || grpcCode === undefined) throw error;
  for (const [name, value] of Object.entries(appError.headers ?? {})) call.res.setHeader(name, value);
  send(call, appError.status, 'application/x-protobuf', statusMessage(grpcCode, appError.message));
}

/** OTLP/HTTP: POST /v1/traces, /v1/logs, /v1/metrics in protobuf or JSON, answered in the same encoding. */
export async function acceptExport(ctx: IngestContext, call: IngestCall, signal: OtlpSignal): Promise<void> {
  try {
    const mediaType = mediaTypeOf(call.req);
    const contentType = mediaTypes[mediaType];
    if (!contentType) throw new AppError('unsupported_media_type', 'OTLP/HTTP takes application/x-protobuf or application/json');
    const { dsn, limit } = await authorizeDsn(ctx, call);
    const body = await readBody(call.req, { maxCompressed: MAX_COMPRESSED, maxDecompressed: MAX_DECOMPRESSED });
    await limit;
    const receivedMs = Date.now();
    // decoded here to answer partialSuccess and refuse a malformed export; the job carries the export itself (see OtlpExport)
    const { kept, rejected, errors } = decodeExport(signal, body, contentType, receivedMs);
    if (kept === 0 && rejected > 0) throw new AppError('invalid_request', `none of the ${rejected} ${signal} items could be stored: ${errors.join('; ')}`);
    const outcomes = rejected > 0 ? [{ category: signal === 'traces' ? 'spans' : signal, reason: 'invalid', quantity: rejected } as const] : [];
    const sent = kept > 0 ? { signal, encoding: contentType, body: body.toString(exportBodyEncoding(contentType)), receivedMs, items: kept } : undefined;
    await enqueueRecords(ctx, dsn, { outcomes }, sent);
    send(call, 200, contentType === 'json' ? 'application/json; charset=utf-8' : mediaType, exportResponse(signal, contentType, rejected, errors.join('; ')));
  } catch (error) {
    refuseInProtobuf(call, error);
  }
}
