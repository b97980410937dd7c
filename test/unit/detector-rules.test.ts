import { ANOMALY_RULES, judge } from '../../src/shared/features/anomalies/detector.js';
import { leastSquares } from '../../src/shared/features/services/approaching.js';

const window = (requests: number, failed = 0, logs = 0) => ({ requests, failed, latency: {}, logs });
const baseline = (make: (index: number) => ReturnType<typeof window>) => Array.from({ length: ANOMALY_RULES.BASELINE_WINDOWS }, (_, index) => make(index));

describe('anomaly rule', () => {
  test('an error-rate spike is judged against the median and MAD of the earlier windows', () => {
    const earlier = baseline((index) => window(50, index % 2));
    const judgement = judge('error_rate', [...earlier, window(50, 20)])!;
    // earlier rates are 0 and 0.02 in equal numbers: median 0.01, MAD 0.01 → spread 1.4826 × 0.01
    expect(judgement.baseline).toBeCloseTo(0.01, 10);
    expect(judgement.score).toBeCloseTo((0.4 - 0.01) / (1.4826 * 0.01), 6);
    expect(judgement.anomalous).toBe(true);
    expect(judgement.bandHigh).toBeCloseTo(0.01 + ANOMALY_RULES.THRESHOLD * 1.4826 * 0.01, 10);
  });

  test('too little volume, too little history or a drop in error rate are not anomalies', () => {
    const earlier = baseline(() => window(50, 1));
    expect(judge('error_rate', [...earlier, window(10, 8)])?.anomalous).toBe(false);
    expect(judge('error_rate', [...earlier.slice(0, ANOMALY_RULES.MIN_BASELINE_WINDOWS - 1).map(() => window(2, 1)), ...earlier.slice(ANOMALY_RULES.MIN_BASELINE_WINDOWS - 1), window(50, 20)])?.anomalous).toBe(true);
    expect(judge('error_rate', [...baseline((index) => (index < 7 ? window(2, 1) : window(50, 1))), window(50, 20)])).toBeUndefined();
    expect(judge('error_rate', [...baseline(() => window(50, 10)), window(50, 0)])?.anomalous).toBe(false);
  });

  test('throughput is anomalous both ways; a flat baseline is not infinitely sensitive', () => {
    const earlier = baseline(() => window(100));
    expect(judge('throughput', [...earlier, window(5)])).toMatchObject({ anomalous: true });
    expect(judge('throughput', [...earlier, window(400)])).toMatchObject({ anomalous: true });
    // 20 requests/min against a flat 20: spread floors at 10% of the baseline, 2/min; 21/min is half a spread away
    expect(judge('throughput', [...earlier, window(105)])).toMatchObject({ anomalous: false, score: 0.5 });
  });
});

describe('least squares', () => {
  test('recovers the line through points, x in hours from the origin', () => {
    const origin = Date.UTC(2026, 0, 1);
    const points = [0, 1, 2, 3].map((hours) => ({ t: origin + hours * 3_600_000, value: 10 + 5 * hours }));
    expect(leastSquares(points, origin)).toEqual({ slope: 5, intercept: 10 });
  });
});
