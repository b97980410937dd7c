import { promisify } from 'node:util';
import { gunzip, inflate } from 'node:zlib';
import { Types, type InferSchemaType } from 'mongoose';
import type { z } from 'zod';
import type { BlobStore } from '../../clients/blob.js';
import { AppError, notFound } from '../../errors.js';
import { decodeCursor, encodeCursor, paginate } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import type { ReplayEventRecord, ReplayRecordingRecord, Stamped } from '../../telemetry/records.js';
import { contentId, upsertAll } from '../../telemetry/storage.js';
import { optionalWindow } from '../../views.js';
import { auditAs } from '../audit/service.js';
import { Project } from '../projects/model.js';
import { findProject } from '../projects/service.js';
import { Replay, ReplaySegment } from './model.js';
import type { replayListQuery, replaySegmentJson, replaySegmentsQuery, replaySummaryJson } from './schemas.js';

/** Where a segment's bytes live; the replay's folder (`replays/<project>/<replay>/`) holds all of them. */
const replaySegmentKey = (projectId: string, replayId: string, segmentId: number) => `replays/${projectId}/${replayId}/${segmentId}`;

/** Folds replay events into their replay's summary; every operator used is idempotent, so a replayed batch changes nothing. */
export async function ingestReplayEvents(items: Stamped<ReplayEventRecord>[]): Promise<void> {
  await upsertAll(
    Replay.collection,
    items.map(({ orgId, projectId, record }) => ({
      updateOne: {
        filter: { _id: contentId('replay', projectId, record.replayId) },
        update: {
          $setOnInsert: {
            orgId: new Types.ObjectId(orgId),
            projectId: new Types.ObjectId(projectId),
            replayId: record.replayId,
            replayType: record.replayType ?? null,
            user: record.user ?? null,
            release: record.release ?? null,
            environment: record.environment ?? null,
          },
          $min: { startedAt: new Date(record.startMs ?? record.timeMs) },
          $max: { lastSeenAt: new Date(record.timeMs), segmentCount: record.segmentId + 1 },
          $addToSet: { urls: { $each: record.urls }, traceIds: { $each: record.traceIds }, errorIds: { $each: record.errorIds } },
        },
        upsert: true,
      },
    })),
  );
}

/**
 * Stores recording segments in the blob store, only for projects whose replay capture is on when
 * the batch is processed; segments of other projects are dropped. The bytes are written before the
 * segment document, so a document always points at a blob.
 */
export async function ingestReplayRecordings(items: Stamped<ReplayRecordingRecord>[], blobs: BlobStore, now = new Date()): Promise<void> {
  const projectIds = [...new Set(items.map((item) => item.projectId))].map((id) => new Types.ObjectId(id));
  // one lookup by _id per project, each answered from an index (FerretDB reads every document for `$in`)
  const capturing = await Promise.all(projectIds.map((_id) => Project.exists({ _id, replayCapture: true })));
  const captured = new Set(capturing.flatMap((project) => (project ? [project._id.toHexString()] : [])));
  const segments = await Promise.all(
    items
      .filter((item) => captured.has(item.projectId))
      .map(async ({ orgId, projectId, record }) => {
        const bytes = Buffer.from(record.payloadBase64, 'base64');
        const blobKey = replaySegmentKey(projectId, record.replayId, record.segmentId);
        await blobs.put(blobKey, bytes);
        return {
          updateOne: {
            filter: { _id: contentId('replay-segment', projectId, record.replayId, record.segmentId) },
            update: {
              $setOnInsert: { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), replayId: record.replayId, segmentId: record.segmentId, receivedAt: now },
              $set: { blobKey, size: bytes.length, time: new Date(record.timeMs) },
            },
            upsert: true,
          },
        };
      }),
  );
  await upsertAll(ReplaySegment.collection, segments);
}

// ---------------------------------------------------------------------------------------------------------
// Reading replays

type ReplayDoc = InferSchemaType<typeof Replay.schema> & { _id: Types.ObjectId };
type ReplaySegmentDoc = InferSchemaType<typeof ReplaySegment.schema> & { _id: Types.ObjectId };

const replaySummaryOf = (replay: ReplayDoc): z.infer<typeof replaySummaryJson> => ({
  id: replay.replayId,
  project_id: replay.projectId.toHexString(),
  replay_type: replay.replayType ?? null,
  started_at: replay.startedAt.toISOString(),
  last_seen_at: replay.lastSeenAt.toISOString(),
  duration_ms: Math.max(0, replay.lastSeenAt.getTime() - replay.startedAt.getTime()),
  segment_count: replay.segmentCount,
  urls: replay.urls,
  user: replay.user
    ? { id: replay.user.id ?? null, email: replay.user.email ?? null, username: replay.user.username ?? null, ip_address: replay.user.ipAddress ?? null }
    : null,
  error_ids: replay.errorIds,
  trace_ids: replay.traceIds,
  release: replay.release ?? null,
  environment: replay.environment ?? null,
});

/** A project's recorded sessions, newest first; `from`/`to` bound the start time. */
export async function listReplays(orgId: Types.ObjectId, projectId: string, query: z.infer<typeof replayListQuery>) {
  const project = await findProject(orgId, projectId);
  const filter = { projectId: project._id, ...optionalWindow('startedAt', query, { toExcluded: true }) };
  const page = await paginate(Replay, filter, { sortField: 'startedAt', direction: -1, limit: query.limit, cursor: query.cursor });
  return { data: page.items.map((replay) => replaySummaryOf(replay as ReplayDoc)), next_cursor: page.nextCursor };
}

/** Decoded JSON bytes a page of segments carries before it stops (it always carries at least one segment). */
const PAGE_DECODED_BYTES = 16 * 1024 * 1024;
/** A segment that inflates past this is served as stored (base64) rather than decoded. */
const SEGMENT_DECODED_BYTES = 16 * 1024 * 1024;

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

/** The first bytes tell the SDK's compression: gzip (1f 8b), zlib (78 ..), or none (rrweb JSON text). */
async function inflateSegment(bytes: Buffer): Promise<Buffer> {
  const options = { maxOutputLength: SEGMENT_DECODED_BYTES };
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return gunzipAsync(bytes, options);
  if (bytes[0] === 0x78) return inflateAsync(bytes, options);
  if (bytes.length > SEGMENT_DECODED_BYTES) throw new RangeError('segment too large to decode');
  return bytes;
}

/** A segment for a player: its rrweb events when they decode within the cap, else the stored bytes. */
async function segmentOf(segment: ReplaySegmentDoc, bytes: Buffer | undefined): Promise<{ json: z.infer<typeof replaySegmentJson>; weight: number }> {
  const base = { segment_id: segment.segmentId, time: segment.time.toISOString(), size: segment.size };
  if (!bytes) return { json: { ...base, encoding: 'missing', data: null }, weight: 0 };
  try {
    const text = await inflateSegment(bytes);
    return { json: { ...base, encoding: 'json', data: JSON.parse(text.toString('utf8')) as unknown }, weight: text.length };
  } catch {
    // Too large once inflated, or not JSON after all: the player gets the bytes exactly as the SDK sent them.
    const data = bytes.toString('base64');
    return { json: { ...base, encoding: 'base64', data }, weight: data.length };
  }
}

function segmentCursorStart(cursor: string | undefined): number {
  if (!cursor) return 0;
  const [start] = decodeCursor(cursor, 1);
  if (!Number.isSafeInteger(start) || (start as number) < 0) throw new AppError('invalid_request', 'cursor is not one this API issued');
  return start as number;
}

/**
 * One recording with a page of its segments, in order. Viewing a recording is privileged and audited:
 * the project (404) and the replay (404) are found, the project's replay capture is checked now, not as
 * it was at ingest (403 `consent_withdrawn`), the view is written to the audit trail, and only then is
 * the blob store read. When the trail cannot be written the answer is 503 and no byte is read.
 */
export async function readReplay(
  principal: MemberPrincipal,
  projectId: string,
  replayId: string,
  query: z.infer<typeof replaySegmentsQuery>,
  blobs: BlobStore,
  ip: string | undefined,
) {
  const start = segmentCursorStart(query.cursor);
  const project = await findProject(principal.orgId, projectId);
  // Ids are stored as the SDK sends them, 32 lowercase hex characters; anything else names nothing.
  const replay = /^[0-9a-f]{32}$/.test(replayId) ? await Replay.findOne({ projectId: project._id, replayId }).lean<ReplayDoc>() : null;
  if (!replay) throw notFound('replay');
  if (!project.replayCapture) {
    throw new AppError('consent_withdrawn', 'session replay capture is off for this project, so its recordings cannot be viewed');
  }
  try {
    await auditAs(principal, ip)('replay.view', { type: 'replay', id: replay.replayId }, { project_id: project._id.toHexString(), from_segment: start });
  } catch (error) {
    throw new AppError('not_ready', 'the audit trail could not be written, so the recording was not read; try again later', { cause: error });
  }

  const segments = await ReplaySegment.find({ projectId: project._id, replayId: replay.replayId, segmentId: { $gte: start } })
    .sort({ segmentId: 1 })
    .limit(query.limit + 1)
    .lean<ReplaySegmentDoc[]>();
  const served: z.infer<typeof replaySegmentJson>[] = [];
  let weight = 0;
  // One at a time, stopping at the page's byte budget, so no blob is read that the answer does not carry.
  for (const segment of segments.slice(0, query.limit)) {
    if (served.length > 0 && weight >= PAGE_DECODED_BYTES) break;
    const next = await segmentOf(segment, await blobs.get(segment.blobKey));
    served.push(next.json);
    weight += next.weight;
  }
  const following = segments[served.length];
  return { ...replaySummaryOf(replay), segments: served, next_cursor: following ? encodeCursor([following.segmentId]) : null };
}
