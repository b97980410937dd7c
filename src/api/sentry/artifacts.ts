import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import busboy from 'busboy';
import type { Request } from 'express';
import type { Types } from 'mongoose';
import type { BlobStore } from '../../shared/clients/blob.js';
import { AppError } from '../../shared/errors.js';
import { collector } from '../../shared/http/collect.js';
import {
  assembleBody,
  assembleBundle,
  CHUNK_REQUEST_MAX_BYTES,
  CHUNK_SIZE,
  CHUNKS_PER_REQUEST,
  chunkUploadOptions,
  storeChunk,
} from '../../shared/features/artifacts/bundles.js';
import { sentryRoute, type SentryRoute } from './routing.js';

/**
 * sentry-cli's source-map upload (`sourcemaps upload`, with debug ids or `--release`): chunk-upload options,
 * the chunks themselves, and the assemble request that turns them into artifacts.
 */

const CHUNK_UPLOAD_PATH = /^(?:\/api\/0)?\/organizations\/[^/]+\/chunk-upload\/?$/i;
const ASSEMBLE_PATH = /^(?:\/api\/0)?\/organizations\/[^/]+\/artifactbundle\/assemble\/?$/i;

/**
 * The requests whose time is the client's, which the router gives no deadline: chunk uploads (up to 32 MiB of
 * gzip parts) and assemble requests (which join and unzip up to a 50 MiB bundle and store its files before
 * answering, so `ok` means the maps are usable; that takes longer than a read may).
 */
export const isBundleUpload = (req: Request) => req.method === 'POST' && (CHUNK_UPLOAD_PATH.test(req.path) || ASSEMBLE_PATH.test(req.path));

const requestTooLarge = () => new AppError('payload_too_large', `a chunk upload request may be at most ${CHUNK_REQUEST_MAX_BYTES} bytes`);
const chunkTooLarge = () => new AppError('payload_too_large', `a chunk may be at most ${CHUNK_SIZE} bytes uncompressed`);

/** Reads and drops what is left of a refused request, so the client gets the answer instead of a reset connection. */
const drain = (req: Request) => {
  req.unpipe();
  req.resume();
};

/**
 * Reads a chunk upload: `file_gzip` (gzip) or `file` (plain) parts, each named by the sha1 of its uncompressed
 * bytes. Each part is decompressed with the chunk size limit and stored before more of the request is read, so
 * at most one chunk is held in memory; a part that fails its checksum stops the request with 400.
 */
async function readChunks(req: Request, orgId: Types.ObjectId, blobs: BlobStore): Promise<number> {
  const contentType = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\b/i.test(contentType)) throw new AppError('unsupported_media_type', 'chunks are uploaded as multipart/form-data');
  if (Number(req.get('content-length') ?? 0) > CHUNK_REQUEST_MAX_BYTES) {
    drain(req);
    throw requestTooLarge();
  }
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: { 'content-type': contentType }, limits: { files: CHUNKS_PER_REQUEST, fields: 16, parts: CHUNKS_PER_REQUEST + 16, fieldSize: 1024 } });
  } catch (error) {
    throw new AppError('invalid_request', 'malformed multipart/form-data content type', { cause: error });
  }
  let failure: unknown;
  const fail = (error: unknown) => (failure ??= error);
  let stored = 0;
  /** Stores run one after another; the next bytes of the request are read once those begun are done. */
  let storing: Promise<void> = Promise.resolve();
  const decoding: Promise<void>[] = [];
  parser.on('file', (field, stream, info) => {
    if (failure || (field !== 'file_gzip' && field !== 'file')) {
      stream.resume();
      fail(new AppError('validation_failed', 'chunks go in parts named "file_gzip" (gzip) or "file"', { details: [{ path: `body.${field}`, message: 'unexpected part' }] }));
      return;
    }
    const { sink, bytes: collected } = collector(CHUNK_SIZE, chunkTooLarge);
    const decoded = field === 'file_gzip' ? pipeline(stream, createGunzip(), sink) : pipeline(stream, sink);
    decoding.push(
      decoded.then(
        () => {
          const bytes = collected();
          storing = storing.then(async () => {
            if (failure) return;
            await storeChunk(orgId, info.filename ?? '', bytes, blobs).then(() => void stored++, fail);
          });
        },
        (error: unknown) => {
          stream.resume();
          fail(error instanceof AppError ? error : new AppError('invalid_request', `chunk ${info.filename ?? ''} is not valid gzip`, { cause: error }));
        },
      ),
    );
  });
  for (const event of ['filesLimit', 'fieldsLimit', 'partsLimit'] as const) {
    parser.on(event, () => fail(new AppError('invalid_request', `a chunk upload request holds at most ${CHUNKS_PER_REQUEST} chunks`)));
  }
  const parsed = new Promise<void>((resolve, reject) => {
    parser.on('close', resolve);
    parser.on('error', (error) => reject(new AppError('invalid_request', 'malformed multipart/form-data body', { cause: error })));
  });
  parsed.catch(fail);

  let received = 0;
  try {
    for await (const data of req as AsyncIterable<Buffer>) {
      received += data.length;
      if (received > CHUNK_REQUEST_MAX_BYTES) fail(requestTooLarge());
      if (failure) break;
      if (!parser.write(data)) await Promise.race([once(parser, 'drain'), parsed]);
      // at most about one chunk in memory: the next bytes are read once the chunks decoded so far are stored
      await storing;
      if (failure) break;
    }
  } catch (error) {
    fail(new AppError('invalid_request', 'the upload could not be read', { cause: error }));
  }
  if (!failure) {
    parser.end();
    await parsed.catch(() => undefined);
    await Promise.all(decoding);
    await storing;
  }
  if (failure) {
    drain(req);
    parser.destroy();
    throw failure;
  }
  return stored;
}

export const sentryArtifactRoutes = (blobs: BlobStore): SentryRoute[] => [
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/chunk-upload',
    access: 'member',
    // absolute, as Sentry answers: the request's own scheme and host (X-Forwarded-* only as far as trust proxy allows)
    handler: async ({ req, organization }) => ({ body: chunkUploadOptions(`${req.protocol}://${req.get('host')}/api/0/organizations/${encodeURIComponent(organization.slug)}/chunk-upload/`) }),
  }),
  sentryRoute({
    method: 'post',
    path: '/organizations/:org/chunk-upload',
    access: 'member',
    handler: async ({ req, principal }) => {
      await readChunks(req, principal.orgId, blobs);
      return { status: 200 };
    },
  }),
  sentryRoute({
    method: 'post',
    path: '/organizations/:org/artifactbundle/assemble',
    access: 'member',
    body: assembleBody,
    handler: async ({ req, principal, body }) => ({ body: await assembleBundle(principal, body, blobs, req.ip) }),
  }),
];
