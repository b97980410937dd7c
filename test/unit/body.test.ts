import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { AppError } from '../../src/shared/errors.js';
import { inflatePayload, readBody, type RequestBody } from '../../src/ingest/body.js';

const MiB = 1024 * 1024;
const envelope = Buffer.from(
  '{"event_id":"9ec79c33ec9942ab8353589fcb2e04dc"}\n{"type":"event"}\n' +
    JSON.stringify({ message: 'x'.repeat(50_000), level: 'error', extra: { bytes: [0, 10, 255] } }) +
    '\n',
);

/** A request as readBody sees it: a byte stream with headers, fed in `chunkSize` pieces, counting what was pulled. */
function request(body: Buffer, headers: IncomingHttpHeaders, chunkSize = 16 * 1024) {
  let offset = 0;
  const stream = new Readable({
    highWaterMark: chunkSize,
    read() {
      // Pushing on a later turn, as a socket does, lets the reader stop between chunks.
      setImmediate(() => {
        if (offset >= body.length) return void this.push(null);
        const chunk = body.subarray(offset, offset + chunkSize);
        offset += chunk.length;
        this.push(chunk);
      });
    },
  });
  return Object.assign(stream, { headers, pulled: () => offset }) as RequestBody & { pulled: () => number };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('readBody decodes Content-Encoding', () => {
  test.each([
    ['identity', (b: Buffer) => b],
    ['gzip', zlib.gzipSync],
    ['x-gzip', zlib.gzipSync],
    ['GZIP', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
    ['br', zlib.brotliCompressSync],
  ])('%s roundtrips', async (encoding, compress) => {
    const body = await readBody(request(compress(envelope), { 'content-encoding': encoding }));
    expect(body.equals(envelope)).toBe(true);
  });

  test('no Content-Encoding, as @sentry/node sends small bodies', async () => {
    expect((await readBody(request(envelope, {}))).equals(envelope)).toBe(true);
  });

  test('raw deflate (no zlib wrapper) is tolerated under "deflate", even when bytes trickle in one at a time', async () => {
    const raw = zlib.deflateRawSync(envelope);
    expect((await readBody(request(raw, { 'content-encoding': 'deflate' }, 1))).equals(envelope)).toBe(true);
    const wrapped = zlib.deflateSync(envelope);
    expect((await readBody(request(wrapped, { 'content-encoding': 'deflate' }, 1))).equals(envelope)).toBe(true);
  });

  test('zstd is decoded when node:zlib has it, else refused with unsupported_media_type', async () => {
    const zstd = zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer };
    if (zstd.zstdCompressSync) {
      const body = await readBody(request(zstd.zstdCompressSync(envelope), { 'content-encoding': 'zstd' }));
      expect(body.equals(envelope)).toBe(true);
    } else {
      const error = await rejection(readBody(request(envelope, { 'content-encoding': 'zstd' })));
      expect(error).toMatchObject({ code: 'unsupported_media_type', status: 415 });
    }
  });

  test.each(['compress', 'snappy', 'gzip, br'])('%s is unsupported_media_type', async (encoding) => {
    const error = await rejection(readBody(request(envelope, { 'content-encoding': encoding })));
    expect(error).toMatchObject({ code: 'unsupported_media_type', status: 415 });
  });

  test.each([
    ['corrupt gzip', 'gzip', Buffer.concat([zlib.gzipSync(envelope).subarray(0, 20), Buffer.alloc(200, 0x55)])],
    ['truncated gzip', 'gzip', zlib.gzipSync(envelope).subarray(0, -8)],
    ['plain text labelled gzip', 'gzip', envelope],
    ['garbage labelled deflate', 'deflate', Buffer.from('not deflate at all')],
    ['a one-byte deflate body', 'deflate', Buffer.from([0x78])],
    ['corrupt brotli', 'br', Buffer.from('definitely not brotli')],
  ])('%s is invalid_request', async (_name, encoding, body) => {
    const error = await rejection(readBody(request(body, { 'content-encoding': encoding })));
    expect(error).toMatchObject({ code: 'invalid_request', status: 400 });
  });

  test('a client that disconnects mid-body fails the read with invalid_request', async () => {
    const req = Object.assign(new Readable({ read() {} }), { headers: {} });
    const reading = readBody(req);
    req.push(envelope.subarray(0, 100));
    req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    expect(await rejection(reading)).toMatchObject({ code: 'invalid_request', message: 'request body was interrupted' });
  });
});

describe('a compressed body with a small Content-Length, read whole and decoded in one call', () => {
  /** As an SDK sends it: with its length, which picks the one call for up to 64 KiB on the wire. */
  const sized = (body: Buffer, encoding: string, chunkSize?: number) => request(body, { 'content-encoding': encoding, 'content-length': String(body.length) }, chunkSize);
  const zeros = (bytes: number) => zlib.gzipSync(Buffer.alloc(bytes), { level: 9 });

  test.each([
    ['gzip', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
    ['deflate', zlib.deflateRawSync],
    ['br', zlib.brotliCompressSync],
  ])('%s roundtrips', async (encoding, compress) => {
    const wire = compress(envelope);
    expect(wire.length).toBeLessThan(64 * 1024);
    expect((await readBody(sized(wire, encoding, 7))).equals(envelope)).toBe(true);
  });

  test.each([
    ['corrupt gzip', 'gzip', Buffer.concat([zlib.gzipSync(envelope).subarray(0, 20), Buffer.alloc(200, 0x55)])],
    ['truncated gzip', 'gzip', zlib.gzipSync(envelope).subarray(0, -8)],
    ['garbage labelled deflate', 'deflate', Buffer.from('not deflate at all')],
    ['a one-byte deflate body', 'deflate', Buffer.from([0x78])],
    ['corrupt brotli', 'br', Buffer.from('definitely not brotli')],
  ])('%s is invalid_request', async (_name, encoding, body) => {
    expect(await rejection(readBody(sized(body, encoding)))).toMatchObject({ code: 'invalid_request', status: 400 });
  });

  test('decoded bytes over maxDecompressed are payload_too_large, under the one call’s output and past it', async () => {
    const small = await rejection(readBody(sized(zlib.gzipSync(envelope), 'gzip'), { maxDecompressed: 1000 }));
    expect(small).toMatchObject({ code: 'payload_too_large', message: 'decoded request body exceeds 1000 bytes' });
    // 3 MiB of zeros in about 3 KiB: past the one call's 1 MiB, the stream decodes it up to the cap
    const large = await rejection(readBody(sized(zeros(3 * MiB), 'gzip'), { maxDecompressed: 2 * MiB }));
    expect(large).toMatchObject({ code: 'payload_too_large', message: `decoded request body exceeds ${2 * MiB} bytes` });
  });

  test('a body that decodes past the one call’s output is decoded whole within the cap', async () => {
    const body = await readBody(sized(zeros(3 * MiB), 'gzip'));
    expect(body.length).toBe(3 * MiB);
    expect(body.every((byte) => byte === 0)).toBe(true);
  });
});

describe('readBody limits', () => {
  test('compressed bytes over maxCompressed are payload_too_large', async () => {
    const gzipped = zlib.gzipSync(envelope);
    const limits = { maxCompressed: gzipped.length - 1, maxDecompressed: 10 * MiB };
    const error = await rejection(readBody(request(gzipped, { 'content-encoding': 'gzip' }, 64), limits));
    expect(error).toMatchObject({ code: 'payload_too_large', status: 413 });
    const exact = await readBody(request(gzipped, { 'content-encoding': 'gzip' }), { ...limits, maxCompressed: gzipped.length });
    expect(exact.equals(envelope)).toBe(true);
  });

  test('a Content-Length over the cap is refused before any byte is read', async () => {
    const gzipped = zlib.gzipSync(envelope);
    const req = request(gzipped, { 'content-encoding': 'gzip', 'content-length': String(gzipped.length) });
    const error = await rejection(readBody(req, { maxCompressed: 100 }));
    expect(error).toMatchObject({ code: 'payload_too_large' });
    expect(error.message).toContain(`${gzipped.length} bytes exceeds 100 bytes`);
  });

  test('an uncoded body is held to maxDecompressed, not maxCompressed', async () => {
    const limits = { maxCompressed: 100, maxDecompressed: envelope.length };
    expect((await readBody(request(envelope, {}), limits)).equals(envelope)).toBe(true);
    const error = await rejection(readBody(request(envelope, {}), { ...limits, maxDecompressed: envelope.length - 1 }));
    expect(error).toMatchObject({ code: 'payload_too_large' });
  });

  test('decoded bytes over maxDecompressed are payload_too_large', async () => {
    const error = await rejection(readBody(request(zlib.gzipSync(envelope), { 'content-encoding': 'gzip' }), { maxDecompressed: 1000 }));
    expect(error).toMatchObject({ code: 'payload_too_large', message: 'decoded request body exceeds 1000 bytes' });
  });

  describe('a gzip bomb: 1 GiB of zeros in about 1 MiB, with a 1 MiB cap', () => {
    let bomb: Buffer;
    beforeAll(() => {
      // Ten gzip members of 100 MiB of zeros each; gunzip reads concatenated members as one stream.
      const member = zlib.gzipSync(Buffer.alloc(100 * MiB), { level: 9 });
      bomb = Buffer.concat(Array.from({ length: 10 }, () => member));
    });

    test('is refused after reading a small part of it, with memory staying bounded', async () => {
      const req = request(bomb, { 'content-encoding': 'gzip' }, 1024);
      const baseline = process.memoryUsage().arrayBuffers;
      let peak = baseline;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1);
      let pulledAtRejection = -1;
      const reading = readBody(req, { maxCompressed: 20 * MiB, maxDecompressed: MiB }).catch((error: unknown) => {
        pulledAtRejection = req.pulled();
        throw error;
      });
      const error = await rejection(reading);
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);

      expect(error).toMatchObject({ code: 'payload_too_large', message: `decoded request body exceeds ${MiB} bytes` });
      // A 1 MiB cap needs about 1 KiB of this input; the rest is stream buffering, far below the whole bomb.
      expect(pulledAtRejection).toBeGreaterThan(0);
      expect(pulledAtRejection).toBeLessThan(bomb.length / 10);
      expect(peak - baseline).toBeLessThan(32 * MiB);
    });

    test('through a real HTTP server the client still gets its 413', async () => {
      const server = createServer((req, res) => {
        readBody(req, { maxDecompressed: MiB }).then(
          (body) => res.writeHead(200).end(String(body.length)),
          (error: AppError) => res.writeHead(error.status, { 'content-type': 'application/json' }).end(JSON.stringify({ code: error.code })),
        );
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      try {
        const { port } = server.address() as AddressInfo;
        const response = await fetch(`http://127.0.0.1:${port}/api/1/envelope/`, {
          method: 'POST',
          headers: { 'content-encoding': 'gzip' },
          body: bomb,
        });
        expect(response.status).toBe(413);
        expect(await response.json()).toEqual({ code: 'payload_too_large' });
      } finally {
        server.closeAllConnections();
        server.close();
      }
    });
  });
});

describe('readBody with a first line to admit', () => {
  const head = (admit: (line: Buffer) => Promise<void>) => ({ head: { maxBytes: 64 * 1024 + 1, maxWire: MiB, admit } });

  test.each([
    ['identity', (b: Buffer) => b],
    ['gzip', zlib.gzipSync],
    ['deflate', zlib.deflateSync],
  ])('%s: admit sees the first non-blank line before the rest is read, then the whole body is returned', async (encoding, compress) => {
    const body = Buffer.concat([Buffer.from('\n\n'), envelope]);
    const req = request(compress(body), { 'content-encoding': encoding }, 1024);
    const seen: string[] = [];
    const read = await readBody(
      req,
      head(async (line) => {
        seen.push(line.toString().split('\n').slice(0, 3).join('\n'));
        // nothing past what decoding the line took has been pulled while admit decides
        expect(req.pulled()).toBeLessThan(body.length / 2);
      }),
    );
    expect(read.equals(body)).toBe(true);
    expect(seen).toEqual(['\n\n{"event_id":"9ec79c33ec9942ab8353589fcb2e04dc"}']);
  });

  test('a refusal from admit rejects the read with its error and decodes nothing more', async () => {
    const bomb = Buffer.concat([zlib.gzipSync('{"dsn":"nope"}\n'), zlib.gzipSync(Buffer.alloc(100 * MiB))]);
    const req = request(bomb, { 'content-encoding': 'gzip' }, 1024);
    const refusal = new AppError('forbidden', 'DSN is unknown or revoked');
    let seen = 0;
    const error = await rejection(
      readBody(
        req,
        head(async (line) => {
          seen = line.length;
          throw refusal;
        }),
      ),
    );
    expect(error).toBe(refusal);
    expect(seen).toBeLessThan(128 * 1024);
  });

  test('a body without a line end within maxBytes is handed to admit at maxBytes; a short one at its end', async () => {
    const lengths: number[] = [];
    const admit = async (line: Buffer) => void lengths.push(line.length);
    await readBody(request(zlib.gzipSync(Buffer.alloc(10 * MiB, 'x')), { 'content-encoding': 'gzip' }), { ...head(admit), maxDecompressed: 20 * MiB }).catch(() => undefined);
    expect(await readBody(request(Buffer.from('{"dsn":1}'), {}), head(admit))).toEqual(Buffer.from('{"dsn":1}'));
    expect(lengths[0]).toBeGreaterThan(64 * 1024);
    expect(lengths[0]).toBeLessThan(256 * 1024);
    expect(lengths[1]).toBe(9);
  });

  test('compressed bytes that decode to no line within maxWire are payload_too_large before admit is asked', async () => {
    // stored deflate blocks of nothing: wire bytes that decode to no bytes at all
    const empty = Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]);
    const raw = Buffer.concat([...Array.from({ length: 300_000 }, () => empty), Buffer.from([0x03, 0x00])]);
    let asked = false;
    const error = await rejection(
      readBody(
        request(raw, { 'content-encoding': 'deflate' }),
        head(async () => {
          asked = true;
        }),
      ),
    );
    expect(error).toMatchObject({ code: 'payload_too_large', message: `the first line of the request body did not arrive within its first ${MiB} bytes` });
    expect(asked).toBe(false);
  });
});

describe('inflatePayload (replay recordings inside envelope items)', () => {
  const rrweb = Buffer.from(JSON.stringify([{ type: 4, data: { href: 'https://example.com/' }, timestamp: 1735787045678 }]));

  test.each([
    ['gzip (1f 8b)', zlib.gzipSync(rrweb)],
    ['zlib (78 ..)', zlib.deflateSync(rrweb)],
    ['plain JSON ([)', rrweb],
  ])('%s', async (_name, payload) => {
    expect((await inflatePayload(payload, MiB)).equals(rrweb)).toBe(true);
  });

  test('the cap applies to plain and compressed payloads', async () => {
    expect(await rejection(inflatePayload(rrweb, rrweb.length - 1))).toMatchObject({ code: 'payload_too_large' });
    expect(await rejection(inflatePayload(zlib.gzipSync(rrweb), rrweb.length - 1))).toMatchObject({ code: 'payload_too_large' });
  });

  test('a zlib bomb stops at the cap', async () => {
    const bomb = zlib.deflateSync(Buffer.alloc(64 * MiB), { level: 9 });
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1);
    const error = await rejection(inflatePayload(bomb, MiB));
    clearInterval(sampler);
    expect(error).toMatchObject({ code: 'payload_too_large', message: `decoded payload exceeds ${MiB} bytes` });
    expect(peak - baseline).toBeLessThan(32 * MiB);
  });

  test('corrupt compressed payloads are invalid_request', async () => {
    const truncated = zlib.gzipSync(rrweb).subarray(0, 10);
    expect(await rejection(inflatePayload(truncated, MiB))).toMatchObject({ code: 'invalid_request' });
    expect(await rejection(inflatePayload(Buffer.from([0x78, 0x9c, 1, 2, 3]), MiB))).toMatchObject({ code: 'invalid_request' });
  });
});
