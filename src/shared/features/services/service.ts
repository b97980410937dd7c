import type { z } from 'zod';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { AppError } from '../../errors.js';
import { inWindowByWholeHour, rounded, stepMsOf, type ViewScope } from '../../views.js';
import { cycles, entryPoints, fanLeaders, leaves, longestChain, singlePointsOfFailure, type Graph } from './graph.js';
import { SpanRollup, SpanRollupHourly, type EdgeKind, type NodeType } from './model.js';
import type { dependenciesJson, serviceJson, serviceMapJson, structureJson, trafficJson, trafficQuery } from './schemas.js';
import { HOUR_MS, MINUTE_MS } from '../../telemetry/time-buckets.js';


interface RollupDoc {
  projectId: { toHexString(): string };
  kind: 'service' | 'edge';
  at: Date;
  service: string;
  callerType?: NodeType;
  callee?: string;
  calleeType?: NodeType;
  edgeKind?: EdgeKind;
  count: number;
  failed: number;
  totalMs: number;
  latency?: Buckets;
}

/** What the views read of a rollup (not its totalMs), and of a service's (not an edge's fields). */
const SERVICE_FIELDS = { projectId: 1, kind: 1, at: 1, service: 1, count: 1, failed: 1, latency: 1 };
const ROLLUP_FIELDS = { ...SERVICE_FIELDS, callerType: 1, callee: 1, calleeType: 1, edgeKind: 1 };

/**
 * The window's span rollups (of one kind, when given): whole hours from the hourly rollups, the rest by
 * minute. `wholeHourUsable` says which whole hours may be read as one (see inWindowByWholeHour).
 */
const spanRollupsIn = (scope: ViewScope, from: Date, to: Date, kind?: RollupDoc['kind'], wholeHourUsable?: (hour: number) => boolean) =>
  inWindowByWholeHour<RollupDoc>(SpanRollup.collection, SpanRollupHourly.collection, scope, from, to, kind ? { kind } : {}, {
    projection: kind === 'service' ? SERVICE_FIELDS : ROLLUP_FIELDS,
    ...(wholeHourUsable && { wholeHourUsable }),
  });

interface Totals {
  count: number;
  failed: number;
  latency: Buckets;
  projects: Set<string>;
}

function total(docs: RollupDoc[], keyOf: (doc: RollupDoc) => string): Map<string, Totals> {
  const totals = new Map<string, Totals>();
  for (const doc of docs) {
    const key = keyOf(doc);
    let sum = totals.get(key);
    if (!sum) {
      sum = { count: 0, failed: 0, latency: {}, projects: new Set() };
      totals.set(key, sum);
    }
    sum.count += doc.count;
    sum.failed += doc.failed;
    addBuckets(sum.latency, doc.latency);
    sum.projects.add(doc.projectId.toHexString());
  }
  // a call counted to a host and then moved to its service leaves the host's minute at zero
  for (const [key, sum] of totals) if (sum.count <= 0) totals.delete(key);
  return totals;
}

const rate = (part: number, whole: number) => (whole > 0 ? part / whole : 0);

/**
 * Health rules, checked on the window and, for the baseline rules, against the previous window of the
 * same length. No rule looks at a service that served fewer than MIN_REQUESTS requests in the window,
 * and a baseline rule needs MIN_REQUESTS in the previous window too.
 */
export const HEALTH_RULES = {
  MIN_REQUESTS: 20,
  ERROR_RATE_DEGRADED: 0.05,
  ERROR_RATE_CRITICAL: 0.25,
  P95_DEGRADED_MS: 1000,
  P95_CRITICAL_MS: 5000,
  /** Degraded when the error rate is both this many times the baseline and ERROR_RATE_BASELINE_MARGIN above it. */
  ERROR_RATE_BASELINE_FACTOR: 2,
  ERROR_RATE_BASELINE_MARGIN: 0.02,
  /** Degraded when p95 is this many times the baseline p95. */
  P95_BASELINE_FACTOR: 2,
} as const;

type Health = z.infer<typeof serviceJson>['health'];
type Reason = Health['reasons'][number];

function healthOf(now: Totals, before: Totals | undefined): Health {
  const r = HEALTH_RULES;
  const reasons: Reason[] = [];
  if (now.count >= r.MIN_REQUESTS) {
    const errorRate = rate(now.failed, now.count);
    const p95 = percentile(now.latency, 95) ?? 0;
    if (errorRate >= r.ERROR_RATE_DEGRADED) {
      const critical = errorRate >= r.ERROR_RATE_CRITICAL;
      reasons.push({ rule: 'error_rate_threshold', metric: 'error_rate', observed: errorRate, threshold: critical ? r.ERROR_RATE_CRITICAL : r.ERROR_RATE_DEGRADED, baseline: null, status: critical ? 'critical' : 'degraded' });
    }
    if (p95 >= r.P95_DEGRADED_MS) {
      const critical = p95 >= r.P95_CRITICAL_MS;
      reasons.push({ rule: 'p95_threshold', metric: 'p95_ms', observed: p95, threshold: critical ? r.P95_CRITICAL_MS : r.P95_DEGRADED_MS, baseline: null, status: critical ? 'critical' : 'degraded' });
    }
    if (before && before.count >= r.MIN_REQUESTS) {
      const baseRate = rate(before.failed, before.count);
      const rateLimit = Math.max(baseRate * r.ERROR_RATE_BASELINE_FACTOR, baseRate + r.ERROR_RATE_BASELINE_MARGIN);
      if (errorRate > rateLimit) reasons.push({ rule: 'error_rate_baseline', metric: 'error_rate', observed: errorRate, threshold: rateLimit, baseline: baseRate, status: 'degraded' });
      const baseP95 = percentile(before.latency, 95);
      if (baseP95 !== null && baseP95 > 0 && p95 > baseP95 * r.P95_BASELINE_FACTOR) {
        reasons.push({ rule: 'p95_baseline', metric: 'p95_ms', observed: p95, threshold: baseP95 * r.P95_BASELINE_FACTOR, baseline: baseP95, status: 'degraded' });
      }
    }
  }
  const status = reasons.some((reason) => reason.status === 'critical') ? 'critical' : reasons.length > 0 ? 'degraded' : 'healthy';
  return { status, reasons: reasons.map((reason) => ({ ...reason, observed: rounded(reason.observed, 4)!, threshold: rounded(reason.threshold, 4)!, baseline: rounded(reason.baseline, 4) })) };
}

const window = (scope: ViewScope) => ({ from: scope.from.toISOString(), to: scope.to.toISOString() });

/** Every service that served requests in the window, busiest first, with its health. */
export async function listServices(scope: ViewScope): Promise<{ from: string; to: string; data: z.infer<typeof serviceJson>[] }> {
  const length = scope.to.getTime() - scope.from.getTime();
  const [current, previous] = await Promise.all([
    spanRollupsIn(scope, scope.from, scope.to, 'service'),
    spanRollupsIn(scope, new Date(scope.from.getTime() - length), scope.from, 'service'),
  ]);
  const byService = (docs: RollupDoc[]) => total(docs.filter((doc) => doc.kind === 'service'), (doc) => doc.service);
  const now = byService(current);
  const before = byService(previous);
  const minutes = Math.max(1, length / MINUTE_MS);
  const data = [...now].map(([name, sum]) => ({
    name,
    project_ids: [...sum.projects].sort(),
    requests: sum.count,
    errors: sum.failed,
    error_rate: rounded(rate(sum.failed, sum.count), 4)!,
    p50_ms: rounded(percentile(sum.latency, 50)),
    p95_ms: rounded(percentile(sum.latency, 95)),
    p99_ms: rounded(percentile(sum.latency, 99)),
    throughput_per_min: rounded(sum.count / minutes, 3)!,
    health: healthOf(sum, before.get(name)),
  }));
  return { ...window(scope), data: data.sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name)) };
}

interface Edge {
  caller: string;
  callerType: NodeType;
  callee: string;
  calleeType: NodeType;
  kind: EdgeKind;
  totals: Totals;
}

const nodeId = (type: NodeType, name: string) => `${type}:${name}`;

async function edgesIn(scope: ViewScope): Promise<{ edges: Edge[]; services: string[] }> {
  const docs = await spanRollupsIn(scope, scope.from, scope.to);
  const edgeDocs = docs.filter((doc) => doc.kind === 'edge');
  const key = (doc: RollupDoc) => JSON.stringify([doc.service, doc.callerType ?? 'service', doc.callee, doc.calleeType, doc.edgeKind]);
  const edges = [...total(edgeDocs, key)].map(([k, totals]) => {
    const [caller, callerType, callee, calleeType, kind] = JSON.parse(k) as [string, NodeType, string, NodeType, EdgeKind];
    return { caller, callerType, callee, calleeType, kind, totals };
  });
  const services = [...new Set(docs.filter((doc) => doc.kind === 'service').map((doc) => doc.service))];
  return { edges: edges.sort((a, b) => b.totals.count - a.totals.count || a.caller.localeCompare(b.caller) || a.callee.localeCompare(b.callee)), services };
}

const edgeStatsOf = (totals: Totals) => ({
  calls: totals.count,
  errors: totals.failed,
  error_rate: rounded(rate(totals.failed, totals.count), 4)!,
  p95_ms: rounded(percentile(totals.latency, 95)),
});

/** The observed topology: services, databases, queues and external hosts, and the calls between them. */
export async function serviceMap(scope: ViewScope): Promise<z.infer<typeof serviceMapJson>> {
  const { edges, services } = await edgesIn(scope);
  const nodes = new Map<string, { id: string; name: string; type: NodeType }>();
  const add = (type: NodeType, name: string) => nodes.set(nodeId(type, name), { id: nodeId(type, name), name, type });
  for (const service of services) add('service', service);
  for (const edge of edges) {
    add(edge.callerType, edge.caller);
    add(edge.calleeType, edge.callee);
  }
  return {
    ...window(scope),
    nodes: [...nodes.values()].sort((a, b) => a.id.localeCompare(b.id)),
    edges: edges.map((edge) => ({ source: nodeId(edge.callerType, edge.caller), target: nodeId(edge.calleeType, edge.callee), kind: edge.kind, ...edgeStatsOf(edge.totals) })),
  };
}

/** The map's edges as a list of caller → callee dependencies, busiest first. */
export async function listDependencies(scope: ViewScope): Promise<z.infer<typeof dependenciesJson>> {
  const { edges } = await edgesIn(scope);
  return {
    ...window(scope),
    data: edges.map((edge) => ({ caller: edge.caller, caller_type: edge.callerType, callee: edge.callee, callee_type: edge.calleeType, kind: edge.kind, ...edgeStatsOf(edge.totals) })),
  };
}

/** Facts computed from the map's graph (graph.ts says how each is found). */
export async function serviceStructure(scope: ViewScope): Promise<z.infer<typeof structureJson>> {
  const map = await serviceMap(scope);
  const graph: Graph = { nodes: map.nodes.map((node) => node.id), edges: map.edges.map((edge) => [edge.source, edge.target]) };
  return {
    ...window(scope),
    entry_points: entryPoints(graph),
    leaves: leaves(graph),
    cycles: cycles(graph),
    single_points_of_failure: singlePointsOfFailure(graph),
    fan_in: fanLeaders(graph, 'in'),
    fan_out: fanLeaders(graph, 'out'),
    longest_chain: longestChain(graph),
  };
}

/** Points a series view answers at most: the window divided by the step. */
const MAX_POINTS = 5_000;

/**
 * Requests and errors over time, one series per project (per service of the project when one
 * project is asked for), every step of the window present, zeros included.
 */
export async function traffic(scope: ViewScope, query: z.output<typeof trafficQuery>): Promise<z.infer<typeof trafficJson>> {
  const stepMs = stepMsOf(scope, query.step);
  const steps = Math.ceil((scope.to.getTime() - scope.from.getTime()) / stepMs);
  if (steps > MAX_POINTS) throw new AppError('validation_failed', `the window holds more than ${MAX_POINTS} steps of this size`, { details: [{ path: 'query.step', message: 'too small for the window' }] });
  const byService = scope.projectIds?.length === 1;
  // an hour is read as one when all its minutes fall in one step
  const stepOf = (ms: number) => Math.floor((ms - scope.from.getTime()) / stepMs);
  const oneStep = (hour: number) => stepOf(hour * HOUR_MS) === stepOf((hour + 1) * HOUR_MS - MINUTE_MS);
  const docs = (await spanRollupsIn(scope, scope.from, scope.to, 'service', oneStep)).filter((doc) => doc.kind === 'service');
  const series = new Map<string, { project_id: string; service?: string; points: { requests: number; errors: number }[] }>();
  for (const doc of docs) {
    const projectId = doc.projectId.toHexString();
    const key = byService ? JSON.stringify([projectId, doc.service]) : projectId;
    let entry = series.get(key);
    if (!entry) {
      entry = { project_id: projectId, ...(byService && { service: doc.service }), points: Array.from({ length: steps }, () => ({ requests: 0, errors: 0 })) };
      series.set(key, entry);
    }
    const point = entry.points[Math.floor((doc.at.getTime() - scope.from.getTime()) / stepMs)];
    if (!point) continue;
    point.requests += doc.count;
    point.errors += doc.failed;
  }
  const t = (index: number) => new Date(scope.from.getTime() + index * stepMs).toISOString();
  const total = (entry: { points: { requests: number }[] }) => entry.points.reduce((sum, point) => sum + point.requests, 0);
  return {
    ...window(scope),
    step: stepMs / 1000,
    series: [...series.values()]
      .sort((a, b) => total(b) - total(a) || a.project_id.localeCompare(b.project_id) || (a.service ?? '').localeCompare(b.service ?? ''))
      .map((entry) => ({ ...entry, requests: total(entry), points: entry.points.map((point, index) => ({ t: t(index), ...point })) })),
  };
}
