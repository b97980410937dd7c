/**
 * Fixed log-scale latency histograms, the shape every rollup keeps its durations in.
 *
 * A duration `v` (milliseconds) is counted in bucket `i = ceil(log_γ v)`, which holds the values in
 * (γ^(i-1), γ^i]. A percentile is answered as its bucket's representative 2γ^i / (γ + 1), which is
 * within RELATIVE_ERROR of every value in that bucket: the percentile we answer is at most 5% above
 * or below the true one. Buckets are fixed, so rollups of any minute, service or process add up by
 * adding their counts, and a write is one `$inc` of one bucket.
 *
 * Buckets are stored as an object from the index (as a string; it may be negative) to a count, with
 * only the buckets that have counts. Durations of at most MIN_MS share bucket `z`.
 */

export const RELATIVE_ERROR = 0.05;
const GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR);
const LOG_GAMMA = Math.log(GAMMA);
/** A microsecond: shorter durations are not told apart. */
const MIN_MS = 0.001;
const ZERO_BUCKET = 'z';

export type Buckets = Record<string, number>;

/** The bucket a duration is counted in. */
export function bucketOf(ms: number): string {
  if (!(ms > MIN_MS)) return ZERO_BUCKET;
  return String(Math.ceil(Math.log(ms) / LOG_GAMMA - 1e-9));
}

/** The value a bucket stands for in percentiles. */
export function representative(bucket: string): number {
  if (bucket === ZERO_BUCKET) return 0;
  return (2 * GAMMA ** Number(bucket)) / (GAMMA + 1);
}

/** Adds `from` into `into` (mutating and returning `into`). */
export function addBuckets(into: Buckets, from: Buckets | undefined | null): Buckets {
  for (const [bucket, count] of Object.entries(from ?? {})) into[bucket] = (into[bucket] ?? 0) + count;
  return into;
}

/** Counts durations into buckets. */
export function bucketsOf(durations: number[]): Buckets {
  const buckets: Buckets = {};
  for (const ms of durations) {
    const bucket = bucketOf(ms);
    buckets[bucket] = (buckets[bucket] ?? 0) + 1;
  }
  return buckets;
}

const order = (bucket: string) => (bucket === ZERO_BUCKET ? -Infinity : Number(bucket));

/**
 * The p-th percentile (0 < p ≤ 100) of the counted durations, by the nearest-rank rule: the
 * representative of the bucket holding the ⌈p/100 · n⌉-th smallest duration. Null when nothing was counted.
 */
export function percentile(buckets: Buckets, p: number): number | null {
  const entries = Object.entries(buckets)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => order(a) - order(b));
  const total = entries.reduce((sum, [, count]) => sum + count, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p / 100) * total));
  let seen = 0;
  for (const [bucket, count] of entries) {
    seen += count;
    if (seen >= rank) return representative(bucket);
  }
  return representative(entries.at(-1)![0]);
}
