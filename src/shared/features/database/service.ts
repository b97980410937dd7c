import type { Types } from 'mongoose';
import type { z } from 'zod';
import { offsetPage } from '../../paging.js';
import { addBuckets, percentile, type Buckets } from '../../telemetry/histogram.js';
import { durationIncrement, RollupBatch } from '../../telemetry/rollups.js';
import { inWindowByHour, rounded, type ViewScope } from '../../views.js';
import { QueryRollup } from './model.js';
import type { databaseQuery, queryPatternJson, slowQueryJson } from './schemas.js';
import { MAX_PATTERN, normalizeStatement } from './statements.js';

/** What the query rollups need of a stored span. */
export interface DatabaseSpan {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  traceId: string;
  service: string;
  name: string;
  kind: string;
  status: string;
  category: string;
  startAt: Date;
  durationMs: number;
  db: { system?: string | null; statement?: string | null; operation?: string | null; collection?: string | null; namespace?: string | null } | null;
}

/** A call's pattern: its statement normalised, else its operation and collection, else the span's name. */
function patternOf(span: DatabaseSpan): string {
  if (span.db?.statement) return normalizeStatement(span.db.statement);
  const operation = [span.db?.operation, span.db?.collection ?? span.db?.namespace].filter(Boolean).join(' ');
  return (operation || span.name).toLowerCase().slice(0, MAX_PATTERN);
}

/** Database calls (client spans of the db category) counted per service, system and pattern. */
export function queryCounts(spans: DatabaseSpan[]): RollupBatch {
  const batch = new RollupBatch('query-rollup');
  // the slowest first, so each minute's example is the slowest call of the batch that created it
  for (const span of [...spans].sort((a, b) => b.durationMs - a.durationMs)) {
    if (span.category !== 'db' || span.kind === 'server') continue;
    batch.add(
      { orgId: span.orgId, projectId: span.projectId, atMs: span.startAt.getTime() },
      { service: span.service, system: span.db?.system ?? 'unknown', pattern: patternOf(span) },
      { count: 1, failed: span.status === 'error' ? 1 : 0, totalMs: span.durationMs, ...durationIncrement('latency', span.durationMs) },
      { max: { maxMs: span.durationMs }, first: { exampleTraceId: span.traceId } },
    );
  }
  return batch;
}

interface QueryRollupDoc {
  projectId: Types.ObjectId;
  service: string;
  system: string;
  pattern: string;
  count: number;
  failed: number;
  totalMs: number;
  maxMs: number;
  latency?: Buckets;
  exampleTraceId?: string | null;
}

interface QueryTotals {
  pattern: string;
  system: string;
  calls: number;
  errors: number;
  totalMs: number;
  maxMs: number;
  latency: Buckets;
  services: Set<string>;
  projects: Set<string>;
  /** Example traces with the duration of the slowest call of their minute. */
  examples: Map<string, number>;
}

/** Examples kept per pattern. */
const EXAMPLES = 3;

/** The window's calls per system and pattern, from the query rollups. */
async function queryTotals(scope: ViewScope, query: z.output<typeof databaseQuery>): Promise<QueryTotals[]> {
  const filter = { ...(query.service !== undefined && { service: query.service }), ...(query.system !== undefined && { system: query.system }) };
  const docs = await inWindowByHour<QueryRollupDoc>(QueryRollup.collection, scope, scope.from, scope.to, filter);
  const totals = new Map<string, QueryTotals>();
  for (const doc of docs) {
    const key = JSON.stringify([doc.system, doc.pattern]);
    let sum = totals.get(key);
    if (!sum) {
      sum = { pattern: doc.pattern, system: doc.system, calls: 0, errors: 0, totalMs: 0, maxMs: 0, latency: {}, services: new Set(), projects: new Set(), examples: new Map() };
      totals.set(key, sum);
    }
    sum.calls += doc.count;
    sum.errors += doc.failed;
    sum.totalMs += doc.totalMs;
    sum.maxMs = Math.max(sum.maxMs, doc.maxMs);
    addBuckets(sum.latency, doc.latency);
    sum.services.add(doc.service);
    sum.projects.add(doc.projectId.toHexString());
    if (doc.exampleTraceId) sum.examples.set(doc.exampleTraceId, Math.max(sum.examples.get(doc.exampleTraceId) ?? 0, doc.maxMs));
  }
  return [...totals.values()];
}

const common = (sum: QueryTotals) => ({
  system: sum.system,
  calls: sum.calls,
  errors: sum.errors,
  total_ms: rounded(sum.totalMs)!,
  mean_ms: rounded(sum.totalMs / sum.calls)!,
  services: [...sum.services].sort(),
  project_ids: [...sum.projects].sort(),
});

/** Normalised statements, slowest first (by p95, then by the slowest call). */
export async function slowQueries(scope: ViewScope, query: z.output<typeof databaseQuery>): Promise<{ data: z.infer<typeof slowQueryJson>[]; next_cursor: string | null }> {
  const rows = (await queryTotals(scope, query))
    .filter((sum) => sum.calls > 0)
    .map((sum) => ({
      statement: sum.pattern,
      ...common(sum),
      p50_ms: rounded(percentile(sum.latency, 50)),
      p95_ms: rounded(percentile(sum.latency, 95)),
      max_ms: rounded(sum.maxMs)!,
      example_trace_ids: [...sum.examples].sort(([, a], [, b]) => b - a).slice(0, EXAMPLES).map(([traceId]) => traceId),
    }))
    .sort((a, b) => (b.p95_ms ?? 0) - (a.p95_ms ?? 0) || b.max_ms - a.max_ms || a.statement.localeCompare(b.statement));
  const { page, next_cursor } = offsetPage(rows, query);
  return { data: page, next_cursor };
}

/** Normalised statements ranked by the time spent in them (`sort=total_ms`, the default) or by calls. */
export async function queryPatterns(scope: ViewScope, query: z.output<typeof databaseQuery>): Promise<{ data: z.infer<typeof queryPatternJson>[]; next_cursor: string | null }> {
  const byCalls = query.sort === 'calls';
  const rows = (await queryTotals(scope, query))
    .filter((sum) => sum.calls > 0)
    .map((sum) => ({ pattern: sum.pattern, ...common(sum) }))
    .sort((a, b) => (byCalls ? b.calls - a.calls || b.total_ms - a.total_ms : b.total_ms - a.total_ms || b.calls - a.calls) || a.pattern.localeCompare(b.pattern));
  const { page, next_cursor } = offsetPage(rows, query);
  return { data: page, next_cursor };
}
