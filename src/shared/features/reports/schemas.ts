import { z } from 'zod';
import { addressJson } from '../recipients/schemas.js';
import { cadences } from './model.js';

export const weekdays = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;

export const putScheduleBody = z
  .object({
    cadence: z.enum(cadences),
    /** A day name or 0–7 (0 and 7 are Sunday, as in crontab); weekly digests go out that day. Default Monday. */
    weekday: z.union([z.enum(weekdays), z.number().int().min(0).max(7)]).default('monday'),
    hour: z.number().int().min(0).max(23).default(9),
    minute: z.number().int().min(0).max(59).default(0),
    timezone: z.string().min(1).max(64).default('UTC'),
    recipients: z.array(z.email()).min(1).max(50),
  })
  .strict();

export const scheduleJson = z.object({
  cadence: z.enum(cadences),
  weekday: z.enum(weekdays),
  hour: z.number(),
  minute: z.number(),
  timezone: z.string(),
  recipients: z.array(z.string()),
  /** Each recipient and whether its owner confirmed the address; the digest goes to confirmed ones only. */
  addresses: z.array(addressJson),
  next_send_at: z.string(),
  last_sent_at: z.string().nullable(),
  last_error: z.string().nullable(),
});

const count = z.number();
export const digestProjectJson = z.object({
  project_id: z.string(),
  name: z.string(),
  events: count,
  previous_events: count,
  /** events / previous_events − 1; null when the previous period had none. */
  change: z.number().nullable(),
  new_issues: z.array(z.object({ id: z.string(), title: z.string(), events: count })),
  regressed_issues: z.array(z.object({ id: z.string(), title: z.string(), regressed_at: z.string() })),
  top_issues: z.array(z.object({ id: z.string(), title: z.string(), events: count })),
  uptime: z.array(z.object({ monitor_id: z.string(), name: z.string(), probes: count, uptime_percent: z.number().nullable(), incidents: count })),
  cron: z.array(z.object({ check_id: z.string(), name: z.string(), missed: count, failed: count, timed_out: count })),
  slowest_endpoints: z.array(z.object({ service: z.string(), method: z.string().nullable(), route: z.string(), requests: count, p95_ms: z.number().nullable() })),
  /** Deployments in the period, oldest first, with their verdict once judged. */
  deployments: z.array(z.object({ id: z.string(), version: z.string(), environment: z.string(), deployed_at: z.string(), verdict: z.enum(['healthy', 'degraded', 'insufficient_data']).nullable() })),
});

export const previewJson = z.object({
  subject: z.string(),
  html: z.string(),
  text: z.string(),
  data: z.object({ organization: z.string(), projects: z.array(digestProjectJson) }),
  period: z.object({ from: z.string(), to: z.string(), cadence: z.enum(cadences) }),
});
