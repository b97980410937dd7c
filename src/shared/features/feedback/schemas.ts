import { z } from 'zod';
import { httpUrl } from '../../links.js';
import { pageQuery } from '../../paging.js';
import { feedbackSources } from '../../telemetry/records.js';
import { viewQuery } from '../../views.js';

const hex32 = z
  .string()
  .transform((value) => value.replace(/-/g, '').toLowerCase())
  .pipe(z.string().regex(/^[0-9a-f]{32}$/, 'an event id: 32 hex characters'));

export const listFeedbackQuery = z.object({ ...pageQuery, ...viewQuery });

export const submitFeedbackBody = z.object({
  /** Required with a session or API key; a DSN names its own project. */
  project_id: z.string().optional(),
  message: z.string().trim().min(1).max(4096),
  name: z.string().trim().max(256).optional(),
  email: z.email().max(254).optional(),
  url: httpUrl.optional(),
  associated_event_id: hex32.optional(),
  replay_id: hex32.optional(),
});

export const feedbackJson = z.object({
  id: z.string(),
  project_id: z.string(),
  message: z.string(),
  name: z.string().nullable(),
  email: z.string().nullable(),
  url: z.string().nullable(),
  associated_event_id: z.string().nullable(),
  replay_id: z.string().nullable(),
  environment: z.string().nullable(),
  release: z.string().nullable(),
  source: z.enum(feedbackSources),
  received_at: z.string(),
});
