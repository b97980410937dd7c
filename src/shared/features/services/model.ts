import { Schema, model } from 'mongoose';
import { rollupSchema } from '../../telemetry/rollups.js';

export const nodeTypes = ['service', 'database', 'messaging', 'external'] as const;
export type NodeType = (typeof nodeTypes)[number];
export const edgeKinds = ['http', 'rpc', 'db', 'messaging', 'other'] as const;
export type EdgeKind = (typeof edgeKinds)[number];

/**
 * What spans add up to, per minute (src/shared/telemetry/rollups.ts): for a `service`, the requests
 * it served (its entry spans); for an `edge`, the calls from one node to another. Every view over
 * services reads these rather than raw spans.
 */
const spanRollupSchema = rollupSchema({
  kind: { type: String, enum: ['service', 'edge'], required: true },
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

export const SpanRollup = model('SpanRollup', spanRollupSchema, 'span_rollups');
/** The same counts per hour (`at` the hour's start): what views over whole hours of a long window read (views.ts, inWindowByWholeHour). */
export const SpanRollupHourly = model('SpanRollupHourly', spanRollupSchema.clone(), 'span_rollups_hourly');
