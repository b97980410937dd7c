import { Component, useEffect, useId, useRef, useState, type CSSProperties, type PointerEvent, type ReactNode } from 'react';
import { ErrorNotice } from '../../components/states';
import type { Layout, WidgetType } from './api';
import { byPlace, COLUMNS, describePlace, MIN_HEIGHT, MIN_WIDTH, nudged, onGrid, place, type Nudge, type Placed } from './layout';
import { isViewName, paramText, VIEWS, type Params, type WidgetScope } from './views';

/** A widget as the page holds it: saved ones keep their id and title; a new one has neither until saved. */
export interface DraftWidget extends Placed {
  id?: string;
  title?: string;
  type: WidgetType;
  query: { view: string; params: Params };
}

/** The title a widget shows; a new one without a title is named by the API when saved. */
export const widgetTitle = (widget: DraftWidget) => widget.title ?? (isViewName(widget.query.view) ? VIEWS[widget.query.view].label : widget.query.view);

/** Room the chart leaves for its legend below the plot. */
const LEGEND_PX = 40;
const MIN_CHART_PX = 80;

/** A widget's view failing to draw stays inside the widget; the others keep working. */
class WidgetBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  override state = { error: undefined as unknown };
  static getDerivedStateFromError(error: unknown) {
    return { error };
  }
  override render() {
    return this.state.error === undefined ? this.props.children : <ErrorNotice error={this.state.error} title="This widget could not be drawn" />;
  }
}

/** The body's height in pixels as laid out, so a chart fills its widget. */
function useHeight() {
  const ref = useRef<HTMLDivElement>(null);
  const [height, setHeight] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const observer = new ResizeObserver(() => setHeight(element.clientHeight));
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return { ref, height };
}

function WidgetBody({ widget, scope }: { widget: DraftWidget; scope: WidgetScope }) {
  const { ref, height } = useHeight();
  const { view, params } = widget.query;
  const spec = isViewName(view) ? VIEWS[view] : undefined;
  return (
    <div className="widget-body" ref={ref}>
      {spec ? (
        // a changed view or parameter set starts over, also after an error
        <WidgetBoundary key={JSON.stringify(widget.query)}>
          <spec.Body params={params} scope={{ ...scope, project: scope.project ?? paramText(params, 'project') }} type={widget.type} title={widgetTitle(widget)} height={Math.max(MIN_CHART_PX, height - LEGEND_PX)} />
        </WidgetBoundary>
      ) : (
        <p className="widget-empty">This version of the dashboard cannot show the view “{view}”.</p>
      )}
    </div>
  );
}

const NUDGES: Array<{ nudge: Nudge; label: string; symbol: string }> = [
  { nudge: 'left', label: 'Move left', symbol: '←' },
  { nudge: 'right', label: 'Move right', symbol: '→' },
  { nudge: 'up', label: 'Move up', symbol: '↑' },
  { nudge: 'down', label: 'Move down', symbol: '↓' },
  { nudge: 'narrower', label: 'Narrower', symbol: '⇤' },
  { nudge: 'wider', label: 'Wider', symbol: '⇥' },
  { nudge: 'shorter', label: 'Shorter', symbol: '⤒' },
  { nudge: 'taller', label: 'Taller', symbol: '⤓' },
];

type DragMode = 'move' | 'resize';

interface WidgetFrameProps {
  widget: DraftWidget;
  /** Its place in reading order, which a phone stacks the widgets in. */
  order: number;
  scope: WidgetScope;
  editing: boolean;
  onNudge: (nudge: Nudge) => void;
  onRemove: () => void;
  onDragStart: (event: PointerEvent<HTMLElement>, mode: DragMode) => void;
}

function WidgetFrame({ widget, order, scope, editing, onNudge, onRemove, onDragStart }: WidgetFrameProps) {
  const titleId = useId();
  const title = widgetTitle(widget);
  const { x, y, w, h } = widget.layout;
  // placed through custom properties, so a phone's stylesheet can stack the widgets instead
  const placement = { '--x': x + 1, '--y': y + 1, '--w': w, '--h': h, '--order': order } as CSSProperties;
  return (
    <section className={`widget${editing ? ' editing' : ''}`} aria-labelledby={titleId} style={placement} data-widget-type={widget.type}>
      <header className="widget-header">
        {editing && (
          <span className="widget-grip" aria-hidden="true" title="Drag to move" onPointerDown={(event) => onDragStart(event, 'move')}>
            ⠿
          </span>
        )}
        <h2 id={titleId} className="widget-title">
          {title}
          {editing && !widget.title && <span className="small muted"> (named when saved)</span>}
        </h2>
      </header>
      {editing && (
        <div className="widget-controls">
          <p className="small muted widget-place">{describePlace(widget.layout)}</p>
          <div className="actions" role="group" aria-label={`Layout of ${title}`}>
            {NUDGES.map(({ nudge, label, symbol }) => (
              <button key={nudge} type="button" className="icon-button" aria-label={label} title={label} disabled={!nudged(widget.layout, nudge)} onClick={() => onNudge(nudge)}>
                <span aria-hidden="true">{symbol}</span>
              </button>
            ))}
            <button type="button" className="danger" onClick={onRemove}>
              Remove
            </button>
          </div>
        </div>
      )}
      <WidgetBody widget={widget} scope={scope} />
      {editing && <span className="widget-resize" aria-hidden="true" title="Drag to resize" onPointerDown={(event) => onDragStart(event, 'resize')} />}
    </section>
  );
}

const clamp = (value: number, low: number, high: number) => Math.min(Math.max(value, low), high);

/**
 * The widgets on a 12-column grid. While editing, each can be dragged by its handle (or resized by its corner)
 * and moved, resized and removed with its buttons; every change reaches `onChange` as the whole new set.
 * The widgets stay in the order given (reading order as saved), so a button keeps its focus while its widget
 * moves; a phone stacks them in their new reading order.
 */
export function WidgetGrid({ widgets, scope, editing, onChange }: { widgets: readonly DraftWidget[]; scope: WidgetScope; editing: boolean; onChange: (widgets: DraftWidget[], said: string) => void }) {
  const grid = useRef<HTMLDivElement>(null);
  const drag = useRef<{ key: string; mode: DragMode; grabColumn: number; grabRow: number } | null>(null);
  const [preview, setPreview] = useState<{ key: string; layout: Layout } | null>(null);

  /** The grid cell under the pointer, from the grid's own measurements. */
  const cellAt = (event: PointerEvent) => {
    const element = grid.current!;
    const box = element.getBoundingClientRect();
    const style = getComputedStyle(element);
    const columnGap = parseFloat(style.columnGap) || 0;
    const rowGap = parseFloat(style.rowGap) || 0;
    const rowHeight = parseFloat(style.gridAutoRows) || 1;
    const columnWidth = (box.width - columnGap * (COLUMNS - 1)) / COLUMNS;
    return {
      column: clamp(Math.floor((event.clientX - box.left) / (columnWidth + columnGap)), 0, COLUMNS - 1),
      row: Math.max(0, Math.floor((event.clientY - box.top) / (rowHeight + rowGap))),
    };
  };

  const startDrag = (widget: DraftWidget) => (event: PointerEvent<HTMLElement>, mode: DragMode) => {
    if (event.button !== 0) return;
    event.preventDefault();
    const { column, row } = cellAt(event);
    drag.current = { key: widget.key, mode, grabColumn: column - widget.layout.x, grabRow: row - widget.layout.y };
    event.currentTarget.setPointerCapture(event.pointerId);
    setPreview({ key: widget.key, layout: widget.layout });
  };

  const onPointerMove = (event: PointerEvent) => {
    const current = drag.current;
    const widget = current && widgets.find((candidate) => candidate.key === current.key);
    if (!current || !widget) return;
    const { column, row } = cellAt(event);
    const { x, y } = widget.layout;
    const layout =
      current.mode === 'move'
        ? onGrid({ ...widget.layout, x: column - current.grabColumn, y: row - current.grabRow })
        : { x, y, w: clamp(column - x + 1, MIN_WIDTH, COLUMNS - x), h: clamp(row - y + 1, MIN_HEIGHT, 100) };
    setPreview((shown) => (shown && JSON.stringify(shown.layout) === JSON.stringify(layout) ? shown : { key: widget.key, layout }));
  };

  const endDrag = (commit: boolean) => {
    const current = drag.current;
    drag.current = null;
    setPreview(null);
    const widget = current && widgets.find((candidate) => candidate.key === current.key);
    if (!commit || !widget || !preview || JSON.stringify(preview.layout) === JSON.stringify(widget.layout)) return;
    onChange(place(widgets, widget.key, preview.layout), `${widgetTitle(widget)}: ${describePlace(preview.layout)}`);
  };

  const nudge = (widget: DraftWidget, how: Nudge) => {
    const layout = nudged(widget.layout, how);
    if (layout) onChange(place(widgets, widget.key, layout), `${widgetTitle(widget)}: ${describePlace(layout)}`);
  };

  const readingOrder = byPlace(widgets);
  const previewStyle = preview && ({ '--x': preview.layout.x + 1, '--y': preview.layout.y + 1, '--w': preview.layout.w, '--h': preview.layout.h } as CSSProperties);
  return (
    <div
      className={`dashboard-grid${editing ? ' editing' : ''}`}
      ref={grid}
      onPointerMove={editing ? onPointerMove : undefined}
      onPointerUp={editing ? () => endDrag(true) : undefined}
      onPointerCancel={editing ? () => endDrag(false) : undefined}
    >
      {widgets.map((widget) => (
        <WidgetFrame
          key={widget.key}
          widget={widget}
          order={readingOrder.indexOf(widget)}
          scope={scope}
          editing={editing}
          onNudge={(how) => nudge(widget, how)}
          onRemove={() => onChange(widgets.filter((other) => other.key !== widget.key), `${widgetTitle(widget)} removed`)}
          onDragStart={startDrag(widget)}
        />
      ))}
      {previewStyle && <div className="widget-drop" aria-hidden="true" style={previewStyle} />}
    </div>
  );
}
