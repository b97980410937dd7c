import { Schema, model } from 'mongoose';
import { spanCategories, spanKinds, spanStatuses } from '../../telemetry/records.js';
import { attributePairsField } from '../../telemetry/storage.js';

/** Spans of one trace an answer of GET /v1/traces/{traceID} holds at most; spans are stored on pages of this many. */
export const SPAN_PAGE_SIZE = 2000;

/** `collection` is a Mongoose-reserved name, harmless here: spans are written natively and read lean. */
const dbSchema = new Schema(
  { system: String, statement: String, operation: String, collection: String, namespace: String, serverAddress: String },
  { _id: false, suppressReservedKeysWarning: true },
);

const spanSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  traceId: { type: String, required: true },
  spanId: { type: String, required: true },
  parentSpanId: { type: String, default: null },
  name: { type: String, required: true },
  kind: { type: String, enum: spanKinds, required: true },
  service: { type: String, required: true },
  serviceVersion: { type: String, default: null },
  environment: { type: String, default: null },
  release: { type: String, default: null },
  startAt: { type: Date, required: true },
  endAt: { type: Date, required: true },
  durationMs: { type: Number, required: true },
  status: { type: String, enum: spanStatuses, required: true },
  statusMessage: { type: String, default: null },
  category: { type: String, enum: spanCategories, required: true },
  http: { type: { _id: false, method: String, route: String, statusCode: Number, path: String }, default: null },
  db: { type: dbSchema, default: null },
  messaging: { type: { _id: false, system: String, destination: String, operation: String }, default: null },
  peerService: { type: String, default: null },
  isSegment: { type: Boolean, required: true },
  attributes: attributePairsField,
  events: { type: [{ _id: false, name: String, time: Date, attributes: attributePairsField }], default: [] },
  links: { type: [{ _id: false, traceId: String, spanId: String, attributes: attributePairsField }], default: [] },
  source: { type: String, required: true },
  /** The page of its trace the span is read on: SPAN_PAGE_SIZE spans each, in the order they arrived. */
  page: { type: Number, default: 0 },
});
// one stored span per trace and span id, however often it is sent; by its prefix, one trace's spans.
spanSchema.index({ projectId: 1, traceId: 1, spanId: 1 }, { unique: true });
// one page of a trace's spans within an organisation (trace ids are the client's, so tenancy narrows them).
spanSchema.index({ orgId: 1, traceId: 1, page: 1 });
// retention cleanup by organisation and age.
spanSchema.index({ orgId: 1, startAt: 1 });

/** One document per trace, maintained as its spans arrive. */
const traceSchema = new Schema({
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  traceId: { type: String, required: true },
  startAt: { type: Date, required: true },
  endAt: { type: Date, required: true },
  spanCount: { type: Number, default: 0 },
  errorCount: { type: Number, default: 0 },
  services: { type: [String], default: [] },
  /** Name and service of the span without a parent, once it has arrived. */
  rootName: { type: String, default: null },
  rootService: { type: String, default: null },
  /**
   * The trace's outgoing calls that name no peer, and its entry spans whose parent is in another
   * process: the two halves the service map pairs into an edge, whichever arrives second
   * (services/rollups.ts, pairedObservations).
   */
  calls: { type: [Schema.Types.Mixed], default: [] },
  entries: { type: [Schema.Types.Mixed], default: [] },
  /** Minutes since the epoch of the first spans stored: the trace list reads a window a minute at a time by equality. */
  minute: { type: Number, required: true },
  /** The five seconds of that minute (0–11): a busy minute is read a tick at a time. */
  tick: { type: Number, default: null },
  /** What the trace list filters spans on, one token per value seen in some span (see facetsOf). */
  facets: { type: [String], default: [] },
  /** The longest span's duration. */
  maxSpanMs: { type: Number, default: 0 },
});
// the summary upsert, and opening one trace.
traceSchema.index({ projectId: 1, traceId: 1 }, { unique: true });
// the trace list, a minute of an organisation's or a project's traces at a time, newest first.
traceSchema.index({ orgId: 1, minute: 1, tick: 1 });
traceSchema.index({ projectId: 1, minute: 1, startAt: -1, _id: -1 });
// retention cleanup: a trace goes once its last span has expired.
traceSchema.index({ orgId: 1, endAt: 1 });

export const Span = model('Span', spanSchema);
export const Trace = model('Trace', traceSchema);

