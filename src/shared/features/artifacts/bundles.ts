import { createHash } from 'node:crypto';
import { unzipSync } from 'fflate';
import { Types } from 'mongoose';
import { z } from 'zod';
import type { BlobStore } from '../../clients/blob.js';
import { AppError, isDuplicateKey } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { auditAs } from '../audit/service.js';
import type { ProjectDoc } from '../projects/model.js';
import { projectsBySlugs } from '../projects/service.js';
import { inParallel } from '../../telemetry/storage.js';
import { Artifact, ArtifactBundle, BundleChunk, type ArtifactBundleDoc, type ArtifactKind } from './model.js';
import { ARTIFACT_MAX_BYTES, normalizeDebugId } from './schemas.js';
import { artifactBlobKey, classify } from './service.js';

/**
 * Artifact bundles as sentry-cli and the Sentry bundler plugins upload them: the bundle (a zip with a
 * `manifest.json`) is cut into sha1-named chunks, the chunks are uploaded, and an assemble request joins them
 * and stores each file of the bundle as an artifact of each named project, where symbolication finds it by
 * debug id or by release and `~/` name like any other upload.
 */

/** A chunk as sentry-cli cuts the bundle (uncompressed bytes): Sentry's own size. */
export const CHUNK_SIZE = 8 * 1024 * 1024;
/** A whole bundle (the zip): the cap of a single artifact upload. */
export const BUNDLE_MAX_BYTES = ARTIFACT_MAX_BYTES;
/** One chunk-upload request, as sent (gzip parts and multipart framing). */
export const CHUNK_REQUEST_MAX_BYTES = 32 * 1024 * 1024;
export const CHUNKS_PER_REQUEST = 64;
/** Chunk requests a tool sends at once: each holds up to one chunk in memory here. */
export const CHUNK_UPLOAD_CONCURRENCY = 2;
/** Chunks never assembled are removed after this long (by the hourly cleanup). */
export const CHUNK_TTL_MS = 60 * 60 * 1000;
/** A bundle's files unzipped, all together: bounds the work of one assemble (a map compresses about 4:1). */
export const BUNDLE_UNZIPPED_MAX_BYTES = 4 * BUNDLE_MAX_BYTES;
export const BUNDLE_MAX_FILES = 20_000;
/** An `assembling` claim older than this was left by a process that stopped: the next request takes it over. */
const STALE_CLAIM_MS = 10 * 60 * 1000;
/** Files unzipped at once: the zip is read in batches of about this many bytes, not all into memory. */
const UNZIP_BATCH_BYTES = 16 * 1024 * 1024;
const SWEEP_BATCH = 100;
const PUT_CONCURRENCY = 8;

const SHA1 = /^[0-9a-f]{40}$/;
const sha1Of = (bytes: Uint8Array) => createHash('sha1').update(bytes).digest('hex');

/**
 * What `GET /api/0/organizations/:org/chunk-upload` answers: where and how to upload chunks. `accept` names
 * artifact bundles (`artifact_bundles_v2`: ask which chunks are missing first). sentry-cli 2.x also needs
 * `release_files` to upload `--release` source maps in chunks at all (else it falls back to the per-file
 * release-files API); with artifact bundles accepted it then sends them as an artifact bundle too, so Sluice
 * never sees the release-files assemble request.
 */
export function chunkUploadOptions(url: string) {
  return {
    url,
    chunkSize: CHUNK_SIZE,
    chunksPerRequest: CHUNKS_PER_REQUEST,
    maxFileSize: BUNDLE_MAX_BYTES,
    maxRequestSize: CHUNK_REQUEST_MAX_BYTES,
    concurrency: CHUNK_UPLOAD_CONCURRENCY,
    hashAlgorithm: 'sha1',
    compression: ['gzip'],
    accept: ['release_files', 'artifact_bundles', 'artifact_bundles_v2'],
  };
}

export const bundleChunkBlobKey = (orgId: Types.ObjectId, sha1: string) => `bundle-chunks/${orgId.toHexString()}/${sha1}`;

/**
 * Stores one uploaded chunk after checking it is what its name says: blob first, then the document that says
 * the chunk is there. A chunk whose bytes do not hash to its name is refused and not stored.
 */
export async function storeChunk(orgId: Types.ObjectId, name: string, bytes: Buffer, blobs: BlobStore, now = new Date()): Promise<void> {
  const claimed = name.trim().toLowerCase();
  if (!SHA1.test(claimed)) throw new AppError('validation_failed', 'a chunk is named by the sha1 of its bytes (40 hex digits)', { details: [{ path: 'body.file', message: `bad chunk name ${JSON.stringify(name.slice(0, 64))}` }] });
  if (bytes.length > CHUNK_SIZE) throw new AppError('payload_too_large', `a chunk may be at most ${CHUNK_SIZE} bytes`);
  const actual = sha1Of(bytes);
  if (actual !== claimed) throw new AppError('validation_failed', `chunk ${claimed} failed its checksum: its bytes hash to ${actual}`, { details: [{ path: 'body.file', message: 'checksum mismatch' }] });
  await blobs.put(bundleChunkBlobKey(orgId, claimed), bytes);
  await BundleChunk.updateOne({ orgId, sha1: claimed }, { $set: { size: bytes.length, uploadedAt: now } }, { upsert: true }).catch((error: unknown) => {
    // two requests uploading the same chunk at once: the other one's document says it is there
    if (!isDuplicateKey(error)) throw error;
  });
}

/** Removes chunks (documents first, so none names a missing blob; then their blobs). */
async function removeChunks(docs: Array<{ _id: Types.ObjectId; orgId: Types.ObjectId; sha1: string }>, blobs: BlobStore, uploadedBefore?: Date) {
  if (docs.length === 0) return;
  await BundleChunk.deleteMany({ _id: { $in: docs.map((doc) => doc._id) }, ...(uploadedBefore && { uploadedAt: { $lt: uploadedBefore } }) });
  for (const doc of docs) await blobs.delete(bundleChunkBlobKey(doc.orgId, doc.sha1));
}

/** Removes a batch of chunks (of any organisation) uploaded more than CHUNK_TTL_MS ago and never assembled: the hourly cleanup's. */
export async function sweepExpiredChunks(blobs: BlobStore, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - CHUNK_TTL_MS);
  const expired = await BundleChunk.find({ uploadedAt: { $lt: cutoff } }, { orgId: 1, sha1: 1 }).sort({ uploadedAt: 1 }).limit(SWEEP_BATCH).lean();
  // a chunk uploaded again meanwhile has a new uploadedAt and keeps its document; its blob was just rewritten and
  // may go, which assemble notices (a document without blob counts as missing, so the tool uploads it again)
  await removeChunks(expired, blobs, cutoff);
  return expired.length;
}

export const assembleBody = z.object({
  checksum: z.string().trim().toLowerCase().regex(SHA1, 'the sha1 of the bundle (40 hex digits)'),
  chunks: z.array(z.string().trim().toLowerCase().regex(SHA1, 'the sha1 of a chunk (40 hex digits)')).max(Math.ceil(BUNDLE_MAX_BYTES / CHUNK_SIZE) + 1, `a bundle may be at most ${BUNDLE_MAX_BYTES} bytes`),
  projects: z.array(z.string().trim().min(1).max(100)).max(50).optional(),
  version: z.string().trim().max(256).nullish(),
  dist: z.string().trim().max(64).nullish(),
});
export type AssembleRequest = z.infer<typeof assembleBody>;

export type BundleState = 'created' | 'assembling' | 'ok' | 'error' | 'not_found';
export interface AssembleAnswer {
  state: BundleState;
  missingChunks: string[];
  detail: string | null;
}

/** A bundle that cannot become artifacts (its content, not our infrastructure): answered as state `error`. */
class BundleError extends Error {}

const manifestSchema = z.object({
  files: z.record(
    z.string(),
    z.object({
      url: z.string().min(1).max(2048),
      type: z.string().optional(),
      headers: z.record(z.string(), z.string()).optional(),
    }),
  ),
  release: z.string().max(256).optional(),
  dist: z.string().max(64).optional(),
});

interface BundleFile {
  path: string;
  url: string;
  type: string | undefined;
  headers: Map<string, string>;
}

/** The zip's manifest and the declared size of each entry; sentry-cli's zip starts with a `SYSB` header, which unzipping skips. */
function readManifest(zip: Uint8Array): { files: BundleFile[]; release: string | undefined; dist: string | undefined; sizes: Map<string, number> } {
  const sizes = new Map<string, number>();
  let manifestBytes: Uint8Array | undefined;
  try {
    manifestBytes = unzipSync(zip, {
      filter: (entry) => {
        sizes.set(entry.name, entry.originalSize);
        return entry.name === 'manifest.json';
      },
    })['manifest.json'];
  } catch (error) {
    throw new BundleError(`the bundle is not a zip archive (${(error as Error).message})`);
  }
  if (!manifestBytes) throw new BundleError('the bundle has no manifest.json');
  let parsed: z.infer<typeof manifestSchema>;
  try {
    parsed = manifestSchema.parse(JSON.parse(Buffer.from(manifestBytes).toString('utf8')));
  } catch (error) {
    const why = error instanceof z.ZodError ? error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ') : (error as Error).message;
    throw new BundleError(`the bundle's manifest.json is not a valid manifest (${why})`);
  }
  const files = Object.entries(parsed.files).map(([path, info]) => ({
    path,
    url: info.url.trim(),
    type: info.type,
    // header names are case-insensitive: sentry-cli writes `Sourcemap`, the archive has `sourcemap`
    headers: new Map(Object.entries(info.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value])),
  }));
  if (files.length > BUNDLE_MAX_FILES) throw new BundleError(`a bundle may hold at most ${BUNDLE_MAX_FILES} files, this one lists ${files.length}`);
  let total = 0;
  for (const file of files) {
    const size = sizes.get(file.path);
    if (size === undefined) throw new BundleError(`manifest.json lists ${file.path}, which is not in the bundle`);
    if (size > ARTIFACT_MAX_BYTES) throw new BundleError(`${file.url} is ${size} bytes; a file may be at most ${ARTIFACT_MAX_BYTES} bytes`);
    total += size;
  }
  if (total > BUNDLE_UNZIPPED_MAX_BYTES) throw new BundleError(`the bundle's files add up to ${total} bytes unzipped; at most ${BUNDLE_UNZIPPED_MAX_BYTES} are accepted`);
  return { files, release: parsed.release, dist: parsed.dist, sizes };
}

/** The files' bytes, a batch at a time, so at most one batch of the unzipped bundle is in memory. */
async function forEachFile(zip: Uint8Array, files: BundleFile[], sizes: Map<string, number>, use: (file: BundleFile, bytes: Buffer) => Promise<void>) {
  let start = 0;
  while (start < files.length) {
    let end = start;
    let bytes = 0;
    while (end < files.length && (end === start || bytes + sizes.get(files[end]!.path)! <= UNZIP_BATCH_BYTES)) bytes += sizes.get(files[end++]!.path)!;
    const wanted = new Set(files.slice(start, end).map((file) => file.path));
    const unzipped = unzipSync(zip, { filter: (entry) => wanted.has(entry.name) });
    for (const file of files.slice(start, end)) await use(file, Buffer.from(unzipped[file.path]!));
    start = end;
  }
}

interface ArtifactDraft {
  _id: Types.ObjectId;
  projectId: Types.ObjectId;
  blobKey: string;
  bytes: Buffer;
  fields: Record<string, unknown>;
}

/** What one bundle file becomes: the upload route's classification, with the manifest's type and headers on top. */
function describe(file: BundleFile, bytes: Buffer, release: string | null, dist: string | null) {
  let classified: ReturnType<typeof classify>;
  try {
    classified = classify(bytes, file.url, undefined);
  } catch (error) {
    throw new BundleError(`${file.url}: ${(error as Error).message}`);
  }
  if (file.type === 'source_map' && classified.kind !== 'source_map') throw new BundleError(`${file.url} is listed as a source map but is not a version 3 source map`);
  const kind: ArtifactKind = classified.kind === 'source_map' ? 'source_map' : file.type === 'minified_source' || file.type === 'source' ? 'minified_source' : classified.kind;
  const headerDebugId = file.headers.get('debug-id');
  const debugId = (headerDebugId && normalizeDebugId(headerDebugId)) || classified.debugId;
  const reference = file.headers.get('sourcemap') ?? file.headers.get('x-sourcemap');
  const sourceMappingUrl = kind === 'minified_source' ? (reference?.slice(0, 2048) ?? classified.sourceMappingUrl ?? null) : null;
  return {
    name: file.url,
    release,
    dist,
    debugId: debugId ?? null,
    kind,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    contentType: null,
    sourceMappingUrl,
  };
}

const answer = (state: BundleState, missingChunks: string[] = [], detail: string | null = null): AssembleAnswer => ({ state, missingChunks, detail });

/** The projects a request names, all of the caller's organisation: an unknown slug is a 404 before anything is read or written. */
async function projectsNamed(orgId: Types.ObjectId, slugs: readonly string[]): Promise<ProjectDoc[]> {
  if (slugs.length === 0) throw new AppError('validation_failed', 'an artifact bundle is assembled into at least one project', { details: [{ path: 'body.projects', message: 'required' }] });
  const { found, missing } = await projectsBySlugs(orgId, slugs);
  if (missing.length) throw new AppError('not_found', `project ${missing.map((slug) => JSON.stringify(slug)).join(', ')} not found`);
  return found;
}

/**
 * Which projects still need this bundle: an `ok` bundle whose artifacts were deleted since, and an
 * `assembling` claim left by a stopped process, are dropped so the bundle is assembled again.
 */
async function bundlesToAssemble(projects: ProjectDoc[], checksum: string, release: string | null, dist: string | null, now: Date) {
  const existing = await ArtifactBundle.find({ projectId: { $in: projects.map((project) => project._id) }, checksum, release, dist }).lean<ArtifactBundleDoc[]>();
  const pending: ProjectDoc[] = [];
  let busy = false;
  for (const project of projects) {
    const bundle = existing.find((doc) => doc.projectId.equals(project._id));
    if (bundle?.state === 'ok') {
      const kept = await Artifact.countDocuments({ projectId: project._id, _id: { $in: bundle.artifactIds } });
      if (kept === bundle.artifactIds.length) continue;
      await ArtifactBundle.deleteOne({ _id: bundle._id, state: 'ok' });
    } else if (bundle?.state === 'assembling') {
      if (bundle.updatedAt.getTime() > now.getTime() - STALE_CLAIM_MS) {
        busy = true;
        continue;
      }
      await ArtifactBundle.deleteOne({ _id: bundle._id, updatedAt: bundle.updatedAt });
    }
    pending.push(project);
  }
  return { pending, busy };
}

/**
 * `POST /api/0/organizations/:org/artifactbundle/assemble`: answers which chunks are still missing, or joins
 * them, checks the bundle's checksum, and stores its files as artifacts of each project (inline, so `ok` means
 * the maps are usable). Blobs are written first, then all documents; a failure removes what was written, so no
 * half of a bundle is ever visible. A bundle assembled before for a project is `ok` at once, without storing
 * its files twice. Its chunks are removed once assembled.
 */
export async function assembleBundle(principal: MemberPrincipal, request: AssembleRequest, blobs: BlobStore, ip: string | undefined, now = new Date()): Promise<AssembleAnswer> {
  const projects = await projectsNamed(principal.orgId, request.projects ?? []);
  const requestedRelease = request.version || null;
  const requestedDist = request.dist || null;
  const { pending, busy } = await bundlesToAssemble(projects, request.checksum, requestedRelease, requestedDist, now);
  if (pending.length === 0) return answer(busy ? 'assembling' : 'ok');

  const chunkNames = request.chunks;
  if (chunkNames.length === 0) return answer('error', [], 'the assemble request lists no chunks');
  const fresh = new Date(now.getTime() - CHUNK_TTL_MS);
  const present = await BundleChunk.find({ orgId: principal.orgId, sha1: { $in: [...new Set(chunkNames)] }, uploadedAt: { $gte: fresh } }).lean();
  const missing = [...new Set(chunkNames.filter((sha1) => !present.some((chunk) => chunk.sha1 === sha1)))];
  if (missing.length) return answer('not_found', missing);
  const declared = chunkNames.reduce((total, sha1) => total + present.find((chunk) => chunk.sha1 === sha1)!.size, 0);
  if (declared > BUNDLE_MAX_BYTES) return answer('error', [], `the bundle is ${declared} bytes; at most ${BUNDLE_MAX_BYTES} are accepted`);

  // claim the bundle for each project; a request assembling it already answers `assembling` to the other
  const claims: Types.ObjectId[] = [];
  const releaseClaims = () => ArtifactBundle.deleteMany({ _id: { $in: claims }, state: 'assembling' });
  for (const project of pending) {
    const _id = new Types.ObjectId();
    try {
      await ArtifactBundle.create({ _id, orgId: principal.orgId, projectId: project._id, checksum: request.checksum, release: requestedRelease, dist: requestedDist, state: 'assembling', createdAt: now, updatedAt: now });
      claims.push(_id);
    } catch (error) {
      await releaseClaims();
      if (isDuplicateKey(error)) return answer('assembling');
      throw error;
    }
  }

  const written: { blobKeys: string[]; artifactIds: Types.ObjectId[] } = { blobKeys: [], artifactIds: [] };
  try {
    const parts: Buffer[] = [];
    for (const sha1 of chunkNames) {
      const bytes = await blobs.get(bundleChunkBlobKey(principal.orgId, sha1));
      if (!bytes) {
        // its document outlived its blob (swept while uploaded again): missing, so the tool uploads it again
        await BundleChunk.deleteOne({ orgId: principal.orgId, sha1 });
        await releaseClaims();
        return answer('not_found', [sha1]);
      }
      parts.push(bytes);
    }
    const zip = Buffer.concat(parts);
    const actual = sha1Of(zip);
    if (actual !== request.checksum) throw new BundleError(`the bundle's checksum does not match: its chunks join into a file whose sha1 is ${actual}, not ${request.checksum}`);

    const manifest = readManifest(zip);
    const release = requestedRelease ?? manifest.release ?? null;
    const dist = requestedDist ?? manifest.dist ?? null;
    const drafts: ArtifactDraft[] = [];
    await forEachFile(zip, manifest.files, manifest.sizes, async (file, bytes) => {
      const fields = describe(file, bytes, release, dist);
      const copies = pending.map((project) => {
        const _id = new Types.ObjectId();
        return { _id, projectId: project._id, blobKey: artifactBlobKey(project._id, _id), bytes, fields };
      });
      await inParallel(copies, PUT_CONCURRENCY, async (copy) => {
        written.blobKeys.push(copy.blobKey);
        await blobs.put(copy.blobKey, copy.bytes);
      });
      // the bytes are in the blob store now: the drafts keep only what the documents need
      drafts.push(...copies.map((copy) => ({ ...copy, bytes: Buffer.alloc(0) })));
    });

    const docs = drafts.map((draft) => ({ _id: draft._id, orgId: principal.orgId, projectId: draft.projectId, blobKey: draft.blobKey, createdAt: now, ...draft.fields }));
    written.artifactIds.push(...docs.map((doc) => doc._id));
    for (let start = 0; start < docs.length; start += 500) await Artifact.insertMany(docs.slice(start, start + 500), { ordered: true });
    for (const [index, project] of pending.entries()) {
      const artifactIds = drafts.filter((draft) => draft.projectId.equals(project._id)).map((draft) => draft._id);
      const done = await ArtifactBundle.updateOne({ _id: claims[index], state: 'assembling' }, { $set: { state: 'ok', artifactIds, updatedAt: new Date() } });
      if (done.matchedCount !== 1) throw new Error(`the claim on bundle ${request.checksum} for project ${project.slug} was lost while assembling`);
    }
  } catch (error) {
    // nothing of a failed bundle stays: documents first (so none names a missing blob), then blobs, then the claims
    await Artifact.deleteMany({ _id: { $in: written.artifactIds } });
    await inParallel(written.blobKeys, PUT_CONCURRENCY, (key) => blobs.delete(key));
    await ArtifactBundle.deleteMany({ _id: { $in: claims } });
    if (error instanceof BundleError) return answer('error', [], error.message);
    throw error;
  }

  const files = written.artifactIds.length / pending.length;
  for (const project of pending) {
    await auditAs(principal, ip)('artifact.bundle', { type: 'project', id: project._id }, { checksum: request.checksum, files, release: requestedRelease, dist: requestedDist });
  }
  // assembled: its chunks are not needed any more (a later run that needs them is told they are missing)
  await removeChunks(present, blobs);
  return answer('ok');
}
