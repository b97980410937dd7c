import { countUsage } from '../usage/service.js';
import { randomBytes } from 'node:crypto';
import { Types } from 'mongoose';
import type { z } from 'zod';
import { AppError } from '../../errors.js';
import { paginate } from '../../paging.js';
import type { Principal } from '../../principal.js';
import type { FeedbackRecord, Stamped } from '../../telemetry/records.js';
import { contentId, insertNew } from '../../telemetry/storage.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { findProject } from '../projects/service.js';
import { Feedback, type FeedbackDoc } from './model.js';
import type { feedbackJson, submitFeedbackBody } from './schemas.js';
import { httpLinkOrUndefined } from '../../links.js';

function feedbackDoc({ orgId, projectId, record }: Stamped<FeedbackRecord>, receivedAt: Date) {
  return {
    _id: contentId('feedback', projectId, record.feedbackId),
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    feedbackId: record.feedbackId,
    message: record.message,
    contactEmail: record.contactEmail ?? null,
    name: record.name ?? null,
    url: record.url ?? null,
    associatedEventId: record.associatedEventId ?? null,
    replayId: record.replayId ?? null,
    environment: record.environment ?? null,
    release: record.release ?? null,
    source: record.source,
    receivedAt,
  };
}

/** Stores feedback once per {project, feedback id}; a resent submission is already done. */
export async function ingestFeedback(items: Stamped<FeedbackRecord>[]): Promise<void> {
  await insertNew(
    Feedback.collection,
    items.map((item) => feedbackDoc(item, new Date(item.record.timeMs))),
  );
}

const feedbackJsonOf = (doc: FeedbackDoc): z.infer<typeof feedbackJson> => ({
  id: doc._id.toHexString(),
  project_id: doc.projectId.toHexString(),
  message: doc.message,
  name: doc.name ?? null,
  email: doc.contactEmail ?? null,
  // stored before links were checked at the door
  url: httpLinkOrUndefined(doc.url ?? undefined) ?? null,
  associated_event_id: doc.associatedEventId ?? null,
  replay_id: doc.replayId ?? null,
  environment: doc.environment ?? null,
  release: doc.release ?? null,
  source: doc.source,
  received_at: doc.receivedAt.toISOString(),
});

export async function listFeedback(scope: ViewScope, options: { limit: number; cursor?: string | undefined }) {
  const filter = { ...scopeFilter(scope), receivedAt: { $gte: scope.from, $lte: scope.to } };
  const page = await paginate(Feedback, filter, { sortField: 'receivedAt', direction: -1, ...options });
  return { data: page.items.map((doc) => feedbackJsonOf(doc as FeedbackDoc)), next_cursor: page.nextCursor };
}

/** POST /v1/feedback: a DSN writes into its own project; a member names one of the organisation's projects. */
export async function submitFeedback(principal: Principal, body: z.infer<typeof submitFeedbackBody>, now = new Date()) {
  let projectId: Types.ObjectId;
  if (principal.kind === 'dsn') {
    if (body.project_id && body.project_id !== principal.projectId.toHexString()) throw new AppError('forbidden', 'a DSN writes only into its own project');
    projectId = principal.projectId;
  } else {
    if (!body.project_id) throw new AppError('validation_failed', 'project_id is required', { details: [{ path: 'body.project_id', message: 'required' }] });
    projectId = (await findProject(principal.orgId, body.project_id))._id;
  }
  const item: Stamped<FeedbackRecord> = {
    orgId: principal.orgId.toHexString(),
    projectId: projectId.toHexString(),
    record: {
      feedbackId: randomBytes(16).toString('hex'),
      message: body.message,
      contactEmail: body.email,
      name: body.name,
      url: body.url,
      associatedEventId: body.associated_event_id,
      replayId: body.replay_id,
      source: 'api',
      timeMs: now.getTime(),
    },
  };
  const doc = feedbackDoc(item, now);
  await Feedback.collection.insertOne(doc);
  // counted like feedback from the SDKs, which the workers count per batch
  await countUsage('feedback', [{ batchId: `api-feedback:${item.record.feedbackId}`, items: [item] }], now);
  return feedbackJsonOf(doc as FeedbackDoc);
}
