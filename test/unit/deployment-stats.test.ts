/**
 * The tests deployment health shows its arithmetic with, against values computed here independently:
 * the normal tail by Simpson integration of the density (and textbook table values), binomial tails
 * by exact rational summation with BigInt.
 */
import { ALPHA, binomialUpperTail, compareRates, normalUpperTail } from '../../src/shared/features/deployments/stats.js';
import { normalTail } from '../support/statistics.js';

const choose = (n: number, k: number): bigint => {
  let result = 1n;
  for (let i = 1; i <= k; i++) result = (result * BigInt(n - k + i)) / BigInt(i);
  return result;
};

/** P(X ≥ k) for X ~ Binomial(n, a/b), summed exactly as a fraction, then divided once. */
function exactBinomialTail(k: number, n: number, a: number, b: number): number {
  let numerator = 0n;
  for (let i = Math.max(k, 0); i <= n; i++) numerator += choose(n, i) * BigInt(a) ** BigInt(i) * BigInt(b - a) ** BigInt(n - i);
  const denominator = BigInt(b) ** BigInt(n);
  const scale = 10n ** 40n;
  return Number((numerator * scale) / denominator) / 1e40;
}

/** The two-proportion z with the pooled rate, as a statistics textbook writes it. */
function pooledZ(x1: number, n1: number, x2: number, n2: number): number {
  const p = (x1 + x2) / (n1 + n2);
  return (x2 / n2 - x1 / n1) / Math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2));
}

describe('normal upper tail', () => {
  test.each([
    [1.6449, 0.05],
    [1.96, 0.025],
    [2.3263, 0.01],
    [3.0902, 0.001],
  ])('z = %f leaves %f in the upper tail (table value)', (z, p) => {
    expect(normalUpperTail(z)).toBeCloseTo(p, 5);
  });

  test('agrees with numerical integration of the density, both signs, to 1e-7', () => {
    for (const z of [-3, -1.2, -0.3, 0, 0.5, 1, 2.5, 3.5, 5]) {
      expect(Math.abs(normalUpperTail(z) - normalTail(z))).toBeLessThan(1e-7);
    }
    expect(normalUpperTail(0)).toBeCloseTo(0.5, 7);
  });

  test('far tails keep their relative precision (a p-value of 1e-15 is not rounded to 0)', () => {
    for (const z of [4, 6, 8]) expect(Math.abs(normalUpperTail(z) / normalTail(z) - 1)).toBeLessThan(1e-6);
  });
});

describe('binomial upper tail', () => {
  test('equals exact summation for small and larger n', () => {
    const cases: [number, number, number, number][] = [
      [4, 4, 1, 2],
      [6, 7, 1, 2],
      [5, 6, 3, 5],
      [3, 10, 1, 4],
      [90, 130, 1, 2],
      [420, 720, 1, 2],
      [30, 60, 2, 5],
    ];
    for (const [k, n, a, b] of cases) {
      const expected = exactBinomialTail(k, n, a, b);
      expect({ k, n, p: `${a}/${b}`, relativeError: Math.abs(binomialUpperTail(k, n, a / b) - expected) / expected < 1e-9 }).toEqual({ k, n, p: `${a}/${b}`, relativeError: true });
    }
  });

  test('edges: k ≤ 0 is certain, k > n impossible, p at 0 or 1', () => {
    expect(binomialUpperTail(0, 10, 0.3)).toBe(1);
    expect(binomialUpperTail(11, 10, 0.3)).toBe(0);
    expect(binomialUpperTail(3, 10, 0)).toBe(0);
    expect(binomialUpperTail(3, 10, 1)).toBe(1);
  });
});

describe('compareRates', () => {
  test('large samples use the pooled two-proportion z-test: 10/1000 before, 30/1000 after', () => {
    const result = compareRates({ count: 10, total: 1000 }, { count: 30, total: 1000 });
    // pooled 0.02, SE = √(0.02 · 0.98 · 2/1000) = 0.0062610, z = 0.02 / SE = 3.1944
    const z = pooledZ(10, 1000, 30, 1000);
    expect(z).toBeCloseTo(3.1944, 4);
    expect(result.test).toBe('two_proportion_z');
    expect(result.statistic).toBeCloseTo(z, 10);
    expect(result.p_value).toBeCloseTo(normalTail(z), 7);
    expect(result.p_value).toBeLessThan(0.001);
  });

  test('unequal windows in the z branch: 4/200 before, 30/250 after', () => {
    const result = compareRates({ count: 4, total: 200 }, { count: 30, total: 250 });
    const z = pooledZ(4, 200, 30, 250);
    expect(result).toMatchObject({ test: 'two_proportion_z' });
    expect(result.statistic).toBeCloseTo(z, 10);
    expect(result.p_value).toBeCloseTo(normalTail(z), 7);
  });

  test('equal rates give z = 0 and p = 0.5; a fall gives p above 0.5', () => {
    const same = compareRates({ count: 20, total: 400 }, { count: 20, total: 400 });
    expect(same.test).toBe('two_proportion_z');
    expect(same.statistic).toBe(0);
    expect(same.p_value).toBeCloseTo(0.5, 7);
    const fell = compareRates({ count: 40, total: 400 }, { count: 20, total: 400 });
    expect(fell.statistic).toBeLessThan(0);
    expect(fell.p_value).toBeCloseTo(normalTail(pooledZ(40, 400, 20, 400)), 7);
    expect(fell.p_value).toBeGreaterThan(0.99);
  });

  test('small counts use the exact Poisson comparison: 0/50 vs 4/50 and 1/100 vs 6/100', () => {
    // 4 events, each after with chance ½: P(X ≥ 4) = 1/16
    expect(compareRates({ count: 0, total: 50 }, { count: 4, total: 50 })).toEqual({ test: 'poisson_exact', statistic: 4, p_value: expect.any(Number) });
    expect(compareRates({ count: 0, total: 50 }, { count: 4, total: 50 }).p_value).toBeCloseTo(1 / 16, 12);
    // 7 events: P(X ≥ 6) = (C(7,6) + C(7,7)) / 2^7 = 8/128
    const result = compareRates({ count: 1, total: 100 }, { count: 6, total: 100 });
    expect(result).toMatchObject({ test: 'poisson_exact', statistic: 6 });
    expect(result.p_value).toBeCloseTo(8 / 128, 12);
    expect(result.p_value).toBeGreaterThan(ALPHA);
  });

  test('the exact comparison weighs unequal windows by their totals: 1/40 vs 5/60', () => {
    const result = compareRates({ count: 1, total: 40 }, { count: 5, total: 60 });
    expect(result.test).toBe('poisson_exact');
    // 6 events, each after with chance 60/100: P(X ≥ 5) = 6 · 0.6⁵ · 0.4 + 0.6⁶ = 0.23328
    expect(result.p_value).toBeCloseTo(0.23328, 10);
    expect(result.p_value).toBeCloseTo(exactBinomialTail(5, 6, 3, 5), 12);
  });

  test('errors outnumbering requests are rates, not proportions: the exact comparison', () => {
    const result = compareRates({ count: 40, total: 35 }, { count: 90, total: 35 });
    expect(result).toMatchObject({ test: 'poisson_exact', statistic: 90 });
    expect(result.p_value).toBeCloseTo(exactBinomialTail(90, 130, 1, 2), 12);
    expect(result.p_value).toBeLessThan(0.0001);
    // one side over its total is enough to leave the z-test
    expect(compareRates({ count: 10, total: 100 }, { count: 120, total: 100 }).test).toBe('poisson_exact');
  });

  test('no events on either side: nothing rose, p = 1', () => {
    expect(compareRates({ count: 0, total: 200 }, { count: 0, total: 200 })).toEqual({ test: 'poisson_exact', statistic: 0, p_value: 1 });
  });

  test('every cell must expect 5: a pooled rate near 1 leaves the z-test too', () => {
    // pooled 0.98: 100 · 0.02 = 2 expected successes, too few for the normal approximation
    expect(compareRates({ count: 97, total: 100 }, { count: 99, total: 100 }).test).toBe('poisson_exact');
    // every cell expecting exactly 5 is enough
    expect(compareRates({ count: 2, total: 100 }, { count: 8, total: 100 }).test).toBe('two_proportion_z');
  });
});
