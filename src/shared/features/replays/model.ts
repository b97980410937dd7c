import { Schema, model } from 'mongoose';

/**
 * One session replay, summarised from its replay events; the recording itself lives in the blob
 * store. `_id` is derived from project and replay id, so the summary upsert is addressed by `_id` alone.
 */
const replaySchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  replayId: { type: String, required: true },
  replayType: { type: String, default: null },
  startedAt: { type: Date, required: true },
  lastSeenAt: { type: Date, required: true },
  /** Segments 0..segmentCount-1 exist (or were sent while capture was off). */
  segmentCount: { type: Number, default: 0 },
  urls: { type: [String], default: [] },
  traceIds: { type: [String], default: [] },
  errorIds: { type: [String], default: [] },
  user: { type: { _id: false, id: String, email: String, username: String, ipAddress: String }, default: null },
  release: { type: String, default: null },
  environment: { type: String, default: null },
});
// one summary per project and replay id, and opening one replay.
replaySchema.index({ projectId: 1, replayId: 1 }, { unique: true });
// the replay list, newest first, keyset-paged.
replaySchema.index({ projectId: 1, startedAt: -1, _id: -1 });
// retention cleanup: a replay goes once its last event has expired.
replaySchema.index({ orgId: 1, lastSeenAt: 1 });

/** Where one recording segment's bytes are (as sent: rrweb JSON, possibly compressed); `_id` derived from project, replay and segment. */
const replaySegmentSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  replayId: { type: String, required: true },
  segmentId: { type: Number, required: true },
  blobKey: { type: String, required: true },
  size: { type: Number, required: true },
  time: { type: Date, required: true },
  receivedAt: { type: Date, required: true },
});
// one document per segment, however often it is sent; by its prefix, a replay's segments in order.
replaySegmentSchema.index({ projectId: 1, replayId: 1, segmentId: 1 }, { unique: true });
// retention cleanup by organisation and age.
replaySegmentSchema.index({ orgId: 1, time: 1 });

export const Replay = model('Replay', replaySchema);
export const ReplaySegment = model('ReplaySegment', replaySegmentSchema, 'replay_segments');

