import { useEffect, useRef, useSyncExternalStore } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  /** One value per timestamp; null where there is no point. */
  values: ReadonlyArray<number | null>;
  /** A CSS colour; by default one of the palette's. */
  color?: string;
  /** Drawn as a dashed line (a baseline, a threshold). */
  dashed?: boolean;
  /** Filled band between this series and the one at `bandTo` (an index into the series). */
  bandTo?: number;
}

const PALETTE = ['#3b82f6', '#ef4444', '#10b981', '#f59e0b', '#8b5cf6', '#ec4899', '#14b8a6', '#64748b'];

const darkScheme = () => window.matchMedia('(prefers-color-scheme: dark)');
const prefersDark = () => darkScheme().matches;
function onSchemeChange(changed: () => void): () => void {
  const query = darkScheme();
  query.addEventListener('change', changed);
  return () => query.removeEventListener('change', changed);
}

/**
 * A time series on a canvas (uPlot: tens of thousands of points stay fluid). `times` are epoch
 * milliseconds; `unit` follows every value on the axis and in the legend. The figures are also in a
 * table for screen readers, since a canvas says nothing.
 */
export function TimeSeriesChart({ title, times, series, unit = '', height = 220 }: { title: string; times: readonly number[]; series: readonly ChartSeries[]; unit?: string; height?: number }) {
  const container = useRef<HTMLDivElement>(null);
  // the canvas takes its colours from the theme when drawn: drawn again when the system switches light and dark
  const dark = useSyncExternalStore(onSchemeChange, prefersDark);
  useEffect(() => {
    const element = container.current;
    if (!element || times.length === 0) return;
    const styles = getComputedStyle(document.documentElement);
    const text = styles.getPropertyValue('--muted').trim() || '#666';
    const grid = styles.getPropertyValue('--border').trim() || '#ddd';
    const withUnit = (value: number | null) => (value == null ? '—' : `${Number(value.toFixed(2)).toLocaleString()}${unit ? ` ${unit}` : ''}`);
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 200),
      height,
      series: [
        {},
        ...series.map((item, index) => ({
          label: item.label,
          stroke: item.color ?? PALETTE[index % PALETTE.length],
          width: 1.5,
          dash: item.dashed ? [6, 4] : undefined,
          spanGaps: false,
          // a value with gaps on both sides draws no line: its dot is all that shows it
          ...(hasIsolatedValue(item.values) && { points: { show: true } }),
          value: (_plot: uPlot, value: number | null) => withUnit(value),
        })),
      ],
      bands: series.flatMap((item, index) => (item.bandTo === undefined ? [] : [{ series: [index + 1, item.bandTo + 1] as [number, number], fill: 'rgba(59,130,246,0.12)' }])),
      axes: [
        axis,
        {
          ...axis,
          values: (_plot, values) => values.map((value) => withUnit(value)),
          // as wide as its longest label ("1,250 req/min" needs more room than "2 ms")
          size: (_plot, values) => (values?.length ? Math.max(...values.map((value) => value.length)) * 7 + 18 : 50),
        },
      ],
      // points within a few minutes of each other (one point, or two probes seconds apart) get an hour
      // around them, rather than an axis of years or of fractions of a second
      scales: { x: narrowSpan(times) ?? { time: true } },
      cursor: { drag: { x: false, y: false } },
    };
    const data: uPlot.AlignedData = [times.map((time) => time / 1000), ...series.map((item) => item.values as (number | null)[])];
    const plot = new uPlot(options, data, element);
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(element.clientWidth, 200), height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, unit, height, dark]);

  if (times.length === 0) return <p className="chart-empty">No points in this window.</p>;
  return (
    <figure className="chart-figure">
      <figcaption className="visually-hidden">{title}</figcaption>
      <div ref={container} className="chart" role="img" aria-label={`${title}: ${series.map((item) => item.label).join(', ')} over time`} />
    </figure>
  );
}

/** The x scale for times spanning under ten minutes: an hour centred on them. */
function narrowSpan(times: readonly number[]): uPlot.Scale | undefined {
  if (!times.length) return undefined;
  const first = Math.min(...times) / 1000;
  const last = Math.max(...times) / 1000;
  if (last - first >= 600) return undefined;
  const middle = (first + last) / 2;
  return { time: true, range: [middle - 1800, middle + 1800] };
}

const hasIsolatedValue = (values: ReadonlyArray<number | null | undefined>) => values.some((value, index) => value != null && values[index - 1] == null && values[index + 1] == null);
