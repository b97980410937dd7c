import type { KeyboardEvent } from 'react';
import { formatDuration } from '../../lib/format';
import type { Span } from './api';
import { ErrorMark } from './ErrorMark';

export interface PlacedSpan {
  span: Span;
  depth: number;
}

/**
 * The loaded spans in tree order: parents before children, siblings by start. The API orders each page on
 * its own, so once more pages are loaded a child may arrive pages after its parent; ordering them all here
 * puts it back under it. A span whose parent is not loaded (or that sits in a cycle) starts a tree of its own.
 */
export function inTreeOrder(spans: readonly Span[]): PlacedSpan[] {
  const loaded = new Set(spans.map((span) => span.span_id));
  const children = new Map<string, Span[]>();
  const roots: Span[] = [];
  for (const span of spans) {
    const parent = span.parent_span_id;
    if (parent && parent !== span.span_id && loaded.has(parent)) children.set(parent, [...(children.get(parent) ?? []), span]);
    else roots.push(span);
  }
  const startOf = new Map(spans.map((span) => [span, Date.parse(span.start)]));
  const byStart = (a: Span, b: Span) => startOf.get(a)! - startOf.get(b)!;
  const placed: PlacedSpan[] = [];
  const visited = new Set<Span>();
  // an explicit stack: a trace may be thousands of spans deep
  const walk = (root: Span) => {
    const stack: PlacedSpan[] = [{ span: root, depth: 0 }];
    while (stack.length) {
      const next = stack.pop()!;
      if (visited.has(next.span)) continue;
      visited.add(next.span);
      placed.push(next);
      const below = [...(children.get(next.span.span_id) ?? [])].sort(byStart);
      for (let i = below.length - 1; i >= 0; i--) stack.push({ span: below[i]!, depth: next.depth + 1 });
    }
  };
  for (const root of [...roots].sort(byStart)) walk(root);
  for (const span of spans) if (!visited.has(span)) walk(span);
  return placed;
}

/** Tick marks at a round step (1, 2 or 5 × 10ⁿ ms), about five across the trace. */
export function timeTicks(durationMs: number): number[] {
  if (!(durationMs > 0)) return [0];
  const rough = durationMs / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= rough)!;
  const ticks: number[] = [];
  for (let tick = 0; tick <= durationMs + step * 1e-9; tick += step) ticks.push(tick);
  return ticks;
}

/** Time into the trace: "0 ms" at its start rather than "0 µs". */
export const formatOffset = (ms: number) => (ms <= 0 ? '0 ms' : formatDuration(ms));

const percent = (value: number) => `${Math.min(100, Math.max(0, value * 100))}%`;
/** Deep trees indent in steps, up to a limit past which the depth is written out instead. */
const MAX_INDENT = 16;

function TimeAxis({ ticks, durationMs }: { ticks: number[]; durationMs: number }) {
  return (
    <div className="waterfall-axis" aria-hidden="true">
      <div className="waterfall-axis-label">Span</div>
      <div className="waterfall-axis-label number">Duration</div>
      <div className="waterfall-axis-ticks">
        {ticks.map((tick) => (
          <span key={tick} className={`waterfall-tick${tick / durationMs > 0.85 ? ' end' : tick === 0 ? ' start' : ''}`} style={{ left: percent(durationMs > 0 ? tick / durationMs : 0) }}>
            {formatOffset(tick)}
          </span>
        ))}
      </div>
    </div>
  );
}

/** Arrow keys move between rows, as in a list a person reads top to bottom. */
function moveFocus(event: KeyboardEvent<HTMLOListElement>) {
  const rows = [...event.currentTarget.querySelectorAll<HTMLButtonElement>('button.span-row')];
  const at = rows.indexOf(document.activeElement as HTMLButtonElement);
  if (at < 0) return;
  const target = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: rows.length - 1 }[event.key];
  if (target === undefined || !rows[target]) return;
  event.preventDefault();
  rows[target].focus();
}

/**
 * The trace's spans as rows in tree order, each bar placed on one time axis shared by the whole trace and
 * coloured by its service. Each row is a button that selects the span.
 */
export function Waterfall({
  spans,
  traceStart,
  durationMs,
  colorOf,
  selected,
  onSelect,
}: {
  spans: readonly PlacedSpan[];
  traceStart: number;
  durationMs: number;
  colorOf: (service: string) => string;
  selected: string | undefined;
  onSelect: (spanID: string) => void;
}) {
  const ticks = timeTicks(durationMs);
  const at = (ms: number) => (durationMs > 0 ? ms / durationMs : 0);
  return (
    <div className="waterfall">
      <TimeAxis ticks={ticks} durationMs={durationMs} />
      <div className="waterfall-body">
        <div className="waterfall-gridlines" aria-hidden="true">
          <div />
          <div />
          <div>
            {ticks.map((tick) => (
              <span key={tick} style={{ left: percent(at(tick)) }} />
            ))}
          </div>
        </div>
        <ol className="waterfall-rows" aria-label="Spans in tree order" onKeyDown={moveFocus}>
          {spans.map(({ span, depth }) => {
            const offset = Date.parse(span.start) - traceStart;
            const left = at(offset);
            const width = at(span.duration_ms);
            const errored = span.status === 'error';
            return (
              <li key={`${span.project_id}:${span.span_id}`}>
                <button type="button" className={`span-row${errored ? ' is-error' : ''}`} aria-current={span.span_id === selected ? 'true' : undefined} onClick={() => onSelect(span.span_id)}>
                  <span className="span-label" style={{ paddingLeft: `${Math.min(depth, MAX_INDENT) * 0.875}rem` }}>
                    <span className={`service-swatch ${colorOf(span.service)}`} aria-hidden="true" />
                    <span className="span-name ellipsis" title={span.name}>
                      {span.name}
                    </span>
                    <span className="span-service ellipsis">{span.service}</span>
                    {depth > MAX_INDENT && <span className="span-depth">level {depth}</span>}
                    {errored && <ErrorMark />}
                    <span className="visually-hidden">
                      {depth > 0 && depth <= MAX_INDENT ? `, level ${depth}` : ''}, starts at {formatOffset(offset)}
                    </span>
                  </span>
                  <span className="span-duration">{formatDuration(span.duration_ms)}</span>
                  <span className="span-timeline">
                    <span className={`span-bar ${colorOf(span.service)}`} style={{ left: percent(left), width: percent(width) }} />
                  </span>
                </button>
              </li>
            );
          })}
        </ol>
      </div>
    </div>
  );
}
