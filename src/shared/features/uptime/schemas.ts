import { z } from 'zod';
import { httpUrl } from '../../links.js';
import { pageQuery } from '../../paging.js';
import { repeatedParameter } from '../../views.js';
import { monitorStates } from './model.js';

/** A status code, or a range written "200-299" or "2xx". */
const expectedStatus = z.union([
  z.number().int().min(100).max(599),
  z
    .string()
    .regex(/^[1-5](\d\d|xx)$|^[1-5]\d\d-[1-5]\d\d$/, 'a status code, "200-299" or "2xx"')
    // "299-200" would match no status at all, keeping the monitor down whatever the service answers
    .refine((text) => {
      const [low, high] = text.split('-');
      return high === undefined || Number(low) <= Number(high);
    }, 'a range from the lower code to the higher'),
]);

const fields = {
  name: z.string().trim().min(1).max(200),
  url: httpUrl,
  method: z.enum(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
  // Values as Node sends them: anything else (a line break, a control character) fails every request.
  headers: z.record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'a header name'), z.string().max(8192).regex(/^[\t\x20-\x7e\x80-\xff]*$/, 'printable text (no line breaks or control characters)')).refine((h) => Object.keys(h).length <= 50, 'at most 50 headers'),
  body: z.string().max(65_536).nullable(),
  interval_seconds: z.number().int().min(30).max(86_400),
  timeout_ms: z.number().int().min(100).max(60_000),
  expected_status: z.array(expectedStatus).min(1).max(20),
  keyword: z.string().min(1).max(1024).nullable(),
  /** Text that must not appear in the body; `true`: the keyword must not appear. */
  keyword_absent: z.union([z.string().min(1).max(1024), z.boolean()]).nullable(),
  max_redirects: z.number().int().min(0).max(20),
  failure_threshold: z.number().int().min(1).max(20),
  recovery_threshold: z.number().int().min(1).max(20),
  /** false: probe a self-signed or otherwise untrusted certificate (its expiry is still watched). */
  verify_tls: z.boolean(),
  paused: z.boolean(),
};

export const createMonitorBody = z
  .object({
    project_id: z.string(),
    name: fields.name,
    url: fields.url,
    method: fields.method.default('GET'),
    headers: fields.headers.default({}),
    body: fields.body.default(null),
    interval_seconds: fields.interval_seconds.default(60),
    timeout_ms: fields.timeout_ms.default(10_000),
    expected_status: fields.expected_status.default(['200-299']),
    keyword: fields.keyword.default(null),
    keyword_absent: fields.keyword_absent.default(null),
    max_redirects: fields.max_redirects.default(10),
    failure_threshold: fields.failure_threshold.default(2),
    recovery_threshold: fields.recovery_threshold.default(1),
    verify_tls: fields.verify_tls.default(true),
    paused: fields.paused.default(false),
  })
  .strict();

export const updateMonitorBody = z.object(fields).partial().strict();

export const listMonitorsQuery = z.object({ ...pageQuery, project: repeatedParameter, project_id: repeatedParameter, state: z.enum([...monitorStates, 'paused']).optional() });

export const monitorJson = z.object({
  id: z.string(),
  project_id: z.string(),
  name: z.string(),
  url: z.string(),
  method: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string().nullable(),
  interval_seconds: z.number(),
  timeout_ms: z.number(),
  expected_status: z.array(z.union([z.number(), z.string()])),
  keyword: z.string().nullable(),
  keyword_absent: z.union([z.string(), z.boolean()]).nullable(),
  max_redirects: z.number(),
  failure_threshold: z.number(),
  recovery_threshold: z.number(),
  verify_tls: z.boolean(),
  state: z.enum([...monitorStates, 'paused']),
  last_checked_at: z.string().nullable(),
  last_error: z.string().nullable(),
  next_check_at: z.string().nullable(),
  tls_expires_at: z.string().nullable(),
  created_at: z.string(),
});

export const probeResultJson = z.object({
  id: z.string(),
  checked_at: z.string(),
  ok: z.boolean(),
  status_code: z.number().nullable(),
  latency_ms: z.number().nullable(),
  error: z.string().nullable(),
  tls_days_left: z.number().nullable(),
});
