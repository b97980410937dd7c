import { Schema, model } from 'mongoose';

export const nodeTypes = ['service', 'database', 'messaging', 'external'] as const;
export type NodeType = (typeof nodeTypes)[number];
export const edgeKinds = ['http', 'rpc', 'db', 'messaging', 'other'] as const;
export type EdgeKind = (typeof edgeKinds)[number];

/**
 * What spans add up to, per minute: for a `service`, the requests it served (its entry spans); for
 * an `edge`, the calls from one node to another. Workers maintain them with one `$inc` upsert per
 * document, addressed by an `_id` derived from the key (see rollupKey), and every view over services
 * reads them rather than raw spans. `hour` is the minute's hour as a number, so a window is read
 * an hour at a time by equality, which FerretDB can answer from an index.
 */
const spanRollupSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  kind: { type: String, enum: ['service', 'edge'], required: true },
  /** The minute's start. */
  at: { type: Date, required: true },
  /** Hours since the epoch. */
  hour: { type: Number, required: true },
  /** The service, or the edge's caller (a service, or a queue for messages consumed from it). */
  service: { type: String, required: true },
  callerType: { type: String, enum: nodeTypes, default: null },
  callee: { type: String, default: null },
  calleeType: { type: String, enum: nodeTypes, default: null },
  edgeKind: { type: String, enum: edgeKinds, default: null },
  /** Requests served (service) or calls made (edge), and how many of them failed. */
  count: { type: Number, default: 0 },
  failed: { type: Number, default: 0 },
  totalMs: { type: Number, default: 0 },
  /** Durations as a log-scale histogram (src/shared/telemetry/histogram.ts). */
  latency: { type: Schema.Types.Mixed, default: {} },
});
// a window's rollups of an organisation, an hour at a time, and of one project.
spanRollupSchema.index({ orgId: 1, hour: 1 });
spanRollupSchema.index({ projectId: 1, hour: 1 });
// retention cleanup by organisation and age.
spanRollupSchema.index({ orgId: 1, at: 1 });

export const SpanRollup = model('SpanRollup', spanRollupSchema, 'span_rollups');
