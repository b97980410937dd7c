import dagre from '@dagrejs/dagre';
import { useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { Link } from 'react-router';
import { formatCount, formatDuration, formatPercent } from '../../lib/format';
import type { MapEdge, MapNode, ServiceMap } from './api';

const NODE_WIDTH = 176;
const NODE_HEIGHT = 50;
const LABEL_CHARS = 22;
const ZOOMS = [0.4, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2] as const;

/** What hovering or focusing a node shows: calls it received, their errors and p95. */
export interface NodeFigures {
  calls: number;
  errors: number;
  p95_ms: number | null;
  /** What `calls` counts, e.g. "requests served" or "calls received". */
  callsLabel: string;
}

/** What "Show structure" marks on the picture; edge keys are `source→target`. */
export interface StructureOverlay {
  cycleEdges: ReadonlySet<string>;
  chainEdges: ReadonlySet<string>;
  chainNodes: ReadonlySet<string>;
  weakNodes: ReadonlySet<string>;
}

export const edgeKey = (source: string, target: string) => `${source}→${target}`;

interface Placed {
  width: number;
  height: number;
  nodes: Array<MapNode & { x: number; y: number }>;
  edges: Array<MapEdge & { points: Array<{ x: number; y: number }> }>;
}

/** A layered left-to-right layout (dagre): callers left of their callees, crossings kept few. */
function place(map: ServiceMap): Placed {
  const graph = new dagre.graphlib.Graph({ multigraph: true });
  graph.setGraph({ rankdir: 'LR', nodesep: 26, ranksep: 96, edgesep: 14, marginx: 24, marginy: 24 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of map.nodes) graph.setNode(node.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of map.edges) graph.setEdge(edge.source, edge.target, {}, edge.kind);
  dagre.layout(graph);
  const size = graph.graph() as { width?: number; height?: number };
  return {
    width: Math.max(size.width ?? 0, NODE_WIDTH),
    height: Math.max(size.height ?? 0, NODE_HEIGHT),
    nodes: map.nodes.map((node) => {
      const { x = 0, y = 0 } = graph.node(node.id) ?? {};
      return { ...node, x, y };
    }),
    edges: map.edges.map((edge) => ({ ...edge, points: (graph.edge(edge.source, edge.target, edge.kind)?.points as Array<{ x: number; y: number }>) ?? [] })),
  };
}

const shorten = (name: string) => (name.length > LABEL_CHARS ? `${name.slice(0, LABEL_CHARS - 1)}…` : name);

/** The outline of a node by its type: a box for a service, a cylinder for a database, a slanted box for a queue, a pill for an external host. */
function NodeShape({ type }: { type: MapNode['type'] }) {
  const w = NODE_WIDTH;
  const h = NODE_HEIGHT;
  if (type === 'database') {
    return (
      <>
        <path className="outline" d={`M0 8 A ${w / 2} 8 0 0 1 ${w} 8 V ${h - 8} A ${w / 2} 8 0 0 1 0 ${h - 8} Z`} />
        <path className="rim" d={`M0 8 A ${w / 2} 8 0 0 0 ${w} 8`} />
      </>
    );
  }
  if (type === 'messaging') return <path className="outline" d={`M12 0 H ${w} L ${w - 12} ${h} H 0 Z`} />;
  if (type === 'external') return <rect className="outline" width={w} height={h} rx={h / 2} />;
  return <rect className="outline" width={w} height={h} rx={8} />;
}

const TYPE_LABEL: Record<MapNode['type'], string> = { service: 'service', database: 'database', messaging: 'queue', external: 'external host' };

const edgeText = (edge: MapEdge, names: Map<string, string>) =>
  `${names.get(edge.source)} → ${names.get(edge.target)} (${edge.kind}): ${formatCount(edge.calls)} calls, ${formatCount(edge.errors)} errors (${formatPercent(edge.error_rate)}), p95 ${formatDuration(edge.p95_ms)}`;

const nodeText = (node: MapNode, figures: NodeFigures | undefined) =>
  `${node.name}, ${TYPE_LABEL[node.type]}` + (figures ? `: ${formatCount(figures.calls)} ${figures.callsLabel}, ${formatCount(figures.errors)} errors, p95 ${formatDuration(figures.p95_ms)}` : '');

type Active = { kind: 'node' | 'edge'; index: number } | null;

/**
 * The service map as SVG, in a scrollable and zoomable frame. Each node and edge is focusable and
 * shows its figures in a tooltip on hover or focus (Escape hides it); a service node opens its page.
 */
export function ServiceMapPicture({ map, figures, overlay, hrefOf }: { map: ServiceMap; figures: ReadonlyMap<string, NodeFigures>; overlay?: StructureOverlay; hrefOf: (node: MapNode) => string | undefined }) {
  const placed = useMemo(() => place(map), [map]);
  const names = useMemo(() => new Map(map.nodes.map((node) => [node.id, node.name])), [map]);
  const [zoom, setZoom] = useState<number>(1);
  const [active, setActive] = useState<Active>(null);
  const frame = useRef<HTMLDivElement>(null);

  const step = (direction: 1 | -1) => {
    const index = ZOOMS.findIndex((candidate) => candidate >= zoom - 1e-6);
    setZoom(ZOOMS[Math.min(ZOOMS.length - 1, Math.max(0, (index === -1 ? ZOOMS.length - 1 : index) + direction))]!);
  };
  const fit = () => {
    const available = (frame.current?.clientWidth ?? placed.width) - 8;
    setZoom(Math.max(0.25, Math.min(2, available / placed.width)));
  };
  // a map wider than its frame starts fitted to the width, down to half size (beyond that it scrolls)
  useLayoutEffect(() => {
    const available = (frame.current?.clientWidth ?? placed.width) - 8;
    if (available < placed.width) setZoom(Math.max(0.5, available / placed.width));
  }, [placed.width]);
  const hide = (event: KeyboardEvent) => {
    if (event.key === 'Escape') setActive(null);
  };
  const handlers = (kind: 'node' | 'edge', index: number) => ({
    onMouseEnter: () => setActive({ kind, index }),
    onMouseLeave: () => setActive(null),
    onFocus: () => setActive({ kind, index }),
    onBlur: () => setActive(null),
    onKeyDown: hide,
    'aria-describedby': active?.kind === kind && active.index === index ? 'service-map-tooltip' : undefined,
  });

  const tooltip = (() => {
    if (!active) return null;
    if (active.kind === 'node') {
      const node = placed.nodes[active.index]!;
      const figure = figures.get(node.id);
      return {
        x: node.x,
        y: node.y + NODE_HEIGHT / 2,
        title: node.name,
        lines: [TYPE_LABEL[node.type], ...(figure ? [`${formatCount(figure.calls)} ${figure.callsLabel}`, `${formatCount(figure.errors)} errors`, `p95 ${formatDuration(figure.p95_ms)}`] : [])],
      };
    }
    const edge = placed.edges[active.index]!;
    const middle = edge.points[Math.floor(edge.points.length / 2)] ?? { x: 0, y: 0 };
    return {
      x: middle.x,
      y: middle.y + 6,
      title: `${names.get(edge.source)} → ${names.get(edge.target)}`,
      lines: [`${edge.kind}`, `${formatCount(edge.calls)} calls`, `${formatCount(edge.errors)} errors (${formatPercent(edge.error_rate)})`, `p95 ${formatDuration(edge.p95_ms)}`],
    };
  })();

  return (
    <div className="service-map">
      <div className="toolbar map-zoom" role="group" aria-label="Zoom">
        <button type="button" onClick={() => step(-1)} disabled={zoom <= ZOOMS[0]}>
          Zoom out
        </button>
        <button type="button" onClick={() => step(1)} disabled={zoom >= ZOOMS[ZOOMS.length - 1]!}>
          Zoom in
        </button>
        <button type="button" onClick={fit}>
          Fit width
        </button>
        <button type="button" onClick={() => setZoom(1)}>
          Actual size
        </button>
        <span className="muted small" aria-live="polite">
          {Math.round(zoom * 100)} %
        </span>
      </div>
      <div className="map-frame" ref={frame}>
        <div className="map-stage" style={{ width: placed.width * zoom, height: placed.height * zoom }}>
          <svg width={placed.width * zoom} height={placed.height * zoom} viewBox={`0 0 ${placed.width} ${placed.height}`} aria-labelledby="service-map-title">
            <title id="service-map-title">{`Service map: ${map.nodes.length} nodes, ${map.edges.length} edges`}</title>
            <defs>
              {['plain', 'errors', 'cycle', 'chain'].map((variant) => (
                <marker key={variant} id={`arrow-${variant}`} className={`arrow ${variant}`} viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse">
                  <path d="M0 0 L10 5 L0 10 Z" />
                </marker>
              ))}
            </defs>
            {placed.edges.map((edge, index) => {
              const key = edgeKey(edge.source, edge.target);
              const variant = overlay?.cycleEdges.has(key) ? 'cycle' : overlay?.chainEdges.has(key) ? 'chain' : edge.errors > 0 ? 'errors' : 'plain';
              const d = edge.points.map((point, at) => `${at === 0 ? 'M' : 'L'}${point.x} ${point.y}`).join(' ');
              return (
                <g key={`${key}:${edge.kind}`} className={`map-edge ${variant}`} tabIndex={0} role="group" aria-label={edgeText(edge, names)} {...handlers('edge', index)}>
                  <path className="hit" d={d} />
                  <path className="line" d={d} markerEnd={`url(#arrow-${variant})`} />
                </g>
              );
            })}
            {placed.nodes.map((node, index) => {
              const href = hrefOf(node);
              const classes = ['map-node', node.type, href && 'linked', overlay?.chainNodes.has(node.id) && 'chain', overlay?.weakNodes.has(node.id) && 'weak'].filter(Boolean).join(' ');
              const marks = [overlay?.weakNodes.has(node.id) && 'a single point of failure', overlay?.chainNodes.has(node.id) && 'on the longest chain'].filter(Boolean);
              const target = { className: 'node-target', 'aria-label': [nodeText(node, figures.get(node.id)), ...marks].join('; '), ...handlers('node', index) };
              // the label is drawn over the outline but outside the focusable target, whose name is the whole label
              return (
                <g key={node.id} className={classes} transform={`translate(${node.x - NODE_WIDTH / 2} ${node.y - NODE_HEIGHT / 2})`}>
                  {href ? (
                    <Link to={href} {...target}>
                      <NodeShape type={node.type} />
                    </Link>
                  ) : (
                    <g tabIndex={0} role="group" {...target}>
                      <NodeShape type={node.type} />
                    </g>
                  )}
                  <g className="node-label" aria-hidden="true">
                    <text className="type" x={NODE_WIDTH / 2} y={18} textAnchor="middle">
                      {overlay?.weakNodes.has(node.id) ? `${TYPE_LABEL[node.type]} · SPOF` : TYPE_LABEL[node.type]}
                    </text>
                    <text className="name" x={NODE_WIDTH / 2} y={37} textAnchor="middle">
                      {shorten(node.name)}
                    </text>
                  </g>
                </g>
              );
            })}
          </svg>
          {tooltip && (
            <div id="service-map-tooltip" role="tooltip" className="map-tooltip" style={{ left: tooltip.x * zoom, top: tooltip.y * zoom }}>
              <strong className="wrap-anywhere">{tooltip.title}</strong>
              {tooltip.lines.map((line) => (
                <span key={line}>{line}</span>
              ))}
            </div>
          )}
        </div>
      </div>
    </div>
  );
}
