import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const artifactKinds = ['source_map', 'minified_source', 'file'] as const;
export type ArtifactKind = (typeof artifactKinds)[number];

/**
 * A file uploaded for symbolication (a source map, a minified bundle, any other file). The bytes live
 * in the blob store under `blobKey`; this document only describes them.
 */
const artifactSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** The file's URL as the browser sees it: `https://cdn.example.com/app.min.js.map`, `~/static/app.min.js.map` or a basename. */
  name: { type: String, default: null },
  release: { type: String, default: null },
  dist: { type: String, default: null },
  /** Lower-case UUID form, as Sentry's `debug_meta.images[].debug_id` carries it. */
  debugId: { type: String, default: null },
  kind: { type: String, enum: artifactKinds, required: true },
  size: { type: Number, required: true },
  sha256: { type: String, required: true },
  contentType: { type: String, default: null },
  blobKey: { type: String, required: true },
  /** Minified sources only: the `//# sourceMappingURL` reference (`inline` for a data: URL, read from the blob when needed). */
  sourceMappingUrl: { type: String, default: null },
  createdAt: { type: Date, required: true },
});
// a project's artifact list, newest first, keyset-paged (release and debug_id filters narrow it).
artifactSchema.index({ projectId: 1, createdAt: -1, _id: -1 });
// symbolication by release: a file's map or minified source by its name within a release and dist, newest first.
artifactSchema.index({ projectId: 1, release: 1, dist: 1, name: 1, createdAt: -1 });
// symbolication by debug id (and the list's debug_id filter).
artifactSchema.index({ projectId: 1, debugId: 1 });

export const Artifact = model('Artifact', artifactSchema);
export type ArtifactDoc = InferSchemaType<typeof artifactSchema> & { _id: Types.ObjectId };

/**
 * A chunk of an artifact bundle sentry-cli uploaded (`POST /api/0/organizations/:org/chunk-upload`), named by
 * the sha1 of its bytes, waiting for the assemble request that lists it. The bytes live in the blob store at
 * `bundleChunkBlobKey`; this document says they are complete (written after the blob). Chunks are removed once
 * their bundle is assembled, and chunks never assembled are swept after `CHUNK_TTL_MS`.
 */
const bundleChunkSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  sha1: { type: String, required: true },
  size: { type: Number, required: true },
  /** Refreshed when the same chunk is uploaded again, so a re-sent chunk gets a full TTL. */
  uploadedAt: { type: Date, required: true },
});
// assemble: which of a bundle's chunks an organisation has (and one document per chunk).
bundleChunkSchema.index({ orgId: 1, sha1: 1 }, { unique: true });
// the sweep of chunks never assembled, oldest first.
bundleChunkSchema.index({ uploadedAt: 1 });

export const BundleChunk = model('BundleChunk', bundleChunkSchema);
export type BundleChunkDoc = InferSchemaType<typeof bundleChunkSchema> & { _id: Types.ObjectId };

export const bundleStates = ['assembling', 'ok'] as const;

/**
 * An artifact bundle assembled into one project's artifacts: sentry-cli asks to assemble the same bundle
 * again on every run (and polls), and finds it `ok` here instead of getting its files stored twice. While
 * `assembling` it is also the lock that keeps two requests from assembling one bundle at once.
 */
const artifactBundleSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** The sha1 of the whole bundle (the zip as uploaded). */
  checksum: { type: String, required: true },
  release: { type: String, default: null },
  dist: { type: String, default: null },
  state: { type: String, enum: bundleStates, required: true },
  /** The artifacts the bundle's files became in this project. */
  artifactIds: { type: [Schema.Types.ObjectId], default: [] },
  createdAt: { type: Date, required: true },
  updatedAt: { type: Date, required: true },
});
// assemble: this bundle in this project, for this release and dist (one document each, which is also the lock).
artifactBundleSchema.index({ projectId: 1, checksum: 1, release: 1, dist: 1 }, { unique: true });

export const ArtifactBundle = model('ArtifactBundle', artifactBundleSchema);
export type ArtifactBundleDoc = InferSchemaType<typeof artifactBundleSchema> & { _id: Types.ObjectId };
