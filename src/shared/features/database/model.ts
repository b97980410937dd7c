import { Schema, model } from 'mongoose';
import { rollupSchema } from '../../telemetry/rollups.js';

/**
 * Database calls per minute, per calling service, database system and normalised statement
 * (statements.ts): what the slow-query and query-pattern views read.
 */
const queryRollupSchema = rollupSchema({
  service: { type: String, required: true },
  system: { type: String, required: true },
  pattern: { type: String, required: true },
  count: { type: Number, default: 0 },
  failed: { type: Number, default: 0 },
  totalMs: { type: Number, default: 0 },
  maxMs: { type: Number, default: 0 },
  latency: { type: Schema.Types.Mixed, default: {} },
  /** The trace of the minute's slowest call among the first batch that counted into it. */
  exampleTraceId: { type: String, default: null },
});

export const QueryRollup = model('QueryRollup', queryRollupSchema, 'query_rollups');
