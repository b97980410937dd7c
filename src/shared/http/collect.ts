import { Writable } from 'node:stream';
import type { AppError } from '../errors.js';

/** A sink that collects a stream into one buffer, failing with `tooLarge()` as soon as it passes `limit` bytes. */
export function collector(limit: number, tooLarge: () => AppError) {
  const chunks: Buffer[] = [];
  let size = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      size += chunk.length;
      if (size > limit) return done(tooLarge());
      chunks.push(chunk);
      done();
    },
  });
  return { sink, bytes: () => Buffer.concat(chunks, size) };
}
