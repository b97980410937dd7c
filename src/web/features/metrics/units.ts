import type { Aggregation, MetricName } from './api';

/** Types whose points are distributions: percentiles apply, and counts are of observations. */
export const DISTRIBUTIONS: ReadonlySet<MetricName['type']> = new Set(['histogram', 'exponential_histogram', 'summary', 'distribution']);

/** An OTLP/UCUM unit as a person reads it: `{request}` → requests, `By` → B, `1` (a ratio) → none. */
export function readableUnit(unit: string | null | undefined): string {
  if (!unit || unit === '1') return '';
  const annotation = unit.match(/^\{(.+)\}$/);
  if (annotation) return annotation[1]!.endsWith('s') ? annotation[1]! : `${annotation[1]}s`;
  return { By: 'B', KiBy: 'KiB', MiBy: 'MiB', GiBy: 'GiB', us: 'µs' }[unit] ?? unit;
}

/** The unit of an aggregated value: a count counts points or observations, a rate is per second. */
export function unitOf(type: MetricName['type'], unit: string | null | undefined, aggregation: Aggregation): string {
  const base = readableUnit(unit);
  const distribution = DISTRIBUTIONS.has(type);
  if (aggregation === 'count') return distribution ? 'observations' : 'points';
  if (aggregation === 'rate') return distribution ? 'observations/s' : base ? `${base}/s` : '/s';
  return base;
}

/** The value with its unit, e.g. "12.5 ms"; "—" when the step has none. */
export const withUnit = (value: number | null | undefined, unit: string, format: (value: number) => string) =>
  value == null ? '—' : unit ? `${format(value)} ${unit}` : format(value);
