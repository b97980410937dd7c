import type { RecordKind } from '../../telemetry/records.js';

/** What usage is shown in and measured against the plan figures (`PLAN_INCLUDED`). */
export const usageCategories = ['errors', 'spans', 'logs', 'metrics', 'replays', 'checkins', 'feedback'] as const;
export type UsageCategory = (typeof usageCategories)[number];

/**
 * The record kinds each category counts. `metrics` are metric points; `replays` are replay segments,
 * counted once per segment by its recording (its replay_event twin is not counted again). Sessions
 * (release health) are bookkeeping and belong to no category.
 */
export const kindsOf: Record<UsageCategory, RecordKind[]> = {
  errors: ['errors'],
  spans: ['spans'],
  logs: ['logs'],
  metrics: ['metrics'],
  replays: ['replay_recordings'],
  checkins: ['checkins'],
  feedback: ['feedback'],
};

/** Each counted record kind and its category. */
export const categoryOfKind = new Map<RecordKind, UsageCategory>(usageCategories.flatMap((category) => kindsOf[category].map((kind) => [kind, category] as const)));

/** Included quantity per category for a month; a category the configuration leaves out has no figure. */
export type PlanIncluded = Partial<Record<UsageCategory, number>>;

/**
 * Parses `PLAN_INCLUDED` (config has checked its `name=number,…` shape). An unknown or repeated
 * category is refused, every one listed: a misspelt figure would otherwise vanish from the usage view.
 */
export function parsePlanIncluded(text: string): PlanIncluded {
  const included: PlanIncluded = {};
  const problems: string[] = [];
  for (const pair of text.split(',')) {
    const [rawName = '', rawQuantity = ''] = pair.split('=');
    const name = rawName.trim();
    if (!(usageCategories as readonly string[]).includes(name)) problems.push(`unknown category "${name}"`);
    else if (name in included) problems.push(`"${name}" given twice`);
    else included[name as UsageCategory] = Number(rawQuantity.trim());
  }
  if (problems.length > 0) {
    throw new Error(`PLAN_INCLUDED: ${problems.join('; ')} (categories: ${usageCategories.join(', ')})`);
  }
  return Object.freeze(included);
}
