import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { viewQuery } from '../../views.js';
import { issueStatuses } from './model.js';

export const issueSorts = { last_seen: 'lastSeen', first_seen: 'firstSeen', events: 'eventCount', users: 'userCount' } as const;

export const listIssuesQuery = z.object({
  ...pageQuery,
  ...viewQuery,
  status: z.enum(issueStatuses).optional(),
  environment: z.string().max(256).optional(),
  release: z.string().max(256).optional(),
  level: z.enum(['debug', 'info', 'warning', 'error', 'fatal']).optional(),
  /** Case-insensitive text in the title or culprit. */
  q: z.string().trim().min(1).max(200).optional(),
  sort: z.enum(Object.keys(issueSorts) as [keyof typeof issueSorts, ...(keyof typeof issueSorts)[]]).default('last_seen'),
});

export const updateIssueBody = z
  .object({
    action: z.enum(['resolve', 'ignore', 'reopen']),
    /** With `ignore`: reopen once this time passes. */
    until: z.iso.datetime({ offset: true }).optional(),
    /** With `ignore`: reopen after this many more events. */
    until_count: z.number().int().positive().optional(),
  })
  .refine((body) => body.action === 'ignore' || (body.until === undefined && body.until_count === undefined), {
    message: 'until and until_count go with the ignore action',
    path: ['action'],
  });

export const issueJson = z.object({
  id: z.string(),
  project_id: z.string(),
  title: z.string(),
  culprit: z.string().nullable(),
  level: z.string(),
  platform: z.string().nullable(),
  type: z.string().nullable(),
  value: z.string().nullable(),
  status: z.enum(issueStatuses),
  first_seen: z.string(),
  last_seen: z.string(),
  count: z.number().int(),
  user_count: z.number().int(),
  environments: z.array(z.string()),
  releases: z.array(z.string()),
  resolved_at: z.string().nullable(),
  regressed_at: z.string().nullable(),
  ignore: z.object({ until: z.string().nullable(), until_count: z.number().int().nullable() }).nullable(),
});

export const frameJson = z.object({
  filename: z.string().nullable(),
  abs_path: z.string().nullable(),
  function: z.string().nullable(),
  module: z.string().nullable(),
  lineno: z.number().nullable(),
  colno: z.number().nullable(),
  in_app: z.boolean(),
  context_line: z.string().nullable(),
  /** Source lines around context_line, from the source map's sourcesContent or as the SDK sent them. */
  pre_context: z.array(z.string()),
  post_context: z.array(z.string()),
  /** JavaScript frames: true when resolved through a source map, false when not (see symbolication_error); null for other frames. */
  symbolicated: z.boolean().nullable(),
  symbolication_error: z.string().nullable(),
  /** The name of the source map artifact the frame was resolved with. */
  source_map: z.string().nullable(),
  /** In-app frames of a project with a VCS integration: the line in the repository. */
  source_url: z.string().nullable(),
  /** The frame as the SDK sent it (minified), beside the resolved one. */
  minified: z
    .object({ filename: z.string().nullable(), abs_path: z.string().nullable(), function: z.string().nullable(), lineno: z.number().nullable(), colno: z.number().nullable() })
    .nullable(),
});

export const eventJson = z.object({
  event_id: z.string(),
  issue_id: z.string().nullable(),
  timestamp: z.string(),
  received_at: z.string(),
  level: z.string(),
  title: z.string(),
  message: z.string().nullable(),
  platform: z.string().nullable(),
  environment: z.string().nullable(),
  release: z.string().nullable(),
  transaction: z.string().nullable(),
  user: z.record(z.string(), z.unknown()).nullable(),
  tags: z.record(z.string(), z.string()),
  /** Oldest first, as Sentry orders a chain; each with its frames, crashing frame last. */
  exception: z.array(z.object({ type: z.string().nullable(), value: z.string().nullable(), mechanism: z.record(z.string(), z.unknown()).nullable(), frames: z.array(frameJson) })),
  contexts: z.record(z.string(), z.unknown()),
  /** What happened before the event, oldest first, as the SDK recorded it (at most the newest 100). */
  breadcrumbs: z.array(
    z.object({
      timestamp: z.string().nullable(),
      type: z.string().nullable(),
      category: z.string().nullable(),
      level: z.string().nullable(),
      message: z.string().nullable(),
      data: z.record(z.string(), z.unknown()).nullable(),
    }),
  ),
  /** The event's `extra` (Sentry's "Additional data"), as sent. */
  extra: z.record(z.string(), z.unknown()),
  request: z.record(z.string(), z.unknown()).nullable(),
  sdk: z.record(z.string(), z.unknown()).nullable(),
  /** Null without JavaScript frames to resolve; else whether every one was resolved through a source map (now, or when the event was read). */
  symbolicated: z.boolean().nullable(),
  /** Why frames were not resolved, e.g. `no source map for https://cdn.example.com/app.min.js with release shop@1.2.0`. */
  symbolication_errors: z.array(z.string()),
});

export const issueSeriesQuery = z.object({ from: viewQuery.from, to: viewQuery.to });

/** An issue's events per hour of a window, from the counts written with each batch. */
export const issueSeriesJson = z.object({
  step_seconds: z.literal(3600),
  data: z.array(z.object({ time: z.string(), events: z.number().int() })),
});

export const issueDetailJson = issueJson.extend({ latest_event: eventJson.nullable() });
