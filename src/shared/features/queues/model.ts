import { Schema, model } from 'mongoose';
import { rollupSchema } from '../../telemetry/rollups.js';

/**
 * Messages per queue per minute, per service on either side: what producers published (producer
 * spans) and what consumers processed (consumer spans), with processing time and, where the
 * message's publication is known, the wait between publication and the start of processing.
 */
const queueRollupSchema = rollupSchema({
  /** `messaging.destination.name`. */
  queue: { type: String, required: true },
  system: { type: String, default: null },
  service: { type: String, required: true },
  published: { type: Number, default: 0 },
  processed: { type: Number, default: 0 },
  failed: { type: Number, default: 0 },
  processing: { type: Schema.Types.Mixed, default: {} },
  waited: { type: Number, default: 0 },
  wait: { type: Schema.Types.Mixed, default: {} },
});

/**
 * The two ends of one message, met by the producer span's id: whichever of the producer span and a
 * consumer span arrives second finds the other here, and the wait between them is counted once.
 * `_id` derived from the project, trace and producer span.
 */
const messageTimingSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** When the message was published, once its producer span has arrived. */
  publishedAt: { type: Date, default: null },
  /** Consumer spans that processed it: their start and the queue rollup key they count in. */
  consumers: { type: [Schema.Types.Mixed], default: [] },
  /** The first of the two ends to arrive, for retention. */
  at: { type: Date, required: true },
});
// retention cleanup by organisation and age.
messageTimingSchema.index({ orgId: 1, at: 1 });

export const QueueRollup = model('QueueRollup', queueRollupSchema, 'queue_rollups');
export const MessageTiming = model('MessageTiming', messageTimingSchema, 'message_timings');
