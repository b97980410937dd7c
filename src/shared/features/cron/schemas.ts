import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { repeatedParameter } from '../../views.js';
import { checkStates, downReasons, pingStatuses } from './model.js';
import { crontabProblem, intervalUnits } from './schedule.js';

export const scheduleSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('crontab'),
    value: z
      .string()
      .max(200)
      .superRefine((value, ctx) => {
        const problem = crontabProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
  }),
  z.object({ type: z.literal('interval'), value: z.number().int().min(1).max(10_000), unit: z.enum(intervalUnits) }),
]);

/** The longest margin or runtime, in minutes: four weeks. */
export const MAX_MINUTES = 40_320;

const timezone = z.string().min(1).max(64);
const checkinMargin = z.number().int().min(1).max(MAX_MINUTES).meta({ description: 'Minutes after the expected time before a missing check-in is a miss.' });
const maxRuntime = z.number().int().min(1).max(MAX_MINUTES).meta({ description: 'Minutes a started run may take before it is timed out.' });
const slug = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,127}$/, 'lower-case letters, digits, - and _ (up to 128)');

export const createCheckBody = z
  .object({
    project_id: z.string(),
    name: z.string().trim().min(1).max(200),
    /** Defaults to the name, slugified. */
    slug: slug.optional(),
    schedule: scheduleSchema,
    timezone: timezone.default('UTC'),
    checkin_margin: checkinMargin.default(1),
    max_runtime: maxRuntime.default(30),
    paused: z.boolean().default(false),
  })
  .strict();

export const updateCheckBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    slug,
    schedule: scheduleSchema,
    timezone,
    checkin_margin: checkinMargin,
    max_runtime: maxRuntime,
    paused: z.boolean(),
  })
  .partial()
  .strict();

export const listChecksQuery = z.object({
  ...pageQuery,
  project: repeatedParameter,
  project_id: repeatedParameter,
  state: z.enum([...checkStates, 'paused']).optional(),
});

export const checkJson = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  slug: z.string(),
  schedule: scheduleSchema,
  timezone: z.string(),
  checkin_margin: z.number(),
  max_runtime: z.number(),
  state: z.enum([...checkStates, 'paused']),
  /** Why a `down` check is down. */
  down_reason: z.enum(downReasons).nullable(),
  last_checkin_at: z.string().nullable(),
  next_expected_at: z.string().nullable(),
  /** Check in by GET or POST here; the token in it is the credential. */
  ping_url: z.string(),
  created_at: z.string(),
});

export const pingJson = z.object({
  id: z.string(),
  received_at: z.string(),
  status: z.enum(pingStatuses),
  duration_ms: z.number().nullable(),
  run_id: z.string().nullable(),
  excerpt: z.string().nullable(),
  source: z.enum(['http', 'sdk', 'monitor']),
});

const signal = z.enum(['start', 'ok', 'fail', 'success', 'failure', 'in_progress', 'error']);
const exitCode = z.coerce.number().int().min(0).max(255);
const runId = z.string().min(1).max(128);

export const checkinQuery = z.object({ status: signal.optional(), exit_code: exitCode.optional(), run_id: runId.optional(), rid: runId.optional() });
/**
 * A JSON body may carry the same fields, checked as in the query (a bad one is refused, not recorded
 * as a check-in without a status); other JSON fields and any other body are kept as the excerpt.
 */
export const checkinBody = z.union([
  z.string(),
  z.looseObject({ status: signal.optional(), exit_code: z.number().int().min(0).max(255).optional(), run_id: runId.optional(), message: z.string().optional() }),
]);
