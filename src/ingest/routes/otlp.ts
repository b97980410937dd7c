import { Router } from 'express';
import { AppError } from '../../shared/errors.js';
import { readBody } from '../body.js';
import { authorizeDsn, enqueueRecords, type IngestContext } from '../context.js';
import { decodeLogs, decodeMetrics, decodeTraces, exportResponse, type OtlpContentType, type OtlpSignal } from '../otlp/decode.js';

/** PROTOCOLS.md: OTLP bodies are capped at 64 MiB once decompressed. */
const MAX_DECOMPRESSED = 64 * 1024 * 1024;
const MAX_COMPRESSED = 20 * 1024 * 1024;

const mediaTypes: Record<string, OtlpContentType> = { 'application/x-protobuf': 'protobuf', 'application/json': 'json' };

/** Decodes one signal into record lists by kind, with the count OTLP reports as rejected. */
function decode(signal: OtlpSignal, body: Buffer, contentType: OtlpContentType) {
  switch (signal) {
    case 'traces': {
      const { spans, rejected, errors } = decodeTraces(body, contentType);
      return { records: { spans }, rejected, errors };
    }
    case 'logs': {
      const { logs, rejected, errors } = decodeLogs(body, contentType);
      return { records: { logs }, rejected, errors };
    }
    case 'metrics': {
      const { points, rejected, errors } = decodeMetrics(body, contentType);
      return { records: { metrics: points }, rejected, errors };
    }
  }
}

/** OTLP/HTTP: POST /v1/traces, /v1/logs, /v1/metrics in protobuf or JSON, answered in the same encoding. */
export function otlpRouter(ctx: IngestContext): Router {
  const router = Router();
  for (const signal of ['traces', 'logs', 'metrics'] as const) {
    router.post(`/v1/${signal}`, async (req, res) => {
      const mediaType = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      const contentType = mediaTypes[mediaType];
      if (!contentType) throw new AppError('unsupported_media_type', 'OTLP/HTTP takes application/x-protobuf or application/json');
      const dsn = await authorizeDsn(ctx, req, res);
      const body = await readBody(req, { maxCompressed: MAX_COMPRESSED, maxDecompressed: MAX_DECOMPRESSED });
      const { records, rejected, errors } = decode(signal, body, contentType);
      await enqueueRecords(ctx, dsn, records);
      res.type(mediaType).send(exportResponse(signal, contentType, rejected, errors.join('; ')));
    });
  }
  return router;
}
