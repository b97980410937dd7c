import { Types } from 'mongoose';
import type { z } from 'zod';
import type { RecordKind, Stamped } from '../../telemetry/records.js';
import { claimBatch, contentId, upsertAll } from '../../telemetry/storage.js';
import { Project } from '../projects/model.js';
import { namedProjects, projectFilter, rounded } from '../../views.js';
import { Usage } from './model.js';
import { categoryOfKind, usageCategories, type PlanIncluded, type UsageCategory } from './plan.js';
import type { usageJson } from './schemas.js';

/**
 * Counts a batch's records per organisation, project, kind and UTC day of processing. Applied once
 * per batch id (see claimBatch), since `$inc` alone would count a replayed batch twice.
 */
export async function countUsage(kind: RecordKind, items: Stamped<unknown>[], batchId: string, now = new Date()): Promise<void> {
  if (!(await claimBatch(batchId, 'usage', now))) return;
  const day = now.toISOString().slice(0, 10);
  const quantities = new Map<string, { orgId: string; projectId: string; quantity: number }>();
  for (const { orgId, projectId } of items) {
    const key = `${orgId}:${projectId}`;
    const counter = quantities.get(key) ?? { orgId, projectId, quantity: 0 };
    counter.quantity += 1;
    quantities.set(key, counter);
  }
  await upsertAll(
    Usage.collection,
    [...quantities.values()].map(({ orgId, projectId, quantity }) => ({
      updateOne: {
        filter: { _id: contentId('usage', projectId, kind, day) },
        update: { $setOnInsert: { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), category: kind, day }, $inc: { quantity } },
        upsert: true,
      },
    })),
  );
}

export const USAGE_CAVEAT =
  'Counted per UTC day as the workers accept records, so figures may lag ingestion by about a minute. ' +
  'Plan figures are for information only: exceeding them never throttles, samples or drops telemetry.';

/** The calendar month in UTC that `now` falls in: start inclusive, end exclusive. */
export function billingPeriod(now: Date): { start: Date; end: Date } {
  return { start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)) };
}

const dayOf = (date: Date) => date.toISOString().slice(0, 10);
const zeroes = () => Object.fromEntries(usageCategories.map((category) => [category, 0])) as Record<UsageCategory, number>;

/**
 * Usage in the current period per category, in total and per project, beside the plan figures. Read
 * from the daily counters (a few documents per project and day), never from the telemetry itself.
 */
export async function usageReport(
  orgId: Types.ObjectId,
  query: { project?: string[] | undefined },
  plan: PlanIncluded,
  now: Date,
): Promise<z.input<typeof usageJson>> {
  const projectIds = await namedProjects(orgId, query.project);
  const period = billingPeriod(now);
  const [counters, projects] = await Promise.all([
    // served by the prefix orgId (+ projectId) of the counters' unique index
    Usage.find({ orgId, ...projectFilter(projectIds), day: { $gte: dayOf(period.start), $lt: dayOf(period.end) } }, { projectId: 1, category: 1, quantity: 1 }).lean(),
    Project.find({ orgId, ...(projectIds && { _id: { $in: projectIds } }) }, { name: 1 }).lean(),
  ]);
  const total = zeroes();
  const byProject = new Map<string, { name: string | null; used: Record<UsageCategory, number> }>(
    projects.map((project) => [project._id.toHexString(), { name: project.name, used: zeroes() }]),
  );
  for (const counter of counters) {
    const category = categoryOfKind.get(counter.category as RecordKind);
    if (!category) continue;
    const id = counter.projectId.toHexString();
    const project = byProject.get(id) ?? { name: null, used: zeroes() };
    byProject.set(id, project);
    project.used[category] += counter.quantity ?? 0;
    total[category] += counter.quantity ?? 0;
  }
  return {
    period: { start: period.start.toISOString(), end: period.end.toISOString() },
    categories: usageCategories.map((category) => {
      const included = plan[category] ?? null;
      return { category, used: total[category], included, percent_used: included ? rounded((total[category] / included) * 100) : null };
    }),
    projects: [...byProject.entries()]
      .map(([id, { name, used }]) => ({ project_id: id, name, categories: usageCategories.map((category) => ({ category, used: used[category] })) }))
      .sort((a, b) => (a.name ?? '\uffff').localeCompare(b.name ?? '\uffff') || a.project_id.localeCompare(b.project_id)),
    caveat: USAGE_CAVEAT,
  };
}
