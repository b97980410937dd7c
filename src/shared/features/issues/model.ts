import { Schema, model, type InferSchemaType, type Types } from 'mongoose';

export const issueStatuses = ['unresolved', 'resolved', 'ignored'] as const;

/** An issue's `_id` is derived from its project and grouping hash (see issueKey), so the grouping upsert is addressed by `_id` alone. */
const issueSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  /** Grouping hash: events with the same hash are occurrences of this issue. */
  hash: { type: String, required: true },
  groupingKind: { type: String, required: true },
  title: { type: String, required: true },
  culprit: { type: String, default: null },
  level: { type: String, default: 'error' },
  platform: { type: String, default: null },
  /** Type and value of the newest exception, for display. */
  errorType: { type: String, default: null },
  errorValue: { type: String, default: null },
  status: { type: String, enum: issueStatuses, default: 'unresolved' },
  firstSeen: { type: Date, required: true },
  lastSeen: { type: Date, required: true },
  eventCount: { type: Number, default: 0 },
  /** The newest page of the issue's events (see ErrorEvent.page): where their listing starts. */
  lastPage: { type: Number, default: 0 },
  /** The batches counted into the issue and not yet finished (see countIntoIssue), so that a retried batch counts nothing twice. */
  countedBatches: { type: [String], default: [] },
  userCount: { type: Number, default: 0 },
  environments: { type: [String], default: [] },
  releases: { type: [String], default: [] },
  latestEventId: { type: String, default: null },
  resolvedAt: { type: Date, default: null },
  regressedAt: { type: Date, default: null },
  /**
   * Events counted per hour, keyed `h<hours since the epoch>`, written in the same update as the count:
   * the issue's events over time, read without touching its events.
   */
  hourly: { type: Schema.Types.Mixed, default: undefined },
  /** The release of the issue's first event: the release it is new in. */
  firstRelease: { type: String, default: null },
  /** An ignored issue reopens once this time passes… */
  ignoredUntil: { type: Date, default: null },
  /** …or once its event count reaches this total. */
  ignoredUntilCount: { type: Number, default: null },
});
// one issue per project and hash (the upsert itself is by the derived _id).
issueSchema.index({ projectId: 1, hash: 1 }, { unique: true });
// the issue list in each of its sort orders, keyset-paged within an organisation.
issueSchema.index({ orgId: 1, lastSeen: -1, _id: -1 });
issueSchema.index({ orgId: 1, firstSeen: -1, _id: -1 });
// a release's new issues.
issueSchema.index({ projectId: 1, firstRelease: 1 });
issueSchema.index({ orgId: 1, eventCount: -1, _id: -1 });
issueSchema.index({ orgId: 1, userCount: -1, _id: -1 });
// the scheduled reopening of ignored issues whose time has come.
issueSchema.index({ status: 1, ignoredUntil: 1 });

/** An issue's `hourly` counts are keyed by the hour since the epoch. */
export const HOUR_MS = 3_600_000;
export const hourKey = (hour: number) => `h${hour}`;
export const hourOfKey = (key: string) => Number(key.slice(1));

/** Occurrences of an issue are listed a page at a time; a page holds this many, in the order they were counted. */
export const EVENT_PAGE_SIZE = 100;

/** An error event's `_id` is derived from its project and event id (see eventKey): a resent event clashes with its stored self. */
const errorEventSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  orgId: { type: Schema.Types.ObjectId, required: true },
  projectId: { type: Schema.Types.ObjectId, required: true },
  eventId: { type: String, required: true },
  /** Derived from the grouping hash, so it is known before the issue is written. */
  issueId: { type: Schema.Types.ObjectId, required: true },
  /**
   * Which page of its issue's occurrences the event is on: events are numbered in the order they are
   * stored, and the n-th is on page ⌊(n-1) / EVENT_PAGE_SIZE⌋. Reading a page is an equality lookup
   * however many events the issue has (FerretDB sorts in memory, so a sort over all of an issue's
   * events would grow with them).
   */
  page: { type: Number, required: true },
  /** The batch that stored the event: only a retry of that batch may count it. */
  batchId: { type: String, required: true },
  timestamp: { type: Date, required: true },
  receivedAt: { type: Date, required: true },
  level: { type: String, default: 'error' },
  title: { type: String, required: true },
  environment: { type: String, default: null },
  release: { type: String, default: null },
  userKey: { type: String, default: null },
  /** `contexts.trace.trace_id`: the trace the error happened in. */
  traceId: { type: String, default: null },
  /**
   * The event as the SDK sent it (≤ 1 MiB), as JSON text: it is only ever read whole, and its keys
   * (tags such as `os.name`) may hold dots, which FerretDB does not accept in document keys.
   */
  data: { type: String, required: true },
});
// one stored event per project and event id, however often an SDK sends it.
errorEventSchema.index({ projectId: 1, eventId: 1 }, { unique: true });
// one page of an issue's occurrences (and the latest event), newest first.
errorEventSchema.index({ issueId: 1, page: -1, timestamp: -1, _id: -1 });
// a retried batch finding the events it stored on an earlier attempt.
errorEventSchema.index({ batchId: 1 });
// the issues of one trace, beside its spans, within an organisation.
errorEventSchema.index({ orgId: 1, traceId: 1 });
// retention cleanup by organisation and age.
errorEventSchema.index({ orgId: 1, timestamp: 1 });

/** Which end users an issue has affected: one document per (issue, user), so the count is distinct. */
const issueUserSchema = new Schema({
  _id: { type: Schema.Types.ObjectId, required: true },
  issueId: { type: Schema.Types.ObjectId, required: true },
  userKey: { type: String, required: true },
  /** The batch whose events first named the user in this issue: that batch counts the user into it. */
  batchId: String,
});
// one document per issue and user, however many events name them (its _id is derived from both).
issueUserSchema.index({ issueId: 1, userKey: 1 }, { unique: true });
// a batch counted again after its count was lost finds the users it brought
issueUserSchema.index({ batchId: 1 });

export const Issue = model('Issue', issueSchema);
export const ErrorEvent = model('ErrorEvent', errorEventSchema);
export const IssueUser = model('IssueUser', issueUserSchema);

export type IssueDoc = InferSchemaType<typeof issueSchema> & { _id: Types.ObjectId };
export type ErrorEventDoc = InferSchemaType<typeof errorEventSchema> & { _id: Types.ObjectId };
