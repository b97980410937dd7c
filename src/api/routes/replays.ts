import { z } from 'zod';
import type { BlobStore } from '../../shared/clients/blob.js';
import { replayListQuery, replayRecordingJson, replaySegmentsQuery, replaySummaryJson } from '../../shared/features/replays/schemas.js';
import { listReplays, readReplay } from '../../shared/features/replays/service.js';
import { defineRoute, listOf } from '../routing.js';

const projectParams = z.object({ projectID: z.string() });

export const replayRoutes = (blobs: BlobStore) => [
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}/replay',
    tag: 'Session replay',
    summary: 'Recorded sessions, newest first; `from`/`to` bound their start time.',
    access: 'member',
    params: projectParams,
    query: replayListQuery,
    response: listOf(replaySummaryJson),
    handler: ({ principal, params, query }) => listReplays(principal.orgId, params.projectID, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}/replay/{sessionID}',
    tag: 'Session replay',
    summary:
      "One recording with a page of its segments in order. Owner only; refused with consent_withdrawn while the project's replay capture is off; the view is written to the audit log before any recording byte is read (503 when it cannot be).",
    access: 'owner',
    params: projectParams.extend({ sessionID: z.string() }),
    query: replaySegmentsQuery,
    response: replayRecordingJson,
    handler: ({ principal, params, query, req }) => readReplay(principal, params.projectID, params.sessionID, query, blobs, req.ip),
  }),
];
