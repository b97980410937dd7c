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
