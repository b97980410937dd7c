import type { Request } from 'express';
import { z } from 'zod';
import { consumeLimit } from '../../shared/http/rate-limit.js';
import { checkinBody, checkinQuery, checkJson, createCheckBody, listChecksQuery, pingJson, updateCheckBody } from '../../shared/features/cron/schemas.js';
import { checkInByToken, createCheck, deleteCheck, EXCERPT_BYTES, getCheck, listChecks, listPings, rotateToken, updateCheck, type CheckInInput } from '../../shared/features/cron/service.js';
import { pageQuery } from '../../shared/paging.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

const checkParams = z.object({ checkID: z.string() });
const tokenParams = z.object({ token: z.string() });
/** Healthchecks.io-style suffixes: /start, /fail, /ok, or the job's exit status. */
const signalParams = z.object({ token: z.string(), signal: z.union([z.enum(['start', 'fail', 'ok']), z.coerce.number().int().min(0).max(255)]) });

const statusOf = { start: 'start', in_progress: 'start', ok: 'ok', success: 'ok', fail: 'fail', failure: 'fail', error: 'fail' } as const;

/** The check-in a request describes: path suffix, then query, then JSON body; an exit code decides ok or fail. */
function checkInOf(query: z.output<typeof checkinQuery>, body: z.output<typeof checkinBody> | undefined, suffix?: string | number): CheckInInput {
  const json = typeof body === 'object' && body !== null ? (body as { status?: keyof typeof statusOf; exit_code?: number; run_id?: string; message?: string }) : {};
  const signal = suffix ?? query.status ?? query.exit_code ?? json.status ?? json.exit_code;
  const status = signal === undefined ? 'ok' : typeof signal === 'number' ? (signal === 0 ? 'ok' : 'fail') : statusOf[signal as keyof typeof statusOf];
  const excerptText = typeof body === 'string' ? body : (json.message ?? (body && Object.keys(body).some((key) => !['status', 'exit_code', 'run_id'].includes(key)) ? JSON.stringify(body) : undefined));
  const bytes = excerptText ? Buffer.from(excerptText) : undefined;
  // Cut at a byte count, the last character may be split: its remains are dropped (only then).
  const excerpt = bytes && bytes.length > EXCERPT_BYTES ? bytes.subarray(0, EXCERPT_BYTES).toString().replace(/\uFFFD$/, '') : excerptText;
  return { status, runId: query.run_id ?? query.rid ?? json.run_id, excerpt: excerpt || undefined, source: 'http' };
}

/**
 * Where ping URLs point: the configured public URL, else the address this server accepted the connection
 * on. Never the request's Host header: a client chooses that, and the link is shown to every member.
 */
function baseUrlOf(deps: ApiDeps, req: Request): string {
  if (deps.config.API_PUBLIC_URL) return deps.config.API_PUBLIC_URL.replace(/\/+$/, '');
  const address = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return `http://${address.includes(':') ? `[${address}]` : address}:${req.socket.localPort}`;
}

export const cronRoutes = (deps: ApiDeps) => {
  const checkInRoute = (method: 'get' | 'post', withSuffix: boolean) =>
    defineRoute({
      method,
      path: withSuffix ? '/v1/checkins/{token}/{signal}' : '/v1/checkins/{token}',
      tag: 'Cron checks',
      summary: withSuffix
        ? 'Check in with the signal in the path: /start, /fail, /ok, or the exit status (0 is ok, anything else a failure).'
        : method === 'get'
          ? 'Check in: a success unless `status` (start, ok, fail) or `exit_code` says otherwise; `run_id` pairs a start with its end. No credential but the token.'
          : 'Check in with a body: JSON {status, exit_code, run_id, message}, or any text (kept as a 10 kB excerpt, e.g. the job\'s log tail, with NUL bytes as U+FFFD).',
      access: 'public',
      params: withSuffix ? signalParams : tokenParams,
      query: checkinQuery,
      ...(method === 'post' && { body: checkinBody }),
      response: z.object({ ok: z.literal(true) }),
      handler: async ({ params, query, body, res }) => {
        await consumeLimit(deps.limits.checkin, `checkin:${params.token}`, res);
        await checkInByToken(params.token, checkInOf(query, body, (params as { signal?: string | number }).signal));
        return { ok: true as const };
      },
    });
  return [
    defineRoute({
      method: 'get',
      path: '/v1/cron/checks',
      tag: 'Cron checks',
      summary: 'List cron checks, oldest first; filter by project and state (new, up, late, down, paused).',
      access: 'member',
      query: listChecksQuery,
      response: listOf(checkJson),
      handler: ({ principal, query, req }) => listChecks(principal.orgId, query, baseUrlOf(deps, req)),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/cron/checks',
      tag: 'Cron checks',
      summary: 'Create a cron check with a crontab or interval schedule in a time zone; the answer carries its ping URL.',
      access: 'member',
      body: createCheckBody,
      status: 201,
      response: checkJson,
      handler: ({ principal, body, req }) => createCheck(principal, body, baseUrlOf(deps, req), req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/cron/checks/{checkID}',
      tag: 'Cron checks',
      summary: 'One cron check.',
      access: 'member',
      params: checkParams,
      response: checkJson,
      handler: ({ principal, params, req }) => getCheck(principal.orgId, params.checkID, baseUrlOf(deps, req)),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/cron/checks/{checkID}',
      tag: 'Cron checks',
      summary: 'Change the schedule, time zone, margin, maximum runtime, name or slug, or pause and resume.',
      access: 'member',
      params: checkParams,
      body: updateCheckBody,
      response: checkJson,
      handler: ({ principal, params, body, req }) => updateCheck(principal, params.checkID, body, baseUrlOf(deps, req), req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/cron/checks/{checkID}',
      tag: 'Cron checks',
      summary: 'Delete a check and its check-in history.',
      access: 'member',
      params: checkParams,
      status: 204,
      handler: ({ principal, params, req }) => deleteCheck(principal, params.checkID, req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/cron/checks/{checkID}/pings',
      tag: 'Cron checks',
      summary: 'Check-in history, newest first: check-ins received and the monitor\'s missed and timeout verdicts.',
      access: 'member',
      params: checkParams,
      query: z.object(pageQuery),
      response: listOf(pingJson),
      handler: ({ principal, params, query }) => listPings(principal.orgId, params.checkID, query),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/cron/checks/{checkID}/rotate',
      tag: 'Cron checks',
      summary: 'Replace the check-in token; the old ping URL answers 404 from now on.',
      access: 'member',
      params: checkParams,
      response: checkJson,
      handler: ({ principal, params, req }) => rotateToken(principal, params.checkID, baseUrlOf(deps, req), req.ip),
    }),
    checkInRoute('get', false),
    checkInRoute('post', false),
    checkInRoute('get', true),
    checkInRoute('post', true),
  ];
};
