import type { Types } from 'mongoose';
import type { z } from 'zod';
import { offsetPage } from '../../paging.js';
import { scopeFilter, type ViewScope } from '../../views.js';
import { Anomaly, type anomalyMetrics } from './model.js';
import type { anomaliesQuery, anomalyJson } from './schemas.js';

interface AnomalyDoc {
  _id: Types.ObjectId;
  projectId: Types.ObjectId;
  service: string;
  metric: (typeof anomalyMetrics)[number];
  startedAt: Date;
  /** Null or absent while open (FerretDB drops a null set on insert). */
  endedAt?: Date | null;
  observed: number;
  baseline: number;
  bandLow: number;
  bandHigh: number;
  score: number;
  peakScore: number;
  reason: string;
}

const round = (value: number) => Number(value.toFixed(4));

/** Anomalies that overlap the window (started before its end, not ended before its start), newest first. */
export async function listAnomalies(scope: ViewScope, query: z.output<typeof anomaliesQuery>): Promise<{ data: z.infer<typeof anomalyJson>[]; next_cursor: string | null }> {
  const docs = await Anomaly.find({
    ...scopeFilter(scope),
    ...(query.service !== undefined && { service: query.service }),
    ...(query.metric && { metric: query.metric }),
  }).lean<AnomalyDoc[]>();
  const matching = docs
    .filter((doc) => doc.startedAt < scope.to && (doc.endedAt == null || doc.endedAt >= scope.from))
    .filter((doc) => !query.status || (query.status === 'open') === (doc.endedAt == null))
    .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || a._id.toHexString().localeCompare(b._id.toHexString()));
  const { page, next_cursor } = offsetPage(matching, query);
  return {
    data: page.map((doc) => ({
      id: doc._id.toHexString(),
      project_id: doc.projectId.toHexString(),
      service: doc.service,
      metric: doc.metric,
      observed: round(doc.observed),
      baseline: round(doc.baseline),
      band: { low: round(doc.bandLow), high: round(doc.bandHigh) },
      score: round(doc.score),
      peak_score: round(doc.peakScore),
      started_at: doc.startedAt.toISOString(),
      ended_at: doc.endedAt?.toISOString() ?? null,
      reason: doc.reason,
    })),
    next_cursor,
  };
}
