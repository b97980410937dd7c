/**
 * The statistics deployment health shows its arithmetic with: one-sided tests that the rate after a
 * deployment is higher than before. Plain functions of counts, so a reader can redo them by hand.
 */

/** Significance level of every test. */
export const ALPHA = 0.05;
/** Expected count each cell of a z-test needs for the normal approximation (else the exact test). */
const MIN_EXPECTED = 5;

/** log Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: ~15 significant digits). */
function logGamma(x: number): number {
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let sum = c[0]!;
  for (let i = 1; i < 9; i++) sum += c[i]! / (y + i);
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** erfc(x), with fractional error under 1.2e-7 everywhere (Chebyshev fit, Numerical Recipes §6.2). */
function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** P(Z ≥ z) for a standard normal Z. */
export const normalUpperTail = (z: number) => 0.5 * erfc(z / Math.SQRT2);

/** P(X ≥ k) for X ~ Binomial(n, p), summed exactly from the probabilities of k … n. */
export function binomialUpperTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  const logChoose = (i: number) => logGamma(n + 1) - logGamma(i + 1) - logGamma(n - i + 1);
  let tail = 0;
  for (let i = k; i <= n; i++) tail += Math.exp(logChoose(i) + i * Math.log(p) + (n - i) * Math.log(1 - p));
  return Math.min(1, tail);
}

export interface Sample {
  /** Events of interest (errors, crashes, slow requests). */
  count: number;
  /** What they are counted against (requests, sessions). */
  total: number;
}

export interface RateTest {
  test: 'two_proportion_z' | 'poisson_exact';
  /** z for the z-test; for the exact test, the count after (the binomial variable). */
  statistic: number;
  /** One-sided: the chance of a rise at least this large if nothing changed. */
  p_value: number;
}

/**
 * Whether the rate after is higher than before. A two-proportion z-test with the pooled rate when it
 * is a proportion (count ≤ total) and every cell expects at least 5; otherwise (small counts, or
 * errors outnumbering requests) the exact comparison of two Poisson rates: given the n events in
 * both windows, the count after is Binomial(n, total_after / (total_before + total_after)) if the
 * rates are equal, and the p-value is its upper tail.
 */
export function compareRates(before: Sample, after: Sample): RateTest {
  const pooled = (before.count + after.count) / (before.total + after.total);
  const proportions = before.count <= before.total && after.count <= after.total;
  const cellsLargeEnough = [before.total, after.total].every((n) => n * pooled >= MIN_EXPECTED && n * (1 - pooled) >= MIN_EXPECTED);
  if (proportions && cellsLargeEnough) {
    const difference = after.count / after.total - before.count / before.total;
    const standardError = Math.sqrt(pooled * (1 - pooled) * (1 / before.total + 1 / after.total));
    const z = difference / standardError;
    return { test: 'two_proportion_z', statistic: z, p_value: normalUpperTail(z) };
  }
  const events = before.count + after.count;
  return { test: 'poisson_exact', statistic: after.count, p_value: binomialUpperTail(after.count, events, after.total / (before.total + after.total)) };
}
