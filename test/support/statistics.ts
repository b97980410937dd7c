/**
 * Arithmetic the tests check deployment health with, done independently of
 * src/shared/features/deployments/stats.ts.
 */

/** P(Z ≥ z) by Simpson's rule on 20 000 intervals of the density over [z, z + 12] (the rest is below 1e-30). */
export function normalTail(z: number): number {
  if (z < 0) return 1 - normalTail(-z);
  // integrated over [z, z + 12] directly (not ½ minus the body), so tiny tails keep their digits
  const steps = 20_000;
  const h = 12 / steps;
  const density = (x: number) => Math.exp(-(x * x) / 2) / Math.sqrt(2 * Math.PI);
  let sum = density(z) + density(z + 12);
  for (let i = 1; i < steps; i++) sum += (i % 2 === 1 ? 4 : 2) * density(z + i * h);
  return (sum * h) / 3;
}
