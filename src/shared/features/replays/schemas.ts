import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { viewQuery } from '../../views.js';

/** The replay list: newest first; `from`/`to` bound `started_at` (from inclusive, to exclusive) and have no default. */
export const replayListQuery = z.object({ ...pageQuery, from: viewQuery.from, to: viewQuery.to });

/** One recording's segments, a page at a time: `cursor` comes from the previous page's `next_cursor`. */
export const replaySegmentsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: pageQuery.cursor,
});

export const replayUserJson = z.object({
  id: z.string().nullable(),
  email: z.string().nullable(),
  username: z.string().nullable(),
  ip_address: z.string().nullable(),
});

export const replaySummaryJson = z.object({
  /** The replay id the SDK sent (32 hex characters). */
  id: z.string(),
  project_id: z.string(),
  replay_type: z.string().nullable(),
  started_at: z.string(),
  last_seen_at: z.string(),
  /** last_seen_at − started_at. */
  duration_ms: z.number().int(),
  segment_count: z.number().int(),
  urls: z.array(z.string()),
  user: replayUserJson.nullable(),
  error_ids: z.array(z.string()),
  trace_ids: z.array(z.string()),
  release: z.string().nullable(),
  environment: z.string().nullable(),
});

export const replaySegmentJson = z.object({
  segment_id: z.number().int(),
  /** When ingest received the segment. */
  time: z.string(),
  /** Bytes as stored (compressed when the SDK compressed them). */
  size: z.number().int(),
  /**
   * `json`: `data` is the segment's rrweb events, decoded. `base64`: `data` is the stored bytes as the SDK
   * sent them (zlib/gzip-compressed or plain rrweb JSON), for segments too large to decode here or that
   * do not decode. `missing`: the bytes are gone (retention removed them meanwhile); `data` is null.
   */
  encoding: z.enum(['json', 'base64', 'missing']),
  data: z.unknown(),
});

export const replayRecordingJson = replaySummaryJson.extend({
  segments: z.array(replaySegmentJson),
  /** Set when more segments follow: pass it as `cursor` for the next page. */
  next_cursor: z.string().nullable(),
});
