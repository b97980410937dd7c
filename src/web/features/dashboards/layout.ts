import type { Layout } from './api';

/** The API's grid: 12 columns, rows without end (a widget starts at row 10,000 at most and spans up to 100). */
export const COLUMNS = 12;
const MAX_ROW = 10_000;
const MAX_HEIGHT = 100;
/** Smaller than this, a widget has no room for its title and a figure. */
export const MIN_WIDTH = 2;
export const MIN_HEIGHT = 2;

/** A widget while the dashboard is edited: `key` stays the same from the moment it is added until saved. */
export interface Placed {
  key: string;
  layout: Layout;
}

export const overlaps = (a: Layout, b: Layout) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

const clamp = (value: number, low: number, high: number) => Math.min(Math.max(value, low), high);

/** A layout moved and sized to stay on the grid. */
export function onGrid(layout: Layout): Layout {
  const w = clamp(layout.w, 1, COLUMNS);
  const h = clamp(layout.h, 1, MAX_HEIGHT);
  return { x: clamp(layout.x, 0, COLUMNS - w), y: clamp(layout.y, 0, MAX_ROW), w, h };
}

/**
 * The widgets with `key` at `layout`, and every widget that now overlaps it pushed down below what it
 * overlaps (top to bottom, so a push that lands on the next widget pushes that one too). Nothing else moves,
 * and the widgets keep their order.
 */
export function place<T extends Placed>(widgets: readonly T[], key: string, layout: Layout): T[] {
  const moved = widgets.find((widget) => widget.key === key);
  if (!moved) return [...widgets];
  const settled = new Map<string, T>([[key, { ...moved, layout: onGrid(layout) }]]);
  const others = widgets.filter((widget) => widget.key !== key).sort((a, b) => a.layout.y - b.layout.y || a.layout.x - b.layout.x);
  for (const widget of others) {
    let next = widget.layout;
    for (let blocker = [...settled.values()].find((done) => overlaps(done.layout, next)); blocker; blocker = [...settled.values()].find((done) => overlaps(done.layout, next))) {
      next = { ...next, y: blocker.layout.y + blocker.layout.h };
    }
    settled.set(widget.key, next === widget.layout ? widget : { ...widget, layout: next });
  }
  return widgets.map((widget) => settled.get(widget.key)!);
}

/** The first place, row by row, where a widget of this size overlaps none of `widgets`. */
export function firstFreePlace(widgets: readonly Placed[], w: number, h: number): Layout {
  const width = clamp(w, 1, COLUMNS);
  for (let y = 0; ; y++) {
    for (let x = 0; x + width <= COLUMNS; x++) {
      const layout = { x, y, w: width, h };
      if (!widgets.some((widget) => overlaps(widget.layout, layout))) return layout;
    }
  }
}

/** Reading order, and the order widgets stack in on a phone: by row, then column. */
export const byPlace = <T extends Placed>(widgets: readonly T[]) => [...widgets].sort((a, b) => a.layout.y - b.layout.y || a.layout.x - b.layout.x);

/** Where a layout is, in words: "6 columns × 4 rows at column 1, row 1". */
export const describePlace = ({ x, y, w, h }: Layout) => `${w} ${w === 1 ? 'column' : 'columns'} × ${h} ${h === 1 ? 'row' : 'rows'} at column ${x + 1}, row ${y + 1}`;

export type Nudge = 'left' | 'right' | 'up' | 'down' | 'wider' | 'narrower' | 'taller' | 'shorter';

/** The layout one step of `nudge` away, or undefined when that step would leave the grid or the minimum size. */
export function nudged(layout: Layout, nudge: Nudge): Layout | undefined {
  const { x, y, w, h } = layout;
  switch (nudge) {
    case 'left':
      return x > 0 ? { ...layout, x: x - 1 } : undefined;
    case 'right':
      return x + w < COLUMNS ? { ...layout, x: x + 1 } : undefined;
    case 'up':
      return y > 0 ? { ...layout, y: y - 1 } : undefined;
    case 'down':
      return y < MAX_ROW ? { ...layout, y: y + 1 } : undefined;
    case 'wider':
      return x + w < COLUMNS ? { ...layout, w: w + 1 } : undefined;
    case 'narrower':
      return w > MIN_WIDTH ? { ...layout, w: w - 1 } : undefined;
    case 'taller':
      return h < MAX_HEIGHT ? { ...layout, h: h + 1 } : undefined;
    case 'shorter':
      return h > MIN_HEIGHT ? { ...layout, h: h - 1 } : undefined;
  }
}
