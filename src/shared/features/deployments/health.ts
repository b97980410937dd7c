import type { z } from 'zod';
import { addBuckets, percentile, representative, type Buckets } from '../../telemetry/histogram.js';
import { inWindowByHour, rounded } from '../../views.js';
import { Issue } from '../issues/model.js';
import { ReleaseRollup } from '../releases/model.js';
import type { DeploymentDoc, Verdict } from './model.js';
import type { healthJson } from './schemas.js';
import { ALPHA, compareRates, type Sample } from './stats.js';

type Health = z.infer<typeof healthJson>;

/**
 * The rules a verdict follows (docs/api.md shows them too). A metric is judged only when both windows
 * have its minimum sample; it is degraded when its one-sided test is significant at ALPHA and the
 * rise is at least the practical minimum, so a large service's tiny but "significant" wobble is not a
 * regression.
 */
export const HEALTH_RULES = {
  MIN_REQUESTS: 30,
  MIN_SESSIONS: 30,
  /** Error rate (errors per request or session): at least one point more. */
  MIN_ERROR_RATE_RISE: 0.01,
  /** p95: at least 20 % and 50 ms slower. */
  MIN_P95_RATIO: 1.2,
  MIN_P95_RISE_MS: 50,
  /** Crash rate: at least half a point more (the crash-free rate half a point lower). */
  MIN_CRASH_RATE_RISE: 0.005,
} as const;

interface Totals {
  requests: number;
  errors: number;
  sessions: number;
  crashed: number;
  latency: Buckets;
}

interface RollupDoc {
  environment?: string | null;
  requests?: number;
  errorEvents?: number;
  sessions?: number;
  crashed?: number;
  latency?: Buckets;
}

async function totalsIn(deployment: DeploymentDoc, from: Date, to: Date): Promise<Totals> {
  const docs = await inWindowByHour<RollupDoc>(ReleaseRollup.collection, { orgId: deployment.orgId, projectIds: [deployment.projectId], from, to }, from, to);
  const totals: Totals = { requests: 0, errors: 0, sessions: 0, crashed: 0, latency: {} };
  for (const doc of docs) {
    if ((doc.environment ?? null) !== deployment.environment) continue;
    totals.requests += doc.requests ?? 0;
    totals.errors += doc.errorEvents ?? 0;
    totals.sessions += doc.sessions ?? 0;
    totals.crashed += doc.crashed ?? 0;
    addBuckets(totals.latency, doc.latency);
  }
  return totals;
}

const rate = (sample: Sample) => (sample.total > 0 ? rounded(sample.count / sample.total, 6) : null);
const percent = (value: number | null) => (value === null ? 'n/a' : `${rounded(value * 100, 2)}%`);
const pValue = (p: number) => (p < 0.0001 ? p.toExponential(2) : String(rounded(p, 4)));

interface Judged {
  difference: number | null;
  test: 'two_proportion_z' | 'poisson_exact' | null;
  statistic: number | null;
  p_value: number | null;
  verdict: Verdict;
}

/** The test and the verdict for one metric, given whether the practical rise is there. */
function judge(before: Sample, after: Sample, minimum: number, difference: number | null, largeEnough: boolean): Judged {
  if (before.total < minimum || after.total < minimum) return { difference, test: null, statistic: null, p_value: null, verdict: 'insufficient_data' };
  const tested = compareRates(before, after);
  const degraded = tested.p_value < ALPHA && largeEnough;
  return { difference, test: tested.test, statistic: rounded(tested.statistic, 4), p_value: Number(tested.p_value.toPrecision(4)), verdict: degraded ? 'degraded' : 'healthy' };
}

const testText = (judged: Judged) => `${judged.test === 'two_proportion_z' ? `z = ${judged.statistic}` : `exact Poisson comparison, ${judged.statistic} after`}, one-sided p = ${pValue(judged.p_value!)}`;

/**
 * Whether a deployment made things worse: equal windows before and after it (the after window is cut
 * at `now` while it runs, and the before window to the same length), in its project and environment,
 * read from the release rollups. Every figure and the rule behind the verdict are in the answer.
 */
export async function deploymentHealth(deployment: DeploymentDoc, windowMinutes: number, now = new Date()): Promise<Health> {
  const r = HEALTH_RULES;
  const deployedMs = deployment.deployedAt.getTime();
  const length = Math.max(0, Math.min(windowMinutes * 60_000, now.getTime() - deployedMs));
  const before = { from: new Date(deployedMs - length), to: deployment.deployedAt };
  const after = { from: deployment.deployedAt, to: new Date(deployedMs + length) };
  const [b, a] = length > 0 ? await Promise.all([totalsIn(deployment, before.from, before.to), totalsIn(deployment, after.from, after.to)]) : [undefined, undefined];
  const empty: Totals = { requests: 0, errors: 0, sessions: 0, crashed: 0, latency: {} };
  const [pre, post] = [b ?? empty, a ?? empty];
  const reasons: string[] = [];

  // Error rate: per request when spans exist, else per session.
  const denominator = pre.requests > 0 || post.requests > 0 || (pre.sessions === 0 && post.sessions === 0) ? 'requests' : 'sessions';
  const errorsBefore = { count: pre.errors, total: denominator === 'requests' ? pre.requests : pre.sessions };
  const errorsAfter = { count: post.errors, total: denominator === 'requests' ? post.requests : post.sessions };
  const errorMinimum = denominator === 'requests' ? r.MIN_REQUESTS : r.MIN_SESSIONS;
  const errorDifference = rate(errorsBefore) !== null && rate(errorsAfter) !== null ? rounded(rate(errorsAfter)! - rate(errorsBefore)!, 6) : null;
  const errorJudged = judge(errorsBefore, errorsAfter, errorMinimum, errorDifference, (errorDifference ?? 0) >= r.MIN_ERROR_RATE_RISE);
  const errorRule = `degraded when a one-sided test of a higher rate after gives p < ${ALPHA} and the rate rose by at least ${r.MIN_ERROR_RATE_RISE}; judged from ${errorMinimum} ${denominator} in each window`;
  if (errorJudged.verdict === 'degraded') {
    reasons.push(`error rate rose from ${percent(rate(errorsBefore))} (${errorsBefore.count}/${errorsBefore.total} ${denominator}) to ${percent(rate(errorsAfter))} (${errorsAfter.count}/${errorsAfter.total}): ${testText(errorJudged)} < ${ALPHA}`);
  }

  // p95: the share of requests slower than the before window's p95, before against after.
  const threshold = percentile(pre.latency, 95);
  const slowerThan = (latency: Buckets) => (threshold === null ? 0 : Object.entries(latency).reduce((sum, [bucket, count]) => sum + (representative(bucket) > threshold ? count : 0), 0));
  const slowBefore = { count: slowerThan(pre.latency), total: pre.requests };
  const slowAfter = { count: slowerThan(post.latency), total: post.requests };
  const p95Before = percentile(pre.latency, 95);
  const p95After = percentile(post.latency, 95);
  const p95Difference = p95Before !== null && p95After !== null ? rounded(p95After - p95Before) : null;
  const p95Large = p95Before !== null && p95After !== null && p95After >= p95Before * r.MIN_P95_RATIO && p95After - p95Before >= r.MIN_P95_RISE_MS;
  const p95Judged = judge(slowBefore, slowAfter, r.MIN_REQUESTS, p95Difference, p95Large);
  if (p95Judged.verdict === 'degraded') {
    reasons.push(`p95 latency rose from ${rounded(p95Before!)} ms to ${rounded(p95After!)} ms; requests slower than ${rounded(threshold!)} ms went from ${slowBefore.count}/${slowBefore.total} to ${slowAfter.count}/${slowAfter.total}: ${testText(p95Judged)} < ${ALPHA}`);
  }

  // Crash-free sessions, where sessions exist.
  let crash: Health['crash_free_sessions'] = null;
  if (pre.sessions > 0 || post.sessions > 0) {
    const crashedBefore = { count: pre.crashed, total: pre.sessions };
    const crashedAfter = { count: post.crashed, total: post.sessions };
    const freeBefore = rate(crashedBefore) === null ? null : rounded(1 - rate(crashedBefore)!, 6);
    const freeAfter = rate(crashedAfter) === null ? null : rounded(1 - rate(crashedAfter)!, 6);
    const difference = freeBefore !== null && freeAfter !== null ? rounded(freeAfter - freeBefore, 6) : null;
    const judged = judge(crashedBefore, crashedAfter, r.MIN_SESSIONS, difference, difference !== null && -difference >= r.MIN_CRASH_RATE_RISE);
    if (judged.verdict === 'degraded') {
      reasons.push(`crash-free sessions fell from ${percent(freeBefore)} (${crashedBefore.count} of ${crashedBefore.total} crashed) to ${percent(freeAfter)} (${crashedAfter.count} of ${crashedAfter.total}): ${testText(judged)} < ${ALPHA}`);
    }
    crash = {
      before: { sessions: pre.sessions, crashed: pre.crashed, crash_free_rate: freeBefore },
      after: { sessions: post.sessions, crashed: post.crashed, crash_free_rate: freeAfter },
      ...judged,
      minimum_sample: r.MIN_SESSIONS,
      rule: `degraded when a one-sided test of a higher crash rate after gives p < ${ALPHA} and the crash-free rate fell by at least ${r.MIN_CRASH_RATE_RISE}; judged from ${r.MIN_SESSIONS} sessions in each window`,
    };
  }

  const issues = await Issue.find({ projectId: deployment.projectId, firstRelease: deployment.version, firstSeen: { $gte: deployment.deployedAt } }, { title: 1, firstSeen: 1, eventCount: 1 })
    .sort({ firstSeen: 1 })
    .limit(50)
    .lean();

  const judgedMetrics = [errorJudged.verdict, p95Judged.verdict, ...(crash ? [crash.verdict] : [])];
  let verdict: Verdict = 'insufficient_data';
  if (judgedMetrics.includes('degraded')) verdict = 'degraded';
  else if (judgedMetrics.includes('healthy')) {
    verdict = 'healthy';
    reasons.push('no judged metric rose significantly');
  } else {
    reasons.push(`too little traffic to judge: fewer than ${r.MIN_REQUESTS} requests (or ${r.MIN_SESSIONS} sessions) in a window`);
  }
  return {
    deployment_id: deployment._id.toHexString(),
    project_id: deployment.projectId.toHexString(),
    version: deployment.version,
    environment: deployment.environment,
    deployed_at: deployment.deployedAt.toISOString(),
    window_minutes: rounded(length / 60_000, 3),
    before: { from: before.from.toISOString(), to: before.to.toISOString() },
    after: { from: after.from.toISOString(), to: after.to.toISOString() },
    error_rate: {
      denominator,
      before: { errors: errorsBefore.count, [denominator]: errorsBefore.total, rate: rate(errorsBefore) },
      after: { errors: errorsAfter.count, [denominator]: errorsAfter.total, rate: rate(errorsAfter) },
      ...errorJudged,
      minimum_sample: errorMinimum,
      rule: errorRule,
    },
    p95_latency: {
      before: { requests: pre.requests, p95_ms: p95Before === null ? null : rounded(p95Before), slower: slowBefore.count, rate: rate(slowBefore) },
      after: { requests: post.requests, p95_ms: p95After === null ? null : rounded(p95After), slower: slowAfter.count, rate: rate(slowAfter) },
      threshold_ms: threshold === null ? null : rounded(threshold),
      ...p95Judged,
      minimum_sample: r.MIN_REQUESTS,
      rule: `requests slower than the before window's p95 are counted on both sides; degraded when a one-sided test of a higher share after gives p < ${ALPHA} and the p95 rose by at least ×${r.MIN_P95_RATIO} and ${r.MIN_P95_RISE_MS} ms; judged from ${r.MIN_REQUESTS} requests in each window`,
    },
    crash_free_sessions: crash,
    new_issues: issues.map((issue) => ({ id: issue._id.toHexString(), title: issue.title, first_seen: issue.firstSeen.toISOString(), count: issue.eventCount })),
    verdict,
    reasons,
  };
}
