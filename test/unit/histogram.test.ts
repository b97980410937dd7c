import fc from 'fast-check';
import { addBuckets, bucketOf, bucketsOf, percentile, RELATIVE_ERROR, representative } from '../../src/shared/telemetry/histogram.js';
import { durationIncrement } from '../../src/shared/telemetry/rollups.js';

/** The nearest-rank percentile of the raw values, the figure the histogram approximates. */
function exactPercentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}

describe('log-scale latency histogram', () => {
  test('every duration’s bucket stands for it within the documented relative error', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.002, max: 3_600_000, noNaN: true }), (ms) => {
        expect(Math.abs(representative(bucketOf(ms)) - ms) / ms).toBeLessThanOrEqual(RELATIVE_ERROR + 1e-9);
      }),
    );
  });

  test('p50, p95 and p99 of any set of durations are within the documented relative error of the exact ones', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0.01, max: 600_000, noNaN: true }), { minLength: 1, maxLength: 400 }), fc.constantFrom(50, 95, 99), (values, p) => {
        const exact = exactPercentile(values, p);
        const estimate = percentile(bucketsOf(values), p)!;
        expect(Math.abs(estimate - exact) / exact).toBeLessThanOrEqual(RELATIVE_ERROR + 1e-9);
      }),
    );
  });

  test('a known distribution: 1..1000 ms gives p50 ≈ 500, p95 ≈ 950, p99 ≈ 990', () => {
    const buckets = bucketsOf(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(Math.abs(percentile(buckets, 50)! - 500) / 500).toBeLessThanOrEqual(RELATIVE_ERROR);
    expect(Math.abs(percentile(buckets, 95)! - 950) / 950).toBeLessThanOrEqual(RELATIVE_ERROR);
    expect(Math.abs(percentile(buckets, 99)! - 990) / 990).toBeLessThanOrEqual(RELATIVE_ERROR);
  });

  test('histograms of parts add up to the histogram of the whole', () => {
    const a = [1, 2, 3, 400, 0];
    const b = [5, 6000, 0.5];
    expect(addBuckets(bucketsOf(a), bucketsOf(b))).toEqual(bucketsOf([...a, ...b]));
    expect(addBuckets({}, undefined)).toEqual({});
  });

  test('zero and sub-microsecond durations share one bucket that stands for 0; an empty histogram has no percentile', () => {
    expect(bucketOf(0)).toBe(bucketOf(0.0005));
    expect(percentile(bucketsOf([0, 0, 0]), 99)).toBe(0);
    expect(percentile({}, 50)).toBeNull();
  });

  test('a rollup update increments the one bucket a duration falls in', () => {
    expect(durationIncrement('latency', 10)).toEqual({ [`latency.${bucketOf(10)}`]: 1 });
    expect(durationIncrement('wait', 0, -1)).toEqual({ 'wait.z': -1 });
  });
});
