/**
 * The evidence an investigation shows the model, gathered by our own code from the read views
 * (issues, traces, deployments, log surges, anomalies, services, alerts). Each gatherer answers plain
 * JSON, capped in size, and takes `now` from its caller.
 */
import { Types } from 'mongoose';
import type { z } from 'zod';
import { notFound } from '../../errors.js';
import type { ViewScope } from '../../views.js';
import { Alert, type AlertDoc } from '../alerts/model.js';
import { alertsQuery } from '../alerts/schemas.js';
import { listAlerts } from '../alerts/service.js';
import { Anomaly } from '../anomalies/model.js';
import { anomaliesQuery } from '../anomalies/schemas.js';
import { listAnomalies } from '../anomalies/service.js';
import { listDeploymentsQuery } from '../deployments/schemas.js';
import { getDeployment, listDeployments } from '../deployments/service.js';
import { listIssuesQuery, type eventJson } from '../issues/schemas.js';
import { getIssue, listIssueEvents, listIssues } from '../issues/service.js';
import { logSurgesQuery } from '../logs/schemas.js';
import { logSurges } from '../logs/service.js';
import { listDependencies, listServices, serviceStructure } from '../services/service.js';
import { getTrace } from '../traces/service.js';

export type Evidence = Record<string, unknown>;

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Lists in the evidence are cut to this many items: the model reads the most relevant first. */
const MAX_ITEMS = 20;
const MAX_TRACES = 3;
const MAX_FRAMES = 30;

const iso = (date: Date) => date.toISOString();
const scopeOf = (orgId: Types.ObjectId, projectId: Types.ObjectId | null, from: Date, to: Date): ViewScope => ({
  orgId,
  projectIds: projectId ? [projectId] : undefined,
  from,
  to,
});
const projectParam = (projectId: Types.ObjectId | null) => (projectId ? { project: [projectId.toHexString()] } : {});

/** An event's exceptions with the frames a reader needs to see where it broke (crashing frame last). */
function framesOf(event: z.infer<typeof eventJson>) {
  return {
    event_id: event.event_id,
    timestamp: event.timestamp,
    message: event.message,
    environment: event.environment,
    release: event.release,
    transaction: event.transaction,
    tags: event.tags,
    exception: event.exception.map((exception) => ({
      type: exception.type,
      value: exception.value,
      frames: exception.frames.slice(-MAX_FRAMES).map((frame) => ({
        filename: frame.filename,
        function: frame.function,
        module: frame.module,
        lineno: frame.lineno,
        colno: frame.colno,
        in_app: frame.in_app,
        context_line: frame.context_line,
      })),
    })),
  };
}

/** Traces the issue's recent occurrences happened in, summarised with their failing spans. */
async function relatedTraces(orgId: Types.ObjectId, events: z.infer<typeof eventJson>[]) {
  const traceIds = [
    ...new Set(events.map((event) => (event.contexts.trace as { trace_id?: unknown } | undefined)?.trace_id).filter((id): id is string => typeof id === 'string')),
  ].slice(0, MAX_TRACES);
  const traces = await Promise.all(
    traceIds.map(async (traceId) => {
      const trace = await getTrace(orgId, traceId).catch(() => undefined);
      if (!trace) return undefined;
      return {
        trace_id: trace.trace_id,
        start: trace.start,
        duration_ms: trace.duration_ms,
        span_count: trace.span_count,
        error_count: trace.error_count,
        services: trace.services,
        failing_spans: trace.spans
          .filter((span) => span.status === 'error')
          .slice(0, MAX_ITEMS)
          .map((span) => ({ service: span.service, name: span.name, duration_ms: span.duration_ms, status_message: span.status_message })),
      };
    }),
  );
  return traces.filter((trace) => trace !== undefined);
}

/** Services and their health, and the dependency edges between them, over a window. */
async function topologyFacts(scope: ViewScope) {
  const [services, dependencies] = await Promise.all([listServices(scope), listDependencies(scope)]);
  return {
    from: services.from,
    to: services.to,
    services: services.data.slice(0, MAX_ITEMS).map((service) => ({
      name: service.name,
      requests: service.requests,
      errors: service.errors,
      error_rate: service.error_rate,
      p95_ms: service.p95_ms,
      throughput_per_min: service.throughput_per_min,
      health: service.health.status,
      health_reasons: service.health.reasons,
    })),
    edges: dependencies.data.slice(0, MAX_ITEMS * 2).map((edge) => ({
      caller: edge.caller,
      callee: edge.callee,
      callee_type: edge.callee_type,
      kind: edge.kind,
      calls: edge.calls,
      error_rate: edge.error_rate,
      p95_ms: edge.p95_ms,
    })),
  };
}

async function anomaliesIn(scope: ViewScope, status?: 'open') {
  const query = anomaliesQuery.parse({ limit: MAX_ITEMS, ...(status && { status }) });
  return (await listAnomalies(scope, query)).data;
}

async function deploymentsBetween(orgId: Types.ObjectId, projectId: Types.ObjectId | null, from: Date, to: Date) {
  const query = listDeploymentsQuery.parse({ ...projectParam(projectId), from: iso(from), to: iso(to), limit: MAX_ITEMS });
  return (await listDeployments(orgId, query)).data.map(({ id, version, environment, commit_sha, deployed_at, verdict }) => ({ id, version, environment, commit_sha, deployed_at, verdict }));
}

async function logSurgesIn(scope: ViewScope) {
  const surges = await logSurges(scope, logSurgesQuery.parse({}));
  return { from: surges.from, to: surges.to, surges: surges.data.slice(0, MAX_ITEMS) };
}

/**
 * An issue's statistics and the frames of its latest occurrence, the traces its recent occurrences
 * ran in, deployments in the day before its first event, log surges and anomalies around that event,
 * and the project's services and edges.
 */
export async function issueEvidence(orgId: Types.ObjectId, issueId: string, now: Date): Promise<Evidence> {
  const { latest_event: latest, ...issue } = await getIssue(orgId, issueId);
  const projectId = new Types.ObjectId(issue.project_id);
  const firstSeen = new Date(issue.first_seen);
  const recent = await listIssueEvents(orgId, issueId, { limit: 20 });
  const [traces, deployments, surges, anomalies, topology] = await Promise.all([
    relatedTraces(orgId, recent.data),
    deploymentsBetween(orgId, projectId, new Date(firstSeen.getTime() - DAY), new Date(firstSeen.getTime() + HOUR)),
    logSurgesIn(scopeOf(orgId, projectId, new Date(firstSeen.getTime() - 30 * MINUTE), new Date(firstSeen.getTime() + 30 * MINUTE))),
    anomaliesIn(scopeOf(orgId, projectId, new Date(firstSeen.getTime() - HOUR), now)),
    topologyFacts(scopeOf(orgId, projectId, new Date(now.getTime() - DAY), now)),
  ]);
  return {
    issue,
    latest_event: latest ? framesOf(latest) : null,
    related_traces: traces,
    deployments_before_first_event: deployments,
    log_surges_around_first_event: surges,
    anomalies: anomalies,
    topology,
  };
}

async function findAlert(orgId: Types.ObjectId, alertId: string): Promise<AlertDoc> {
  const alert = Types.ObjectId.isValid(alertId) && /^[0-9a-f]{24}$/i.test(alertId) ? await Alert.findOne({ _id: new Types.ObjectId(alertId), orgId }).lean<AlertDoc>() : null;
  if (!alert) throw notFound('alert');
  return alert;
}

/** What an alert is about: the issue, deployment or anomaly behind it, when it is one of those. */
async function subjectFacts(orgId: Types.ObjectId, alert: AlertDoc, now: Date): Promise<unknown> {
  const missing = { type: alert.subjectType, id: alert.subjectId, found: false };
  switch (alert.subjectType) {
    case 'issue':
      return issueEvidence(orgId, alert.subjectId, now).catch(() => missing);
    case 'deployment':
      return getDeployment(orgId, alert.subjectId).catch(() => missing);
    case 'anomaly': {
      if (!Types.ObjectId.isValid(alert.subjectId)) return missing;
      const anomaly = await Anomaly.findOne({ _id: new Types.ObjectId(alert.subjectId), orgId }).lean<Record<string, unknown>>();
      if (!anomaly) return missing;
      const { service, metric, observed, baseline, score, peakScore, startedAt, endedAt, reason } = anomaly;
      return { service, metric, observed, baseline, score, peak_score: peakScore, started_at: startedAt, ended_at: endedAt ?? null, reason };
    }
    default:
      return { type: alert.subjectType, id: alert.subjectId };
  }
}

/** An alert with its figures, the facts of its subject, and what happened in its project around its opening. */
export async function alertEvidence(orgId: Types.ObjectId, alertId: string, now: Date): Promise<{ evidence: Evidence; projectId: Types.ObjectId | null }> {
  const alert = await findAlert(orgId, alertId);
  const opened = alert.openedAt;
  const projectId = alert.projectId ?? null;
  const [subject, deployments, surges, anomalies] = await Promise.all([
    subjectFacts(orgId, alert, now),
    deploymentsBetween(orgId, projectId, new Date(opened.getTime() - DAY), opened),
    logSurgesIn(scopeOf(orgId, projectId, new Date(opened.getTime() - 30 * MINUTE), new Date(Math.min(now.getTime(), opened.getTime() + 15 * MINUTE)))),
    anomaliesIn(scopeOf(orgId, projectId, new Date(opened.getTime() - HOUR), now)),
  ]);
  return {
    projectId,
    evidence: {
      alert: {
        id: alert._id.toHexString(),
        kind: alert.kind,
        status: alert.status,
        title: alert.title,
        details: alert.details ?? {},
        subject: { type: alert.subjectType, id: alert.subjectId },
        opened_at: iso(opened),
        resolved_at: alert.resolvedAt ? iso(alert.resolvedAt) : null,
      },
      subject_facts: subject,
      deployments_before_opening: deployments,
      log_surges_around_opening: surges,
      anomalies,
    },
  };
}

/** A project's current state: services health, open anomalies, recent deployments, alerts and unresolved issues. */
export async function projectEvidence(orgId: Types.ObjectId, projectId: Types.ObjectId, now: Date): Promise<Evidence> {
  const dayAgo = new Date(now.getTime() - DAY);
  const [topology, anomalies, deployments, alerts, issues] = await Promise.all([
    topologyFacts(scopeOf(orgId, projectId, new Date(now.getTime() - HOUR), now)),
    anomaliesIn(scopeOf(orgId, projectId, new Date(now.getTime() - 7 * DAY), now), 'open'),
    deploymentsBetween(orgId, projectId, dayAgo, now),
    listAlerts(orgId, alertsQuery.parse({ project: [projectId.toHexString()], from: iso(dayAgo), limit: MAX_ITEMS })),
    listIssues(scopeOf(orgId, projectId, dayAgo, now), listIssuesQuery.parse({ status: 'unresolved', limit: 10 })),
  ]);
  return {
    window: { from: iso(dayAgo), to: iso(now) },
    services_health: topology,
    open_anomalies: anomalies,
    recent_deployments: deployments,
    recent_alerts: alerts.data.map(({ id, kind, status, title, details, opened_at, resolved_at }) => ({ id, kind, status, title, details, opened_at, resolved_at })),
    unresolved_issues: issues.data.map(({ id, title, culprit, level, count, user_count, first_seen, last_seen }) => ({ id, title, culprit, level, count, user_count, first_seen, last_seen })),
  };
}

/** The topology facts a question about it is answered from: services, edges and the graph's structure. */
export async function topologyEvidence(orgId: Types.ObjectId, projectId: Types.ObjectId, now: Date): Promise<Evidence> {
  const scope = scopeOf(orgId, projectId, new Date(now.getTime() - DAY), now);
  const [topology, structure] = await Promise.all([topologyFacts(scope), serviceStructure(scope)]);
  const { from: _from, to: _to, ...shape } = structure;
  return { ...topology, structure: shape };
}
