import type { IncomingHttpHeaders } from 'node:http';
import { PassThrough, Readable, Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as zlib from 'node:zlib';
import { AppError } from '../shared/errors.js';

/** CONTRACT.md's ingest limits: 20 MiB on the wire when compressed, 100 MiB once decoded. */
export const DEFAULT_MAX_COMPRESSED = 20 * 1024 * 1024;
export const DEFAULT_MAX_DECOMPRESSED = 100 * 1024 * 1024;

export interface BodyLimits {
  /** Wire bytes of a body sent with a content coding. */
  maxCompressed?: number;
  /** Decoded bytes; also the only cap on a body sent without a content coding. */
  maxDecompressed?: number;
}

/** An HTTP request as far as reading its body goes (an `IncomingMessage` is one). */
export type RequestBody = Readable & { headers: IncomingHttpHeaders };

type Coding = 'identity' | 'gzip' | 'deflate' | 'br' | 'zstd';

// zstd arrived in node:zlib with Node 22.15 (absent from Node 20's types); without it zstd answers 415.
const createZstdDecompress = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;

/**
 * Reads a request body into memory, decoding its `Content-Encoding` while enforcing both caps as the
 * bytes flow, so a compression bomb stops after about `maxDecompressed` plus one zlib chunk of output.
 * On failure the rest of the body is read and discarded rather than the socket destroyed, so the
 * caller can still answer 413/400/415.
 */
export async function readBody(req: RequestBody, limits: BodyLimits = {}): Promise<Buffer> {
  const maxDecompressed = limits.maxDecompressed ?? DEFAULT_MAX_DECOMPRESSED;
  let coding: Coding;
  try {
    coding = contentCoding(req.headers['content-encoding']);
  } catch (error) {
    req.resume();
    throw error;
  }
  // The compressed cap is about wire bytes that expand; an uncoded body is already its decoded size.
  const maxWire = coding === 'identity' ? maxDecompressed : (limits.maxCompressed ?? DEFAULT_MAX_COMPRESSED);
  const declared = Number(req.headers['content-length']);
  if (declared > maxWire) {
    req.resume();
    throw tooLarge(`request body of ${declared} bytes exceeds ${maxWire} bytes`);
  }

  let received = 0;
  const wire = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > maxWire) callback(tooLarge(`request body exceeds ${maxWire} bytes`));
      else callback(null, chunk);
    },
  });
  // pipeline() and peek() report wire's errors; this only keeps one raised between them from going unhandled.
  wire.on('error', () => {});
  // pipe() forwards data, not errors: a client that disconnects mid-body must fail the read.
  const onRequestError = (error: Error) =>
    wire.destroy(new AppError('invalid_request', 'request body was interrupted', { cause: error }));
  req.once('error', onRequestError);
  req.pipe(wire);
  try {
    return await decode(wire, coding, maxDecompressed, 'request body');
  } catch (error) {
    req.unpipe(wire);
    req.resume();
    throw error;
  } finally {
    req.off('error', onRequestError);
  }
}

/**
 * Decodes a payload already in memory by its leading bytes, as replay recordings arrive inside
 * envelope items: `1f 8b` gzip, `78 ..` zlib, anything else (`[` for rrweb JSON) as it is.
 */
export async function inflatePayload(payload: Buffer, maxBytes: number): Promise<Buffer> {
  const coding: Coding = payload[0] === 0x1f && payload[1] === 0x8b ? 'gzip' : payload[0] === 0x78 ? 'deflate' : 'identity';
  if (coding === 'identity') {
    if (payload.length > maxBytes) throw tooLarge(`payload exceeds ${maxBytes} bytes`);
    return payload;
  }
  return decode(Readable.from(payload), coding, maxBytes, 'payload');
}

/** Parses `Content-Encoding`; stacked codings are refused rather than chaining decoders per request. */
function contentCoding(header: string | undefined): Coding {
  const codings = (header ?? '')
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .filter((part) => part !== '' && part !== 'identity');
  if (codings.length > 1) throw new AppError('unsupported_media_type', `stacked content encodings are not supported: ${header}`);
  const [coding = 'identity'] = codings;
  if (coding === 'x-gzip') return 'gzip';
  if (coding === 'gzip' || coding === 'deflate' || coding === 'br') return coding;
  if (coding === 'zstd' && createZstdDecompress) return coding;
  if (coding === 'identity') return coding;
  throw new AppError('unsupported_media_type', `unsupported content encoding: ${coding}`);
}

/** Streams `input` through the decoder for `coding`, failing as soon as the output passes `maxBytes`. */
async function decode(input: Readable, coding: Coding, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    const decoder = coding === 'deflate' ? await deflateDecoder(input) : decoderFor(coding);
    // A Writable rather than an async-iterating function: its error reaches pipeline() first, where the
    // iterator's teardown would report an AbortError instead of the over-cap error.
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        total += chunk.length;
        if (total > maxBytes) return callback(tooLarge(`decoded ${what} exceeds ${maxBytes} bytes`));
        chunks.push(chunk);
        callback();
      },
    });
    await pipeline(input, decoder, sink);
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw new AppError('invalid_request', `${what} is not valid ${coding} data`, { cause: error });
  }
  return Buffer.concat(chunks, total);
}

function decoderFor(coding: Exclude<Coding, 'deflate'>): Transform {
  switch (coding) {
    case 'identity':
      return new PassThrough();
    case 'gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return createZstdDecompress!();
  }
}

/**
 * HTTP's deflate is zlib-wrapped, but some clients send raw deflate; a zlib header is a method
 * nibble of 8 with a 16-bit value divisible by 31.
 */
async function deflateDecoder(input: Readable): Promise<Transform> {
  const head = await peek(input, 2);
  if (!head) throw new AppError('invalid_request', 'body is too short to be deflate data');
  const zlibWrapped = (head[0]! & 0x0f) === 8 && ((head[0]! << 8) | head[1]!) % 31 === 0;
  return zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw();
}

/** The first `n` bytes of a stream nobody reads yet, put back for the pipeline that follows; undefined if it ends sooner. */
async function peek(stream: Readable, n: number): Promise<Buffer | undefined> {
  let head = Buffer.alloc(0);
  while (head.length < n) {
    const chunk = stream.read() as Buffer | null;
    if (chunk) {
      head = Buffer.concat([head, chunk]);
      continue;
    }
    if (stream.errored) throw stream.errored;
    if (stream.readableEnded || stream.destroyed) return undefined;
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        stream.off('readable', settle).off('end', settle).off('close', settle).off('error', settle);
        if (error) reject(error);
        else resolve();
      };
      stream.on('readable', settle).on('end', settle).on('close', settle).on('error', settle);
    });
  }
  stream.unshift(head);
  return head;
}

const tooLarge = (message: string) => new AppError('payload_too_large', message);
