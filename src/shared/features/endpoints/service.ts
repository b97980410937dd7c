import type { Types } from 'mongoose';
import type { z } from 'zod';
import { durationIncrement, RollupBatch } from '../../telemetry/rollups.js';
import { inWindowByHour, type ViewScope } from '../../views.js';
import { EndpointRollup } from './model.js';
import type { endpointSurgeJson, endpointSurgesQuery } from './schemas.js';

/** What the endpoint rollups need of a stored span: nothing that names who called. */
export interface EndpointSpan {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  service: string;
  name: string;
  kind: string;
  status: string;
  category: string;
  isSegment: boolean;
  startAt: Date;
  durationMs: number;
  http: { method?: string | null; route?: string | null; statusCode?: number | null } | null;
}

/**
 * An endpoint's route: `http.route`, a template, when the span has one. Otherwise the span's name,
 * which may be the raw URL (Sentry names transactions by URL when it knows no route): its query and
 * fragment are cut off and every path segment that could be a value (it holds a digit, an `@`, or
 * is longer than 24 characters) becomes `*`, so no id, address or token reaches the rollups.
 */
export function routeOf(span: Pick<EndpointSpan, 'name' | 'http'>): string {
  if (span.http?.route) return span.http.route;
  const [path = ''] = span.name.split(/[?#]/);
  return path
    .split('/')
    .map((segment) => (/[\d@]/.test(segment) || segment.length > 24 ? '*' : segment))
    .join('/');
}

/** Requests served per endpoint: a service's HTTP entry spans, by method and route (routeOf). */
export function endpointCounts(spans: EndpointSpan[]): RollupBatch {
  const batch = new RollupBatch('endpoint-rollup');
  for (const span of spans) {
    if (!span.isSegment || span.category !== 'http' || span.kind === 'client' || span.kind === 'producer') continue;
    const status = span.http?.statusCode ?? 0;
    batch.add(
      { orgId: span.orgId, projectId: span.projectId, atMs: span.startAt.getTime() },
      { service: span.service, method: span.http?.method ?? null, route: routeOf(span) },
      {
        count: 1,
        failed: span.status === 'error' || status >= 500 ? 1 : 0,
        status4xx: status >= 400 && status < 500 ? 1 : 0,
        status401: status === 401 ? 1 : 0,
        status403: status === 403 ? 1 : 0,
        status429: status === 429 ? 1 : 0,
        ...durationIncrement('latency', span.durationMs),
      },
    );
  }
  return batch;
}

interface EndpointRollupDoc {
  projectId: Types.ObjectId;
  at: Date;
  service: string;
  method: string | null;
  route: string;
  count: number;
  status4xx: number;
  status401: number;
  status403: number;
  status429: number;
}

const shareFields = { '4xx': 'status4xx', '401': 'status401', '403': 'status403', '429': 'status429' } as const;
type ShareName = keyof typeof shareFields;
/** In this order (an object's number-like keys would come first). */
const shareNames: ShareName[] = ['4xx', '401', '403', '429'];

/**
 * When an endpoint's traffic is a surge, against the same endpoint in the previous window of the
 * same length. Nothing is flagged below MIN_REQUESTS requests in the window.
 */
export const SURGE_RULES = {
  MIN_REQUESTS: 20,
  /** Volume: requests at least this many times the baseline's (a baseline of 0 counts as 1). */
  VOLUME_RATIO: 3,
  /** A share (4xx, 401, 403, 429): at least MIN_SHARE_COUNT answers, and a share SHARE_MARGIN above the baseline's and SHARE_RATIO times it. */
  MIN_SHARE_COUNT: 10,
  SHARE_MARGIN: 0.1,
  SHARE_RATIO: 2,
} as const;

interface Totals {
  projects: Set<string>;
  service: string;
  method: string | null;
  route: string;
  count: number;
  shares: Record<ShareName, number>;
}

function totalsOf(docs: EndpointRollupDoc[]): Map<string, Totals> {
  const totals = new Map<string, Totals>();
  for (const doc of docs) {
    const key = JSON.stringify([doc.service, doc.method, doc.route]);
    let sum = totals.get(key);
    if (!sum) {
      sum = { projects: new Set(), service: doc.service, method: doc.method, route: doc.route, count: 0, shares: { '4xx': 0, '401': 0, '403': 0, '429': 0 } };
      totals.set(key, sum);
    }
    sum.projects.add(doc.projectId.toHexString());
    sum.count += doc.count;
    for (const name of shareNames) sum.shares[name] += doc[shareFields[name]] ?? 0;
  }
  return totals;
}

const round = (value: number) => Number(value.toFixed(4));

/**
 * Endpoints whose volume, or whose share of 4xx, 401, 403 or 429 answers, surged in the window
 * against the previous window of the same length (SURGE_RULES). Read from the endpoint rollups,
 * which hold counts only: the answer names endpoints, never callers.
 */
export async function endpointSurges(scope: ViewScope, query: z.output<typeof endpointSurgesQuery>): Promise<{ from: string; to: string; data: z.infer<typeof endpointSurgeJson>[] }> {
  const r = SURGE_RULES;
  const length = scope.to.getTime() - scope.from.getTime();
  const filter = query.service !== undefined ? { service: query.service } : {};
  const [current, previous] = await Promise.all([
    inWindowByHour<EndpointRollupDoc>(EndpointRollup.collection, scope, scope.from, scope.to, filter),
    inWindowByHour<EndpointRollupDoc>(EndpointRollup.collection, scope, new Date(scope.from.getTime() - length), scope.from, filter),
  ]);
  const before = totalsOf(previous);
  const data: z.infer<typeof endpointSurgeJson>[] = [];
  for (const [key, now] of totalsOf(current)) {
    if (now.count < r.MIN_REQUESTS) continue;
    const base = before.get(key);
    const baseCount = base?.count ?? 0;
    const ratio = now.count / Math.max(baseCount, 1);
    const reasons: string[] = [];
    if (ratio >= r.VOLUME_RATIO) reasons.push(`volume: ${now.count} requests against ${baseCount} in the previous window (×${round(ratio)}, rule: ×${r.VOLUME_RATIO} or more)`);
    const shares = Object.fromEntries(
      shareNames.map((name) => {
        const observed = now.shares[name] / now.count;
        const baseline = base && base.count > 0 ? base.shares[name] / base.count : 0;
        const surging = now.shares[name] >= r.MIN_SHARE_COUNT && observed >= baseline + r.SHARE_MARGIN && observed >= baseline * r.SHARE_RATIO;
        if (surging) reasons.push(`${name} share: ${round(observed)} against ${round(baseline)} in the previous window (rule: +${r.SHARE_MARGIN} and ×${r.SHARE_RATIO} or more, at least ${r.MIN_SHARE_COUNT} answers)`);
        return [name, { count: now.shares[name], observed: round(observed), baseline: round(baseline) }];
      }),
    ) as z.infer<typeof endpointSurgeJson>['shares'];
    if (reasons.length === 0) continue;
    data.push({
      service: now.service,
      method: now.method,
      route: now.route,
      project_ids: [...now.projects].sort(),
      requests: now.count,
      baseline_requests: baseCount,
      ratio: round(ratio),
      shares,
      reasons,
    });
  }
  data.sort((a, b) => b.ratio - a.ratio || b.requests - a.requests || a.route.localeCompare(b.route));
  return { from: scope.from.toISOString(), to: scope.to.toISOString(), data };
}
