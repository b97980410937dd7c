import type { Types } from 'mongoose';
import type { z } from 'zod';
import type { Outbound } from '../../clients/outbound.js';
import type { SecretBox } from '../../clients/secret-box.js';
import { AppError, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { FILTERED } from '../../telemetry/scrub.js';
import { inTurn, oneAtATime } from '../../telemetry/storage.js';
import { namedProjects, projectFilter } from '../../views.js';
import { openAlert, resolveAlert } from '../alerts/service.js';
import { auditAs } from '../audit/service.js';
import { findProject } from '../projects/service.js';
import { UptimeCheck, UptimeMonitor, type MonitorHeader, type UptimeCheckDoc, type UptimeMonitorDoc } from './model.js';
import type { createMonitorBody, listMonitorsQuery, monitorJson, probeResultJson, updateMonitorBody } from './schemas.js';

/** A failing probe of a monitor not yet down is repeated this soon (or at its interval, if shorter) to confirm. */
const CONFIRM_AFTER_MS = 10_000;
/** Body read for the keyword checks. */
const BODY_READ_BYTES = 1 << 20;

type MonitorJson = z.infer<typeof monitorJson>;

/** What creating and changing a monitor needs: the URL check, and the box its header values are sealed with. */
export interface MonitorWriteDeps {
  outbound: Pick<Outbound, 'urlProblem'>;
  secrets: SecretBox;
}

const monitorJsonOf = (monitor: UptimeMonitorDoc): MonitorJson => ({
  id: monitor._id.toHexString(),
  project_id: monitor.projectId.toHexString(),
  name: monitor.name,
  url: monitor.url,
  method: monitor.method,
  // header values are credentials more often than not: no role reads them back
  headers: Object.fromEntries(monitor.headers.map((h) => [h.name, FILTERED])),
  body: monitor.body ?? null,
  interval_seconds: monitor.intervalSeconds,
  timeout_ms: monitor.timeoutMs,
  expected_status: monitor.expectedStatus as (number | string)[],
  keyword: monitor.keyword ?? null,
  keyword_absent: (monitor.keywordAbsent as string | boolean | null) ?? null,
  max_redirects: monitor.maxRedirects,
  failure_threshold: monitor.failureThreshold,
  recovery_threshold: monitor.recoveryThreshold,
  verify_tls: monitor.verifyTls,
  state: monitor.paused ? 'paused' : monitor.state,
  last_checked_at: monitor.lastCheckedAt?.toISOString() ?? null,
  last_error: monitor.lastError ?? null,
  next_check_at: monitor.paused ? null : monitor.nextProbeAt.toISOString(),
  tls_expires_at: monitor.tlsValidTo?.toISOString() ?? null,
  created_at: monitor.createdAt.toISOString(),
});

const probeResultJsonOf = (check: UptimeCheckDoc): z.infer<typeof probeResultJson> => ({
  id: check._id.toHexString(),
  checked_at: check.checkedAt.toISOString(),
  ok: check.ok,
  status_code: check.statusCode ?? null,
  latency_ms: check.latencyMs ?? null,
  error: check.error ?? null,
  tls_days_left: check.tlsDaysLeft ?? null,
});

function refuseUrl(url: string | undefined, outbound: Pick<Outbound, 'urlProblem'>): void {
  const problem = url === undefined ? undefined : outbound.urlProblem(url);
  if (problem) throw new AppError('validation_failed', `url cannot be probed: ${problem}`, { details: [{ path: 'body.url', message: problem }] });
}

/**
 * `keyword_absent: true` means "the keyword must not appear": without a keyword it would check nothing.
 * A HEAD answer has no body, so a keyword rule would fail every probe.
 */
function refuseKeywordRules(keyword: string | null | undefined, keywordAbsent: unknown, method: string): void {
  if (keywordAbsent === true && !keyword) {
    const message = 'true needs a keyword (the text that must not appear)';
    throw new AppError('validation_failed', `keyword_absent ${message}`, { details: [{ path: 'body.keyword_absent', message }] });
  }
  if (method === 'HEAD' && (keyword || keywordAbsent)) {
    const message = 'a HEAD answer has no body to look for a keyword in';
    throw new AppError('validation_failed', message, { details: [{ path: 'body.method', message }] });
  }
}

/** The key oneAtATime serializes a monitor's writes by. */
const monitorCollection = UptimeMonitor.collection.collectionName;

/**
 * Headers as stored, each value sealed. A value sent as `[Filtered]` (the mask every read shows) keeps the
 * value stored under that name, so a form that sends a monitor back unchanged does not destroy its headers.
 */
function sealedHeaders(headers: Record<string, string>, stored: MonitorHeader[], secrets: SecretBox): MonitorHeader[] {
  return Object.entries(headers).map(([name, value]) => {
    if (value !== FILTERED) return { name, sealed: secrets.seal(value) };
    const kept = stored.find((h) => h.name === name) ?? stored.find((h) => h.name.toLowerCase() === name.toLowerCase());
    if (!kept) {
      const message = `"${FILTERED}" keeps a stored value, and this monitor has no header of that name`;
      throw new AppError('validation_failed', `headers.${name}: ${message}`, { details: [{ path: `body.headers.${name}`, message }] });
    }
    // a value stored before sealing is sealed now
    return { name, sealed: 'sealed' in kept ? kept.sealed : secrets.seal(kept.value) };
  });
}

/** The headers a probe sends, unsealed (a monitor stored before sealing holds plain values). */
const openHeaders = (headers: MonitorHeader[], secrets: SecretBox) => Object.fromEntries(headers.map((h) => [h.name, 'sealed' in h ? secrets.open(h.sealed) : h.value]));

/**
 * Seals the header values of monitors saved before they were sealed, in place, so an upgrade leaves
 * none in plaintext. Each monitor is read again and written in its turn: a change made meanwhile wins.
 * Answers how many monitors it sealed.
 */
export async function sealStoredHeaders(secrets: SecretBox): Promise<number> {
  const plain = (headers: MonitorHeader[]) => headers.some((h) => !('sealed' in h));
  const monitors = await UptimeMonitor.find({}, { headers: 1 }).lean<Pick<UptimeMonitorDoc, '_id' | 'headers'>[]>();
  let sealed = 0;
  for (const { _id } of monitors.filter((monitor) => plain(monitor.headers))) {
    sealed += await inTurn(monitorCollection, _id, async () => {
      const monitor = await UptimeMonitor.findById(_id, { headers: 1 }).lean<Pick<UptimeMonitorDoc, '_id' | 'headers'>>();
      if (!monitor || !plain(monitor.headers)) return 0;
      const headers = monitor.headers.map((h) => ('sealed' in h ? h : { name: h.name, sealed: secrets.seal(h.value) }));
      return (await UptimeMonitor.updateOne({ _id }, { $set: { headers } })).modifiedCount;
    });
  }
  return sealed;
}

async function findMonitor(orgId: Types.ObjectId, monitorId: string): Promise<UptimeMonitorDoc> {
  const monitor = await UptimeMonitor.findOne({ _id: parseId(monitorId, 'uptime monitor'), orgId }).lean<UptimeMonitorDoc>();
  if (!monitor) throw notFound('uptime monitor');
  return monitor;
}

export async function createMonitor(principal: MemberPrincipal, input: z.infer<typeof createMonitorBody>, deps: MonitorWriteDeps, ip: string | undefined, now = new Date()) {
  refuseUrl(input.url, deps.outbound);
  refuseKeywordRules(input.keyword, input.keyword_absent, input.method);
  const project = await findProject(principal.orgId, input.project_id);
  const monitor = (
    await UptimeMonitor.create({
      orgId: principal.orgId,
      projectId: project._id,
      name: input.name,
      url: input.url,
      method: input.method,
      headers: sealedHeaders(input.headers, [], deps.secrets),
      body: input.body,
      intervalSeconds: input.interval_seconds,
      timeoutMs: input.timeout_ms,
      expectedStatus: input.expected_status,
      keyword: input.keyword,
      keywordAbsent: input.keyword_absent,
      maxRedirects: input.max_redirects,
      failureThreshold: input.failure_threshold,
      recoveryThreshold: input.recovery_threshold,
      verifyTls: input.verify_tls,
      state: 'pending',
      paused: input.paused,
      // due at once: the scheduler's next tick probes it
      nextProbeAt: now,
      createdAt: now,
    })
  ).toObject() as UptimeMonitorDoc;
  await auditAs(principal, ip)('uptime_monitor.create', { type: 'uptime_monitor', id: monitor._id }, { name: monitor.name, url: monitor.url });
  return monitorJsonOf(monitor);
}

export async function listMonitors(orgId: Types.ObjectId, query: z.infer<typeof listMonitorsQuery>) {
  const filter: Record<string, unknown> = { orgId, ...projectFilter(await namedProjects(orgId, [...(query.project ?? []), ...(query.project_id ?? [])])) };
  if (query.state === 'paused') filter.paused = true;
  else if (query.state) Object.assign(filter, { state: query.state, paused: false });
  const page = await paginate(UptimeMonitor, filter, { sortField: 'createdAt', direction: 1, limit: query.limit, cursor: query.cursor });
  return { data: (page.items as UptimeMonitorDoc[]).map(monitorJsonOf), next_cursor: page.nextCursor };
}

export const getMonitor = async (orgId: Types.ObjectId, monitorId: string) => monitorJsonOf(await findMonitor(orgId, monitorId));

const fieldNames: Record<string, string> = {
  name: 'name',
  url: 'url',
  method: 'method',
  body: 'body',
  interval_seconds: 'intervalSeconds',
  timeout_ms: 'timeoutMs',
  expected_status: 'expectedStatus',
  keyword: 'keyword',
  keyword_absent: 'keywordAbsent',
  max_redirects: 'maxRedirects',
  failure_threshold: 'failureThreshold',
  recovery_threshold: 'recoveryThreshold',
  verify_tls: 'verifyTls',
};

export async function updateMonitor(principal: MemberPrincipal, monitorId: string, input: z.infer<typeof updateMonitorBody>, deps: MonitorWriteDeps, ip: string | undefined, now = new Date()) {
  refuseUrl(input.url, deps.outbound);
  const monitor = await findMonitor(principal.orgId, monitorId);
  refuseKeywordRules(input.keyword !== undefined ? input.keyword : monitor.keyword, input.keyword_absent !== undefined ? input.keyword_absent : monitor.keywordAbsent, input.method ?? monitor.method);
  const set: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) if (fieldNames[field]) set[fieldNames[field]] = value;
  if (input.headers) set.headers = sealedHeaders(input.headers, monitor.headers, deps.secrets);
  // any change seals the plain values a monitor stored before sealing still holds
  else if (monitor.headers.some((h) => !('sealed' in h))) set.headers = sealedHeaders(Object.fromEntries(monitor.headers.map((h) => [h.name, FILTERED])), monitor.headers, deps.secrets);
  if (input.paused !== undefined) set.paused = input.paused;
  // A changed target or a resume is probed at once; a paused monitor is not probed at all.
  if (input.url !== undefined || input.method !== undefined || (input.paused === false && monitor.paused)) set.nextProbeAt = now;
  // A shorter interval brings the next probe forward to one new interval after the last; a longer one waits its turn.
  if (input.interval_seconds !== undefined && set.nextProbeAt === undefined) {
    const sooner = new Date((monitor.lastCheckedAt ?? now).getTime() + input.interval_seconds * 1000);
    if (sooner < monitor.nextProbeAt) set.nextProbeAt = sooner;
  }
  // A new target starts over: its own incidents and its own certificate. An outage of the old one is over
  // (left open, a second outage would open a second alert beside it, and nothing would ever resolve the first).
  const newTarget = input.url !== undefined && input.url !== monitor.url;
  const endsTls = newTarget && new URL(input.url!).protocol !== 'https:';
  if (newTarget) Object.assign(set, { state: 'pending', consecutiveFailures: 0, consecutiveSuccesses: 0, openAlertKey: null, tlsValidTo: null });
  // An https target keeps its certificate alert: the next probe resolves it if the certificate differs.
  if (endsTls) set.tlsAlertKey = null;
  const updated = await oneAtATime(monitorCollection, monitor._id, () =>
    UptimeMonitor.findOneAndUpdate({ _id: monitor._id, orgId: principal.orgId }, { $set: set }, { returnDocument: 'after' }).lean<UptimeMonitorDoc>(),
  );
  if (!updated) throw notFound('uptime monitor');
  if (newTarget && monitor.openAlertKey) await resolveAlert(monitor.openAlertKey, now, { reason: 'url changed' });
  if (endsTls && monitor.tlsAlertKey) await resolveAlert(monitor.tlsAlertKey, now, { reason: 'url changed' });
  await auditAs(principal, ip)('uptime_monitor.update', { type: 'uptime_monitor', id: monitor._id }, { fields: Object.keys(input) });
  return monitorJsonOf(updated);
}

export async function deleteMonitor(principal: MemberPrincipal, monitorId: string, ip: string | undefined, now = new Date()): Promise<void> {
  const monitor = await UptimeMonitor.findOneAndDelete({ _id: parseId(monitorId, 'uptime monitor'), orgId: principal.orgId }).lean<UptimeMonitorDoc>();
  if (!monitor) throw notFound('uptime monitor');
  await UptimeCheck.deleteMany({ monitorId: monitor._id });
  for (const key of [monitor.openAlertKey, monitor.tlsAlertKey]) if (key) await resolveAlert(key, now, { reason: 'monitor deleted' });
  await auditAs(principal, ip)('uptime_monitor.delete', { type: 'uptime_monitor', id: monitor._id }, { name: monitor.name });
}

export async function listProbeResults(orgId: Types.ObjectId, monitorId: string, options: { limit: number; cursor?: string | undefined }) {
  const monitor = await findMonitor(orgId, monitorId);
  const page = await paginate(UptimeCheck, { monitorId: monitor._id }, { sortField: 'checkedAt', direction: -1, ...options });
  return { data: (page.items as UptimeCheckDoc[]).map(probeResultJsonOf), next_cursor: page.nextCursor };
}

// ---------------------------------------------------------------------------------------------------
// Probing

/** Whether a status code is one of the expected codes or ranges ("200-299", "2xx", 301). */
function statusExpected(status: number, expected: (number | string)[]): boolean {
  return expected.some((entry) => {
    if (typeof entry === 'number') return status === entry;
    if (/^\dxx$/.test(entry)) return Math.floor(status / 100) === Number(entry[0]);
    const [low, high = low] = entry.split('-').map(Number) as [number, number?];
    return status >= low && status <= high;
  });
}

export interface ProbeOutcome {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number | null;
  error: string | null;
  tlsDaysLeft: number | null;
  tlsValidTo: Date | null;
}

export interface ProbeDeps {
  outbound: Outbound;
  /** Opens the sealed header values, used only for the request. */
  secrets: SecretBox;
}

/** One probe: the request through the outbound guard, then the status and keyword rules. */
export async function probe(monitor: UptimeMonitorDoc, deps: ProbeDeps): Promise<ProbeOutcome> {
  let response;
  try {
    response = await deps.outbound.request({
      url: monitor.url,
      method: monitor.method,
      headers: { 'user-agent': 'Sluice-Uptime/1', ...openHeaders(monitor.headers, deps.secrets) },
      ...(monitor.body != null && { body: monitor.body }),
      timeoutMs: monitor.timeoutMs,
      maxRedirects: monitor.maxRedirects,
      verifyTls: monitor.verifyTls,
      maxBodyBytes: BODY_READ_BYTES,
    });
  } catch (error) {
    return { ok: false, statusCode: null, latencyMs: null, error: (error as Error).message, tlsDaysLeft: null, tlsValidTo: null };
  }
  const expected = monitor.expectedStatus as (number | string)[];
  const tls = { tlsDaysLeft: response.tlsDaysLeft, tlsValidTo: response.tlsValidTo };
  const failed = (error: string) => ({ ok: false, statusCode: response.status, latencyMs: response.latencyMs, error, ...tls });
  if (!statusExpected(response.status, expected)) return failed(`status ${response.status} is not one of ${expected.join(', ')}`);
  const absent = monitor.keywordAbsent === true ? monitor.keyword : (monitor.keywordAbsent as string | null);
  if (monitor.keyword && monitor.keywordAbsent !== true && !response.body.includes(monitor.keyword)) return failed(`keyword "${monitor.keyword}" not found in the body`);
  if (absent && response.body.includes(absent)) return failed(`"${absent}" found in the body`);
  return { ok: true, statusCode: response.status, latencyMs: response.latencyMs, error: null, ...tls };
}

/** Monitors whose probe is due, each with the due time that names its turn (for a job id). */
export async function dueMonitors(now = new Date()): Promise<{ id: string; due: number }[]> {
  const due = await UptimeMonitor.find({ paused: false, nextProbeAt: { $lte: now } }, { nextProbeAt: 1 }).lean<UptimeMonitorDoc[]>();
  return due.map((monitor) => ({ id: monitor._id.toHexString(), due: monitor.nextProbeAt.getTime() }));
}

/**
 * Probes a monitor whose turn is `due` and moves its state: `failure_threshold` failures in a row
 * make it `down` (one alert for the incident), `recovery_threshold` successes make a down monitor `up`
 * (resolving it); the first success makes a pending monitor `up`. A certificate expiring within
 * `tlsWarnDays` raises one alert per certificate. The turn is claimed by moving `nextProbeAt` on
 * from the value it was due at, so a turn is probed once however many workers pick it up.
 */
export async function probeMonitor(monitorId: string, due: number, deps: ProbeDeps & { tlsWarnDays: number }, now = () => new Date()): Promise<ProbeOutcome | undefined> {
  const claimed = await UptimeMonitor.findById(parseId(monitorId, 'uptime monitor')).lean<UptimeMonitorDoc>();
  if (!claimed || claimed.paused || claimed.nextProbeAt.getTime() !== due) return undefined;
  // one at a time against FerretDB, whose conditional update is not atomic (see oneAtATime)
  const turn = await oneAtATime(monitorCollection, claimed._id, () =>
    UptimeMonitor.updateOne({ _id: claimed._id, nextProbeAt: claimed.nextProbeAt }, { $set: { nextProbeAt: new Date(now().getTime() + claimed.intervalSeconds * 1000) } }),
  );
  if (turn.modifiedCount === 0) return undefined;
  const outcome = await probe(claimed, deps);
  const at = now();
  const checkId = (await UptimeCheck.create({ orgId: claimed.orgId, monitorId: claimed._id, checkedAt: at, ...outcome }))._id.toHexString();

  const failures = outcome.ok ? 0 : claimed.consecutiveFailures + 1;
  const successes = outcome.ok ? claimed.consecutiveSuccesses + 1 : 0;
  const set: Record<string, unknown> = { consecutiveFailures: failures, consecutiveSuccesses: successes, lastCheckedAt: at, lastError: outcome.error, tlsValidTo: outcome.tlsValidTo ?? claimed.tlsValidTo ?? null };
  /** Alert changes, made once the result is written: none for a monitor changed or deleted while it was probed. */
  const alerts: (() => Promise<unknown>)[] = [];
  const subject = { type: 'uptime_monitor', id: claimed._id.toHexString() };
  const { openAlertKey, tlsAlertKey } = claimed;
  if (!outcome.ok && claimed.state !== 'down') {
    if (failures >= claimed.failureThreshold) {
      const key = `uptime:${claimed._id.toHexString()}:down:${checkId}`;
      Object.assign(set, { state: 'down', openAlertKey: key });
      const details = { url: claimed.url, error: outcome.error, status_code: outcome.statusCode, failures };
      alerts.push(() => openAlert({ key, orgId: claimed.orgId, projectId: claimed.projectId, kind: 'uptime.down', subject, title: `${claimed.name} is down: ${outcome.error}`, details, at }));
    } else {
      set.nextProbeAt = new Date(at.getTime() + Math.min(CONFIRM_AFTER_MS, claimed.intervalSeconds * 1000));
    }
  } else if (outcome.ok && claimed.state !== 'up' && (claimed.state === 'pending' || successes >= claimed.recoveryThreshold)) {
    Object.assign(set, { state: 'up', openAlertKey: null });
    if (openAlertKey) alerts.push(() => resolveAlert(openAlertKey, at, { recovered_at: at.toISOString(), status_code: outcome.statusCode }));
  }
  const { tlsValidTo: validTo, tlsDaysLeft: daysLeft } = outcome;
  if (validTo && daysLeft !== null) {
    const key = `uptime:${claimed._id.toHexString()}:tls:${validTo.getTime()}`;
    if (daysLeft <= deps.tlsWarnDays) {
      // replaced by another certificate that expires soon too: the old one's alert is over, this one gets its own
      if (tlsAlertKey && tlsAlertKey !== key) alerts.push(() => resolveAlert(tlsAlertKey, at, { replaced_until: validTo.toISOString() }));
      set.tlsAlertKey = key;
      const title = daysLeft < 0 ? `${claimed.name}: the TLS certificate has expired` : `${claimed.name}: the TLS certificate expires in ${daysLeft} days`;
      const details = { url: claimed.url, expires_at: validTo.toISOString(), days_left: daysLeft, warn_days: deps.tlsWarnDays };
      alerts.push(() => openAlert({ key, orgId: claimed.orgId, projectId: claimed.projectId, kind: 'uptime.tls_expiring', subject, title, details, at }));
    } else if (tlsAlertKey) {
      // renewed: the old certificate's alert is over
      set.tlsAlertKey = null;
      alerts.push(() => resolveAlert(tlsAlertKey, at, { renewed_until: validTo.toISOString() }));
    }
  }
  // written only while the monitor still probes what was probed: a URL changed, a pause or a delete meanwhile wins
  const written = await oneAtATime(monitorCollection, claimed._id, () => UptimeMonitor.updateOne({ _id: claimed._id, url: claimed.url, paused: false }, { $set: set }));
  if (written.matchedCount === 0) {
    if (!(await UptimeMonitor.exists({ _id: claimed._id }))) await UptimeCheck.deleteOne({ _id: checkId });
    return outcome;
  }
  for (const change of alerts) await change();
  return outcome;
}

/** How many of a monitor's probes in a period there were, and how many succeeded. */
export async function uptimeOver(monitorId: Types.ObjectId, from: Date, to: Date): Promise<{ probes: number; ok: number }> {
  const checks = await UptimeCheck.find({ monitorId, checkedAt: { $gte: from, $lt: to } }, { ok: 1 }).lean();
  return { probes: checks.length, ok: checks.filter((c) => c.ok).length };
}
