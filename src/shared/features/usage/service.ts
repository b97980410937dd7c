import { Types, type mongo } from 'mongoose';
import type { z } from 'zod';
import type { OutcomeRecord, RecordBatch, RecordKind, Stamped } from '../../telemetry/records.js';
import { claimBatches, contentId, upsertAll } from '../../telemetry/storage.js';
import { Project } from '../projects/model.js';
import { namedProjects, projectFilter, rounded } from '../../views.js';
import { DroppedUsage, Usage } from './model.js';
import { categoryOfKind, usageCategories, type PlanIncluded, type UsageCategory } from './plan.js';
import type { usageJson } from './schemas.js';

/** A quantity for one project's daily counter, named by `fields` (the category, and the reason for dropped items). */
interface DailyCount {
  orgId: string;
  projectId: string;
  fields: Record<string, string>;
  quantity: number;
}

/**
 * Adds batches' quantities into per-project counters of the UTC day of processing, each addressed
 * by an `_id` derived from `concern`, the project, the fields and the day: one write per counter
 * however many batches. Each batch is applied once per batch id and concern (see claimBatches),
 * since `$inc` alone would count a replayed batch twice.
 */
async function countDaily<T>(collection: mongo.Collection, concern: string, batches: RecordBatch<T>[], now: Date, countOf: (item: Stamped<T>) => DailyCount): Promise<void> {
  const claimed = await claimBatches(
    batches.map(({ batchId }) => batchId),
    concern,
    now,
  );
  const day = now.toISOString().slice(0, 10);
  const sums = new Map<string, DailyCount>();
  for (const { batchId, items } of batches) {
    if (!claimed.has(batchId)) continue;
    for (const count of items.map(countOf)) {
      const key = JSON.stringify([count.projectId, ...Object.values(count.fields)]);
      const sum = sums.get(key) ?? { ...count, quantity: 0 };
      sum.quantity += count.quantity;
      sums.set(key, sum);
    }
  }
  await upsertAll(
    collection,
    [...sums.values()].map(({ orgId, projectId, fields, quantity }) => ({
      updateOne: {
        filter: { _id: contentId(concern, projectId, ...Object.values(fields), day) },
        update: { $setOnInsert: { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), ...fields, day }, $inc: { quantity } },
        upsert: true,
      },
    })),
  );
}

/** Counts batches' records per organisation, project, kind and UTC day of processing. */
export function countUsage(kind: RecordKind, batches: RecordBatch<unknown>[], now = new Date()): Promise<void> {
  return countDaily(Usage.collection, 'usage', batches, now, ({ orgId, projectId }) => ({ orgId, projectId, fields: { category: kind }, quantity: 1 }));
}

/** Counts batches' dropped items per project, category, reason and UTC day. */
export function countDropped(batches: RecordBatch<OutcomeRecord>[], now = new Date()): Promise<void> {
  return countDaily(DroppedUsage.collection, 'dropped', batches, now, ({ orgId, projectId, record }) => ({
    orgId,
    projectId,
    fields: { category: record.category, reason: record.reason },
    quantity: record.quantity,
  }));
}

/** Sums counters into one list by category and reason, in a stable order. */
function droppedList(counters: { category: string; reason: string; quantity?: number | null }[]) {
  const sums = new Map<string, { category: OutcomeRecord['category']; reason: OutcomeRecord['reason']; quantity: number }>();
  for (const { category, reason, quantity } of counters) {
    const key = `${category}/${reason}`;
    const sum = sums.get(key) ?? { category: category as OutcomeRecord['category'], reason: reason as OutcomeRecord['reason'], quantity: 0 };
    sum.quantity += quantity ?? 0;
    sums.set(key, sum);
  }
  return [...sums.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, sum]) => sum);
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
  const days = { $gte: dayOf(period.start), $lt: dayOf(period.end) };
  const [counters, droppedCounters, projects] = await Promise.all([
    // served by the prefix orgId (+ projectId) of the counters' unique index
    Usage.find({ orgId, ...projectFilter(projectIds), day: days }, { projectId: 1, category: 1, quantity: 1 }).lean(),
    DroppedUsage.find({ orgId, ...projectFilter(projectIds), day: days }, { projectId: 1, category: 1, reason: 1, quantity: 1 }).lean(),
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
      .map(([id, { name, used }]) => ({
        project_id: id,
        name,
        categories: usageCategories.map((category) => ({ category, used: used[category] })),
        dropped: droppedList(droppedCounters.filter((counter) => counter.projectId.toHexString() === id)),
      }))
      .sort((a, b) => (a.name ?? '\uffff').localeCompare(b.name ?? '\uffff') || a.project_id.localeCompare(b.project_id)),
    dropped: droppedList(droppedCounters),
    caveat: USAGE_CAVEAT,
  };
}
