import type { IncomingHttpHeaders } from 'node:http';
import { Readable, type Transform } from 'node:stream';
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
  /** A first line to pass before the rest of the body is read. */
  head?: BodyHead;
}

/**
 * The first line of a body, checked before the rest is read (an envelope whose request carries no key
 * names its DSN there). Reading pauses at the end of the first non-blank line, once `maxBytes` are
 * decoded without one, or at the end of the body, and goes on under the body's caps only once `admit`
 * resolves; what `admit` throws refuses the request with nothing more decoded.
 */
export interface BodyHead {
  /** Decoded bytes after which `admit` gets what there is, line end or not. */
  maxBytes: number;
  /** Bytes on the wire allowed before the first line is decoded (a compressed stream can decode to nothing for long): past them, 413. */
  maxWire: number;
  admit(head: Buffer): Promise<void>;
}

/**
 * A compressed body whose `Content-Length` is at most this is read whole and decoded in one call, up to
 * ONE_CALL_OUTPUT decoded bytes. A zlib stream costs a request's decoding about 70 µs of CPU in its
 * stream machinery and its hand-offs to the thread pool; one call on the event loop about 10 µs (an
 * event of 6 KB gzipped to 800 bytes). A body that decodes to more than that (or a bomb) goes on
 * through the stream, as does a larger or chunked one, and every key-less envelope (its first line is
 * admitted before the rest is decoded).
 */
const ONE_CALL_WIRE = 64 * 1024;
const ONE_CALL_OUTPUT = 1024 * 1024;

/** An HTTP request as far as reading its body goes (an `IncomingMessage` is one). */
export type RequestBody = Readable & { headers: IncomingHttpHeaders };

type Coding = 'identity' | 'gzip' | 'deflate' | 'br' | 'zstd';

// zstd arrived in node:zlib with Node 22.15 (absent from Node 20's types); without it zstd answers 415.
const createZstdDecompress = (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress;

/**
 * Reads a request body into memory, decoding its `Content-Encoding` while enforcing both caps as the
 * bytes flow, so a compression bomb stops after about `maxDecompressed` plus one zlib chunk of output.
 * On failure the rest of the body is read and discarded rather than the socket destroyed, so the
 * caller can still answer 413/400/415. Plain events and pipes only: this runs for every ingest
 * request, and `stream.pipeline` costs an AbortController and a DOMException per call.
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
  const maxWire = coding === 'identity' ? maxDecompressed : (limits.maxCompressed ?? DEFAULT_MAX_COMPRESSED);
  const declared = Number(req.headers['content-length']);
  if (declared > maxWire) {
    req.resume();
    throw tooLarge(`request body of ${declared} bytes exceeds ${maxWire} bytes`);
  }
  if ((coding === 'gzip' || coding === 'deflate' || coding === 'br') && !limits.head && declared <= ONE_CALL_WIRE) {
    return decodeInOneCall(await collect(req, 'identity', maxWire, maxWire, 'request body'), coding, maxDecompressed, 'request body');
  }
  return collect(req, coding, maxWire, maxDecompressed, 'request body', limits.head);
}

/** Whether deflate data starts with a zlib header (RFC 1950) rather than raw deflate (RFC 1951): its first two bytes tell. */
const isZlibWrapped = (data: Buffer) => (data[0]! & 0x0f) === 8 && ((data[0]! << 8) | data[1]!) % 31 === 0;

/** Decodes a small compressed body held in memory (see ONE_CALL_WIRE), as `collect` would. */
function decodeInOneCall(wire: Buffer, coding: 'gzip' | 'deflate' | 'br', maxBytes: number, what: string): Promise<Buffer> | Buffer {
  if (coding === 'deflate' && wire.length < 2) throw new AppError('invalid_request', `${what} is too short to be deflate data`);
  const limit = Math.min(maxBytes, ONE_CALL_OUTPUT);
  try {
    const options = { maxOutputLength: limit };
    if (coding === 'gzip') return zlib.gunzipSync(wire, options);
    if (coding === 'br') return zlib.brotliDecompressSync(wire, options);
    return isZlibWrapped(wire) ? zlib.inflateSync(wire, options) : zlib.inflateRawSync(wire, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') throw new AppError('invalid_request', `${what} is not valid ${coding} data`, { cause: error });
    if (limit === maxBytes) throw tooLarge(`decoded ${what} exceeds ${maxBytes} bytes`);
    return collect(Readable.from([wire]), coding, Infinity, maxBytes, what);
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
  if (payload.length <= ONE_CALL_WIRE) return decodeInOneCall(payload, coding, maxBytes, 'payload');
  return collect(Readable.from([payload]), coding, Infinity, maxBytes, 'payload');
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

const isBlank = (byte: number | undefined) => byte === 0x20 || byte === 0x09 || byte === 0x0d || byte === 0x0a;

/**
 * Reads `input` (at most `maxWire` bytes of it) through the decoder for `coding`, failing as soon as
 * the decoded bytes pass `maxBytes`. The decoder is fed by `pipe`, so a slow decoder holds the input
 * back instead of buffering all of it; pausing the decoder (while `firstLine.admit` decides) holds the
 * input back the same way. A failure stops decoding and drains the rest of the input.
 */
function collect(input: Readable, coding: Coding, maxWire: number, maxBytes: number, what: string, firstLine?: BodyHead): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let decoded = 0;
    let received = 0;
    let decoder: Transform | undefined;
    // deflate's two flavours are told apart by the first two bytes
    let head: Buffer[] | undefined = coding === 'deflate' ? [] : undefined;
    let settled = false;
    // 'reading' the first line for `firstLine.admit`, 'admitting' while it decides, undefined once admitted
    let gate: 'reading' | 'admitting' | undefined = firstLine && 'reading';
    let lineStarted = false;
    let ended = false;

    const pause = () => (coding === 'identity' ? input.pause() : decoder?.pause());
    const admit = () => {
      gate = 'admitting';
      pause();
      firstLine!.admit(Buffer.concat(chunks, decoded)).then(
        () => {
          if (settled) return;
          gate = undefined;
          if (ended) finish();
          else if (coding === 'identity') input.resume();
          else decoder!.resume();
        },
        (error: unknown) => finish(error),
      );
    };
    // whether `chunk` ends the first non-blank line: a line feed after a byte other than whitespace
    const endsFirstLine = (chunk: Buffer) => {
      let at = 0;
      if (!lineStarted) {
        while (at < chunk.length && isBlank(chunk[at])) at += 1;
        if (at === chunk.length) return false;
        lineStarted = true;
      }
      return chunk.indexOf(0x0a, at) !== -1;
    };

    const finish = (error?: unknown) => {
      if (settled) return;
      // the end of a body whose first line is not yet admitted: it is admitted (or refused) first
      if (!error && gate) {
        ended = true;
        if (gate === 'reading') admit();
        return;
      }
      settled = true;
      input.off('data', onWire).off('end', onEnd).off('error', onInputError);
      if (decoder) {
        input.unpipe(decoder);
        decoder.off('data', onDecoded).off('end', onDecoderEnd).off('error', onDecoderError);
        // a chunk the pipe was already handing over may still reach it after the destroy
        decoder.on('error', () => {});
        if (error) decoder.destroy();
      }
      if (!error) return resolve(Buffer.concat(chunks, decoded));
      input.on('error', () => {});
      input.resume();
      reject(error);
    };
    const onDecoded = (chunk: Buffer) => {
      decoded += chunk.length;
      if (decoded > maxBytes) return finish(tooLarge(`decoded ${what} exceeds ${maxBytes} bytes`));
      chunks.push(chunk);
      if (gate === 'reading' && (decoded >= firstLine!.maxBytes || endsFirstLine(chunk))) admit();
    };
    const onDecoderEnd = () => finish();
    const onDecoderError = (error: Error) => finish(new AppError('invalid_request', `${what} is not valid ${coding} data`, { cause: error }));
    const startDecoder = (transform: Transform) => {
      decoder = transform;
      decoder.on('data', onDecoded).on('end', onDecoderEnd).on('error', onDecoderError);
    };
    const onWire = (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxWire) return finish(tooLarge(`${what} exceeds ${maxWire} bytes`));
      if (gate === 'reading' && received > firstLine!.maxWire) return finish(tooLarge(`the first line of the ${what} did not arrive within its first ${firstLine!.maxWire} bytes`));
      if (coding === 'identity') return onDecoded(chunk);
      if (!head) return;
      head.push(chunk);
      const seen = Buffer.concat(head);
      if (seen.length < 2) return;
      head = undefined;
      const zlibWrapped = (seen[0]! & 0x0f) === 8 && ((seen[0]! << 8) | seen[1]!) % 31 === 0;
      startDecoder(zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw());
      decoder!.write(seen);
      input.pipe(decoder!);
    };
    const onEnd = () => {
      if (coding === 'identity') return finish();
      if (head) return finish(new AppError('invalid_request', `${what} is too short to be deflate data`));
    };
    const onInputError = (error: Error) => finish(new AppError('invalid_request', `${what} was interrupted`, { cause: error }));

    input.on('error', onInputError).on('end', onEnd);
    if (coding !== 'identity' && coding !== 'deflate') {
      startDecoder(decoderFor(coding));
      input.pipe(decoder!);
    }
    // after the pipe, so its flow control decides when chunks come; this listener only counts them
    input.on('data', onWire);
  });
}

function decoderFor(coding: Exclude<Coding, 'deflate' | 'identity'>): Transform {
  switch (coding) {
    case 'gzip':
      return zlib.createGunzip();
    case 'br':
      return zlib.createBrotliDecompress();
    case 'zstd':
      return createZstdDecompress!();
  }
}

const tooLarge = (message: string) => new AppError('payload_too_large', message);
