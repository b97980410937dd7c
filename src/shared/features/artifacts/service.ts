import { createHash } from 'node:crypto';
import { Types } from 'mongoose';
import type { z } from 'zod';
import type { BlobStore } from '../../clients/blob.js';
import { AppError, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { auditAs } from '../audit/service.js';
import { findProject } from '../projects/service.js';
import { Artifact, type ArtifactDoc, type ArtifactKind } from './model.js';
import { normalizeDebugId, type ArtifactFields, type artifactJson, type listArtifactsQuery } from './schemas.js';

export interface ArtifactUpload {
  bytes: Buffer;
  contentType: string | undefined;
  /** The multipart part's file name, used as the name when neither `name` nor `url` is given. */
  filename: string | undefined;
  fields: ArtifactFields;
}

export const artifactJsonOf = (doc: ArtifactDoc): z.infer<typeof artifactJson> => ({
  id: doc._id.toHexString(),
  project_id: doc.projectId.toHexString(),
  name: doc.name ?? null,
  release: doc.release ?? null,
  dist: doc.dist ?? null,
  debug_id: doc.debugId ?? null,
  kind: doc.kind as ArtifactKind,
  size: doc.size,
  sha256: doc.sha256,
  content_type: doc.contentType ?? null,
  created_at: doc.createdAt.toISOString(),
});

const withoutQuery = (name: string) => name.replace(/[?#].*$/s, '');
const JS_FILE = /\.(?:m?js|cjs)$/i;

/** A version 3 source map (plain or indexed), parsed; undefined when the bytes are not one. */
export function parseSourceMap(bytes: Buffer | string): Record<string, unknown> | undefined {
  const text = typeof bytes === 'string' ? bytes : bytes.toString('utf8');
  // Some servers prefix maps with )]}' against JSON hijacking; the spec allows it.
  const json = text.replace(/^\uFEFF?\)\]\}'[^\n]*\n/, '').trimStart();
  if (!json.startsWith('{')) return undefined;
  try {
    const map = JSON.parse(json) as Record<string, unknown>;
    const valid = map.version === 3 && (typeof map.mappings === 'string' || Array.isArray(map.sections));
    return valid ? map : undefined;
  } catch {
    return undefined;
  }
}

/** The last `//# sourceMappingURL=` of a minified file (the spec's rule: the last one wins). */
export function sourceMappingUrlOf(source: string): string | undefined {
  const matches = [...source.slice(-1_000_000).matchAll(/\/\/[#@]\s*sourceMappingURL=(\S+)\s*(?:\*\/)?\s*$/gm)];
  return matches.at(-1)?.[1];
}

/** What a file is (and the debug id a map embeds, the map a minified file references): the same rules for an upload and a bundle's files. */
export function classify(bytes: Buffer, name: string | undefined, contentType: string | undefined) {
  const map = parseSourceMap(bytes);
  if (map) {
    const embedded = typeof map.debugId === 'string' ? map.debugId : typeof map.debug_id === 'string' ? map.debug_id : undefined;
    return { kind: 'source_map' as const, debugId: embedded ? normalizeDebugId(embedded) : undefined, sourceMappingUrl: undefined };
  }
  if (name && withoutQuery(name).toLowerCase().endsWith('.map')) {
    throw new AppError('validation_failed', 'a .map file must be a version 3 source map', { details: [{ path: 'body.file', message: 'not a version 3 source map' }] });
  }
  if ((name && JS_FILE.test(withoutQuery(name))) || /javascript|ecmascript/i.test(contentType ?? '')) {
    const reference = sourceMappingUrlOf(bytes.toString('utf8'));
    return { kind: 'minified_source' as const, debugId: undefined, sourceMappingUrl: reference?.startsWith('data:') ? 'inline' : reference?.slice(0, 2048) };
  }
  return { kind: 'file' as const, debugId: undefined, sourceMappingUrl: undefined };
}

export const artifactBlobKey = (projectId: Types.ObjectId, artifactId: Types.ObjectId) => `artifacts/${projectId.toHexString()}/${artifactId.toHexString()}`;

/**
 * Stores an uploaded file (`read` reads the request body): bytes into the blob store first, then the document that describes them,
 * so a document never names a missing blob (a failed insert removes the blob again).
 */
export async function uploadArtifact(principal: MemberPrincipal, projectId: string, read: () => Promise<ArtifactUpload>, blobs: BlobStore, ip: string | undefined, now = new Date()) {
  // The project first, so another organisation's project answers 404 before any byte is read.
  const project = await findProject(principal.orgId, projectId);
  const upload = await read();
  const { fields } = upload;
  const name = fields.url ?? fields.name ?? upload.filename;
  const classified = classify(upload.bytes, name, upload.contentType);
  const debugId = fields.debug_id ?? classified.debugId;
  if (!name && !debugId) {
    throw new AppError('validation_failed', 'an artifact needs a name (or url) or a debug id to be found by', { details: [{ path: 'body.name', message: 'required without debug_id' }] });
  }
  const _id = new Types.ObjectId();
  const blobKey = artifactBlobKey(project._id, _id);
  await blobs.put(blobKey, upload.bytes);
  let doc: ArtifactDoc;
  try {
    doc = (
      await Artifact.create({
        _id,
        orgId: project.orgId,
        projectId: project._id,
        name: name ?? null,
        release: fields.release ?? null,
        dist: fields.dist ?? null,
        debugId: debugId ?? null,
        kind: classified.kind,
        size: upload.bytes.length,
        sha256: createHash('sha256').update(upload.bytes).digest('hex'),
        contentType: upload.contentType?.slice(0, 256) ?? null,
        blobKey,
        sourceMappingUrl: classified.sourceMappingUrl ?? null,
        createdAt: now,
      })
    ).toObject() as ArtifactDoc;
  } catch (error) {
    await blobs.delete(blobKey);
    throw error;
  }
  await auditAs(principal, ip)('artifact.upload', { type: 'artifact', id: _id }, { project_id: project._id.toHexString(), name: doc.name, release: doc.release, kind: doc.kind });
  return artifactJsonOf(doc);
}

export async function listArtifacts(orgId: Types.ObjectId, projectId: string, query: z.infer<typeof listArtifactsQuery>) {
  const project = await findProject(orgId, projectId);
  const filter = {
    projectId: project._id,
    ...(query.release !== undefined && { release: query.release }),
    ...(query.dist !== undefined && { dist: query.dist }),
    ...(query.name !== undefined && { name: query.name }),
    ...(query.debug_id !== undefined && { debugId: query.debug_id }),
  };
  const page = await paginate(Artifact, filter, { sortField: 'createdAt', direction: -1, limit: query.limit, cursor: query.cursor });
  return { data: page.items.map((doc) => artifactJsonOf(doc as ArtifactDoc)), next_cursor: page.nextCursor };
}

/** The document goes first: once it is gone nothing resolves through the blob, and a missing blob is harmless to delete. */
export async function deleteArtifact(principal: MemberPrincipal, projectId: string, artifactId: string, blobs: BlobStore, ip: string | undefined): Promise<void> {
  const project = await findProject(principal.orgId, projectId);
  const doc = await Artifact.findOneAndDelete({ _id: parseId(artifactId, 'artifact'), projectId: project._id }).lean<ArtifactDoc>();
  if (!doc) throw notFound('artifact');
  await blobs.delete(doc.blobKey);
  await auditAs(principal, ip)('artifact.delete', { type: 'artifact', id: doc._id }, { project_id: project._id.toHexString(), name: doc.name, release: doc.release });
}

// ---------------------------------------------------------------------------------------------
// Lookups for symbolication
// ---------------------------------------------------------------------------------------------

/** The newest source map carrying a debug id. */
export const sourceMapByDebugId = (projectId: Types.ObjectId, debugId: string) =>
  Artifact.findOne({ projectId, debugId, kind: 'source_map' }).sort({ createdAt: -1, _id: -1 }).lean<ArtifactDoc>();

/**
 * The artifact of a release and dist whose name is one of `names`: the earliest name in the list wins
 * (the most specific form), then the newest upload.
 */
export async function artifactByNames(projectId: Types.ObjectId, release: string, dist: string | null, names: string[], kind: ArtifactKind): Promise<ArtifactDoc | undefined> {
  if (names.length === 0) return undefined;
  const found = await Artifact.find({ projectId, release, dist, kind, name: { $in: names } }).sort({ createdAt: -1, _id: -1 }).limit(50).lean<ArtifactDoc[]>();
  for (const name of names) {
    const match = found.find((doc) => doc.name === name);
    if (match) return match;
  }
  return undefined;
}

/** Whether a project has any artifact at all: events of projects without any skip the per-file lookups. */
export const projectHasArtifacts = async (projectId: Types.ObjectId) => (await Artifact.exists({ projectId })) !== null;
