import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import busboy from 'busboy';
import type { Request } from 'express';
import { z } from 'zod';
import type { BlobStore } from '../../shared/clients/blob.js';
import { AppError } from '../../shared/errors.js';
import { collector } from '../../shared/http/collect.js';
import { ARTIFACT_MAX_BYTES, artifactFields, artifactJson, listArtifactsQuery, type ArtifactFields } from '../../shared/features/artifacts/schemas.js';
import { deleteArtifact, listArtifacts, uploadArtifact, type ArtifactUpload } from '../../shared/features/artifacts/service.js';
import { defineRoute, listOf, refuseNulText } from '../routing.js';

/**
 * An artifact upload, which the JSON body parser leaves alone (a source map is JSON, and far over its
 * 1 MiB limit): the route reads it as a stream after the caller is authenticated and the project
 * found, with the 50 MiB limit of an upload.
 */
export const isArtifactUpload = (req: Request) => req.method === 'POST' && /^\/v1\/projects\/[^/]+\/artifacts\/?$/i.test(req.path);

const tooLarge = () => new AppError('payload_too_large', `an artifact may be at most ${ARTIFACT_MAX_BYTES} bytes`);

/** The request body, decompressed; the limit applies to what comes out. */
function decoded(req: Request): Readable {
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') return req;
  const decoder = { gzip: createGunzip, 'x-gzip': createGunzip, deflate: createInflate, br: createBrotliDecompress }[encoding];
  if (!decoder) throw new AppError('unsupported_media_type', `unsupported content encoding ${encoding}`);
  const stream = decoder();
  req.pipe(stream);
  stream.on('error', () => req.unpipe(stream));
  return stream;
}


async function readRaw(req: Request, contentType: string | undefined, limit: number): Promise<Omit<ArtifactUpload, 'fields'> & { fields: Record<string, string> }> {
  if (req.get('content-encoding') === undefined && Number(req.get('content-length') ?? 0) > limit) throw tooLarge();
  const { sink, bytes } = collector(limit, tooLarge);
  await pipeline(decoded(req), sink).catch((error: unknown) => {
    throw error instanceof AppError ? error : new AppError('invalid_request', 'the upload could not be read', { cause: error });
  });
  return { bytes: bytes(), contentType: contentType?.split(';')[0]?.trim(), filename: undefined, fields: {} };
}

/** multipart/form-data: one `file` part and text fields (name, url, release, dist, debug_id), in any order. */
function readMultipart(req: Request, contentType: string, limit: number): Promise<Omit<ArtifactUpload, 'fields'> & { fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { files: 1, fields: 16, parts: 17, fieldSize: 4096, fileSize: limit } });
    } catch (error) {
      return reject(new AppError('invalid_request', 'malformed multipart/form-data content type', { cause: error }));
    }
    const source = decoded(req);
    const fields: Record<string, string> = {};
    let file: { bytes: Buffer; contentType: string | undefined; filename: string | undefined } | undefined;
    let failed = false;
    const fail = (error: AppError) => {
      if (failed) return;
      failed = true;
      source.unpipe(parser);
      // The rest of the body is read and dropped, so the client sees the answer instead of a reset.
      source.resume();
      reject(error);
    };
    parser.on('field', (name, value) => (fields[name] = value));
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume();
        return fail(new AppError('validation_failed', 'the file goes in a form field named "file"', { details: [{ path: `body.${name}`, message: 'unexpected file field' }] }));
      }
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('limit', () => fail(tooLarge()));
      stream.on('end', () => {
        file = { bytes: Buffer.concat(chunks), contentType: info.mimeType, filename: info.filename };
      });
    });
    for (const event of ['filesLimit', 'fieldsLimit', 'partsLimit'] as const) {
      parser.on(event, () => fail(new AppError('invalid_request', 'an upload holds one file and a few fields')));
    }
    parser.on('error', (error) => fail(new AppError('invalid_request', 'malformed multipart/form-data body', { cause: error })));
    source.on('error', (error) => fail(new AppError('invalid_request', 'the upload could not be read', { cause: error })));
    parser.on('close', () => {
      if (failed) return;
      if (!file) return fail(new AppError('validation_failed', 'a multipart upload needs a "file" part', { details: [{ path: 'body.file', message: 'required' }] }));
      resolve({ ...file, fields });
    });
    source.pipe(parser);
  });
}

/** The upload's bytes and fields: form fields of a multipart body over the query's, validated together. */
async function readUpload(req: Request, contentType: string | undefined, query: ArtifactFields): Promise<ArtifactUpload> {
  const multipart = /^multipart\/form-data\b/i.test(contentType ?? '');
  if (/^multipart\//i.test(contentType ?? '') && !multipart) throw new AppError('unsupported_media_type', 'multipart uploads must be multipart/form-data');
  const read = multipart ? await readMultipart(req, contentType!, ARTIFACT_MAX_BYTES) : await readRaw(req, contentType, ARTIFACT_MAX_BYTES);
  refuseNulText({ ...read.fields, filename: read.filename }, 'body');
  const fields = artifactFields.safeParse({ ...query, ...read.fields });
  if (!fields.success) {
    const details = fields.error.issues.map((issue) => ({ path: ['body', ...issue.path.map(String)].join('.'), message: issue.message }));
    throw new AppError('validation_failed', 'upload fields failed validation', { details });
  }
  if (read.bytes.length === 0) throw new AppError('validation_failed', 'the uploaded file is empty', { details: [{ path: 'body.file', message: 'empty' }] });
  return { ...read, fields: fields.data };
}

const projectParams = z.object({ projectID: z.string() });

export const artifactRoutes = (blobs: BlobStore) => [
  defineRoute({
    method: 'post',
    path: '/v1/projects/{projectID}/artifacts',
    tag: 'Artifacts',
    summary:
      'Upload a source map, minified file or other artifact (up to 50 MiB): multipart/form-data with a `file` part and fields `name` (or `url`), `release`, `dist`, `debug_id`; or the raw bytes as the body with those fields as query parameters.',
    access: 'member',
    params: projectParams,
    query: artifactFields,
    status: 201,
    response: artifactJson,
    handler: ({ principal, params, query, req }) =>
      uploadArtifact(principal, params.projectID, () => readUpload(req, req.headers['content-type'], query), blobs, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}/artifacts',
    tag: 'Artifacts',
    summary: "The project's artifacts, newest first, filtered by release, dist, name or debug_id.",
    access: 'member',
    params: projectParams,
    query: listArtifactsQuery,
    response: listOf(artifactJson),
    handler: ({ principal, params, query }) => listArtifacts(principal.orgId, params.projectID, query),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/projects/{projectID}/artifacts/{artifactID}',
    tag: 'Artifacts',
    summary: 'Delete an artifact and its bytes; events processed later no longer resolve through it.',
    access: 'admin',
    params: projectParams.extend({ artifactID: z.string() }),
    status: 204,
    handler: ({ principal, params, req }) => deleteArtifact(principal, params.projectID, params.artifactID, blobs, req.ip),
  }),
];
