import type { Types } from 'mongoose';
import type { z } from 'zod';
import { escapeHtml } from '../../html.js';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { inWindowByHour, rounded } from '../../views.js';
import { Organization } from '../accounts/model.js';
import { Alert } from '../alerts/model.js';
import { CronCheck, CronPing } from '../cron/model.js';
import { Deployment, type DeploymentDoc } from '../deployments/model.js';
import { EndpointRollup } from '../endpoints/model.js';
import { ErrorEvent, Issue } from '../issues/model.js';
import { Project } from '../projects/model.js';
import { UptimeMonitor } from '../uptime/model.js';
import { uptimeOver } from '../uptime/service.js';
import type { digestProjectJson, previewJson } from './schemas.js';

type DigestProject = z.infer<typeof digestProjectJson>;
export type Digest = z.infer<typeof previewJson>;

/** Rows per list in a digest: enough to act on, short enough to read. */
const LIST_LENGTH = 5;
/** Requests an endpoint needs in the period before its p95 is worth listing. */
const MIN_ENDPOINT_REQUESTS = 5;

const byCount = <K>(values: K[]) => {
  const counts = new Map<K, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
};

async function errorEventsByIssue(orgId: Types.ObjectId, from: Date, to: Date) {
  const rows = await ErrorEvent.aggregate<{ _id: { issue: Types.ObjectId; project: Types.ObjectId }; events: number }>([
    { $match: { orgId, timestamp: { $gte: from, $lt: to } } },
    { $group: { _id: { issue: '$issueId', project: '$projectId' }, events: { $sum: 1 } } },
  ]);
  return rows;
}

async function slowestEndpoints(orgId: Types.ObjectId, projectId: Types.ObjectId, from: Date, to: Date): Promise<DigestProject['slowest_endpoints']> {
  const docs = await inWindowByHour<{ service: string; method: string | null; route: string; count: number; latency: Buckets }>(EndpointRollup.collection, { orgId, projectIds: [projectId], from, to }, from, to);
  const sums = new Map<string, { service: string; method: string | null; route: string; requests: number; latency: Buckets }>();
  for (const doc of docs) {
    const key = JSON.stringify([doc.service, doc.method, doc.route]);
    const sum = sums.get(key) ?? { service: doc.service, method: doc.method, route: doc.route, requests: 0, latency: {} };
    sum.requests += doc.count;
    addBuckets(sum.latency, doc.latency);
    sums.set(key, sum);
  }
  return [...sums.values()]
    .filter((sum) => sum.requests >= MIN_ENDPOINT_REQUESTS)
    .map((sum) => ({ service: sum.service, method: sum.method, route: sum.route, requests: sum.requests, p95_ms: rounded(percentile(sum.latency, 95)) }))
    .sort((a, b) => (b.p95_ms ?? 0) - (a.p95_ms ?? 0))
    .slice(0, LIST_LENGTH);
}

/**
 * What happened in an organisation's projects in [from, to), against the period before it,
 * [previousFrom, from) (by default of equal length; the schedule's previous period when they differ).
 */
export async function gatherDigest(orgId: Types.ObjectId, from: Date, to: Date, previousFrom = new Date(2 * from.getTime() - to.getTime())): Promise<Digest['data']> {
  const [org, projects, current, previous, issues, monitors, checks, downAlerts] = await Promise.all([
    Organization.findById(orgId, { name: 1 }).lean(),
    Project.find({ orgId }, { name: 1 }).sort({ createdAt: 1, _id: 1 }).lean(),
    errorEventsByIssue(orgId, from, to),
    errorEventsByIssue(orgId, previousFrom, from),
    Issue.find({ orgId, $or: [{ firstSeen: { $gte: from, $lt: to } }, { regressedAt: { $gte: from, $lt: to } }] }, { title: 1, projectId: 1, firstSeen: 1, regressedAt: 1 }).lean(),
    // in a fixed order (oldest first), so the mail lists them as its preview did
    UptimeMonitor.find({ orgId }, { name: 1, projectId: 1 }).sort({ createdAt: 1, _id: 1 }).lean(),
    CronCheck.find({ orgId }, { name: 1, projectId: 1 }).sort({ createdAt: 1, _id: 1 }).lean(),
    Alert.find({ orgId, kind: 'uptime.down', openedAt: { $gte: from, $lt: to } }, { subjectId: 1 }).lean(),
  ]);
  const deployments = await Deployment.find({ orgId, deployedAt: { $gte: from, $lt: to } }).sort({ deployedAt: 1, _id: 1 }).lean<DeploymentDoc[]>();
  const cronVerdicts = await CronPing.find({ orgId, receivedAt: { $gte: from, $lt: to }, status: { $in: ['missed', 'fail', 'timeout'] } }, { checkId: 1, status: 1 }).lean();
  const titles = new Map((await Issue.find({ _id: { $in: current.map((row) => row._id.issue) } }, { title: 1 }).lean()).map((issue) => [issue._id.toHexString(), issue.title]));
  const incidents = byCount(downAlerts.map((alert) => alert.subjectId));

  const data: DigestProject[] = [];
  for (const project of projects) {
    const mine = <T extends { projectId: Types.ObjectId }>(rows: T[]) => rows.filter((row) => row.projectId.equals(project._id));
    const events = current.filter((row) => row._id.project.equals(project._id));
    const eventsOf = new Map(events.map((row) => [row._id.issue.toHexString(), row.events]));
    const total = events.reduce((sum, row) => sum + row.events, 0);
    const before = previous.filter((row) => row._id.project.equals(project._id)).reduce((sum, row) => sum + row.events, 0);
    const projectIssues = mine(issues);
    const uptime = await Promise.all(
      mine(monitors).map(async (monitor) => {
        const probes = await uptimeOver(monitor._id, from, to);
        return { monitor_id: monitor._id.toHexString(), name: monitor.name, probes: probes.probes, uptime_percent: probes.probes ? rounded((100 * probes.ok) / probes.probes, 3) : null, incidents: incidents.get(monitor._id.toHexString()) ?? 0 };
      }),
    );
    const cron = mine(checks)
      .map((check) => {
        const verdicts = cronVerdicts.filter((ping) => ping.checkId.equals(check._id));
        const countOf = (status: string) => verdicts.filter((ping) => ping.status === status).length;
        return { check_id: check._id.toHexString(), name: check.name, missed: countOf('missed'), failed: countOf('fail'), timed_out: countOf('timeout') };
      })
      .filter((row) => row.missed + row.failed + row.timed_out > 0);
    data.push({
      project_id: project._id.toHexString(),
      name: project.name,
      events: total,
      previous_events: before,
      change: before > 0 ? rounded(total / before - 1, 3) : null,
      new_issues: projectIssues
        .filter((issue) => issue.firstSeen >= from && issue.firstSeen < to)
        .map((issue) => ({ id: issue._id.toHexString(), title: issue.title, events: eventsOf.get(issue._id.toHexString()) ?? 0 }))
        .sort((a, b) => b.events - a.events || a.id.localeCompare(b.id))
        .slice(0, LIST_LENGTH),
      regressed_issues: projectIssues
        .filter((issue) => issue.regressedAt && issue.regressedAt >= from && issue.regressedAt < to)
        .map((issue) => ({ id: issue._id.toHexString(), title: issue.title, regressed_at: issue.regressedAt!.toISOString() }))
        .sort((a, b) => b.regressed_at.localeCompare(a.regressed_at) || a.id.localeCompare(b.id))
        .slice(0, LIST_LENGTH),
      top_issues: [...events]
        .sort((a, b) => b.events - a.events || a._id.issue.toHexString().localeCompare(b._id.issue.toHexString()))
        .slice(0, LIST_LENGTH)
        .map((row) => ({ id: row._id.issue.toHexString(), title: titles.get(row._id.issue.toHexString()) ?? '(removed)', events: row.events })),
      uptime,
      cron,
      slowest_endpoints: await slowestEndpoints(orgId, project._id, from, to),
      deployments: mine(deployments).map((d) => ({ id: d._id.toHexString(), version: d.version, environment: d.environment, deployed_at: d.deployedAt.toISOString(), verdict: d.verdict ?? null })),
    });
  }
  return { organization: org?.name ?? '', projects: data };
}

/** The calendar day of an instant in a time zone, as YYYY-MM-DD. */
function dayIn(iso: string, timezone: string): string {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date(iso)).map((part) => [part.type, part.value]));
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/**
 * Text and HTML of a digest, from its data alone (the preview and the mail are one rendering). The
 * subject names the day of the send in the schedule's zone: the day its recipients receive it.
 */
export function renderDigest(data: Digest['data'], period: Digest['period'], timezone = 'UTC'): Digest {
  const day = dayIn(period.to, timezone);
  const subject = `Sluice ${period.cadence} digest for ${data.organization || 'your organisation'}: ${day}`;
  const text: string[] = [subject, `Period: ${period.from} to ${period.to}`, ''];
  const html: string[] = [`<h1>${escapeHtml(subject)}</h1>`, `<p>Period: ${escapeHtml(period.from)} to ${escapeHtml(period.to)}</p>`];
  const section = (title: string, lines: string[]) => {
    if (lines.length === 0) return;
    text.push(`  ${title}:`, ...lines.map((line) => `    - ${line}`));
    html.push(`<h3>${escapeHtml(title)}</h3><ul>${lines.map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>`);
  };
  for (const project of data.projects) {
    const change = project.change === null ? '' : ` (${project.change >= 0 ? '+' : ''}${Math.round(project.change * 100)}% on the previous period)`;
    text.push(`${project.name}: ${project.events} error events, ${project.previous_events} in the previous period${change}`);
    html.push(`<h2>${escapeHtml(project.name)}</h2><p>${project.events} error events, ${project.previous_events} in the previous period${escapeHtml(change)}</p>`);
    section('New issues', project.new_issues.map((i) => `${i.title} (${i.events} events)`));
    section('Regressed issues', project.regressed_issues.map((i) => `${i.title} (regressed ${i.regressed_at})`));
    section('Top issues', project.top_issues.map((i) => `${i.title}: ${i.events} events`));
    section('Uptime', project.uptime.map((m) => `${m.name}: ${m.uptime_percent === null ? 'no probes' : `${m.uptime_percent}% of ${m.probes} probes`}, ${m.incidents} incidents`));
    section('Cron checks with problems', project.cron.map((c) => `${c.name}: ${c.missed} missed, ${c.failed} failed, ${c.timed_out} timed out`));
    section('Deployments', project.deployments.map((d) => `${d.version} (${d.environment}) at ${d.deployed_at}${d.verdict ? `: ${d.verdict.replace('_', ' ')}` : ''}`));
    section('Slowest endpoints (p95)', project.slowest_endpoints.map((e) => `${e.method ? `${e.method} ` : ''}${e.route} (${e.service}): ${e.p95_ms} ms over ${e.requests} requests`));
    text.push('');
  }
  if (data.projects.length === 0) {
    text.push('No projects yet.');
    html.push('<p>No projects yet.</p>');
  }
  return { subject, text: `${text.join('\n')}\n`, html: html.join('\n'), data, period };
}
