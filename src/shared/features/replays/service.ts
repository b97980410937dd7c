import { Types } from 'mongoose';
import type { BlobStore } from '../../clients/blob.js';
import type { ReplayEventRecord, ReplayRecordingRecord, Stamped } from '../../telemetry/records.js';
import { contentId, upsertAll } from '../../telemetry/storage.js';
import { Project } from '../projects/model.js';
import { Replay, ReplaySegment } from './model.js';

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
