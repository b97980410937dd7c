import { useMemo } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, Loading, QueryView } from '../../components/states';
import { Table, type Column } from '../../components/Table';
import { formatCount, formatDuration, formatPercent } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow, useCarriedSearch } from '../../lib/url-state';
import { servicePath, useServiceMap, useServices, useServiceStructure, type MapEdge, type MapNode, type Service, type ServiceMap, type ServiceStructure } from './api';
import { edgeKey, ServiceMapPicture, type NodeFigures, type StructureOverlay } from './ServiceMapPicture';
import './services.css';

/** Services show what they served; other nodes what their callers sent them (the slowest caller's p95). */
function figuresOf(map: ServiceMap, services: readonly Service[] | undefined): Map<string, NodeFigures> {
  const figures = new Map<string, NodeFigures>();
  const served = new Map((services ?? []).map((service) => [service.name, service]));
  for (const node of map.nodes) {
    const service = node.type === 'service' ? served.get(node.name) : undefined;
    if (service) {
      figures.set(node.id, { calls: service.requests, errors: service.errors, p95_ms: service.p95_ms, callsLabel: 'requests served' });
      continue;
    }
    const incoming = map.edges.filter((edge) => edge.target === node.id);
    if (incoming.length === 0) continue;
    const p95s = incoming.flatMap((edge) => (edge.p95_ms === null ? [] : [edge.p95_ms]));
    figures.set(node.id, {
      calls: incoming.reduce((sum, edge) => sum + edge.calls, 0),
      errors: incoming.reduce((sum, edge) => sum + edge.errors, 0),
      p95_ms: p95s.length ? Math.max(...p95s) : null,
      callsLabel: 'calls received',
    });
  }
  return figures;
}

function overlayOf(structure: ServiceStructure): StructureOverlay {
  const chain = structure.longest_chain;
  return {
    cycleEdges: new Set(structure.cycles.flatMap((cycle) => cycle.map((node, index) => edgeKey(node, cycle[(index + 1) % cycle.length]!)))),
    chainEdges: new Set(chain.slice(1).map((node, index) => edgeKey(chain[index]!, node))),
    chainNodes: new Set(chain),
    weakNodes: new Set(structure.single_points_of_failure.map((point) => point.node)),
  };
}

function StructureSummary({ structure, names }: { structure: ServiceStructure; names: ReadonlyMap<string, string> }) {
  const name = (id: string) => names.get(id) ?? id;
  const path = (ids: readonly string[]) => ids.map(name).join(' → ');
  return (
    <section className="panel structure" aria-labelledby="structure-heading">
      <h2 id="structure-heading">Structure</h2>
      <ul className="map-legend" aria-label="Legend">
        <li>
          <span className="swatch cycle" aria-hidden="true" /> dashed red: an edge of a cycle
        </li>
        <li>
          <span className="swatch chain" aria-hidden="true" /> thick: the longest chain of calls
        </li>
        <li>
          <span className="swatch weak" aria-hidden="true" /> red outline, “SPOF”: a single point of failure
        </li>
      </ul>
      <dl className="structure-facts">
        <div>
          <dt>Cycles</dt>
          <dd>
            {structure.cycles.length === 0 ? (
              'None: no service calls back into its own chain.'
            ) : (
              <ul>
                {structure.cycles.map((cycle) => (
                  <li key={cycle.join()} className="wrap-anywhere">
                    Cycle: {path([...cycle, cycle[0]!])}
                  </li>
                ))}
              </ul>
            )}
          </dd>
        </div>
        <div>
          <dt>Single points of failure</dt>
          <dd>
            {structure.single_points_of_failure.length === 0 ? (
              'None: every caller keeps a path to its callees when any one node is lost.'
            ) : (
              <ul>
                {structure.single_points_of_failure.map((point) => (
                  <li key={point.node} className="wrap-anywhere">
                    {name(point.node)}: losing it cuts {formatCount(point.cut_pairs)} caller–callee {point.cut_pairs === 1 ? 'pair' : 'pairs'}
                  </li>
                ))}
              </ul>
            )}
          </dd>
        </div>
        <div>
          <dt>Longest chain</dt>
          <dd className="wrap-anywhere">{structure.longest_chain.length ? `${path(structure.longest_chain)} (${structure.longest_chain.length} nodes)` : '—'}</dd>
        </div>
        <div>
          <dt>Entry points</dt>
          <dd className="wrap-anywhere">{structure.entry_points.map(name).join(', ') || '—'}</dd>
        </div>
        <div>
          <dt>Leaves</dt>
          <dd className="wrap-anywhere">{structure.leaves.map(name).join(', ') || '—'}</dd>
        </div>
        <div>
          <dt>Most callers (fan-in)</dt>
          <dd className="wrap-anywhere">{structure.fan_in.map((leader) => `${name(leader.node)} (${leader.count})`).join(', ') || '—'}</dd>
        </div>
        <div>
          <dt>Most callees (fan-out)</dt>
          <dd className="wrap-anywhere">{structure.fan_out.map((leader) => `${name(leader.node)} (${leader.count})`).join(', ') || '—'}</dd>
        </div>
      </dl>
    </section>
  );
}

export default function ServiceMapPage() {
  const { project } = useScope();
  const window = useTimeWindow();
  const { get, update } = useQueryParams();
  const showStructure = get('structure') === '1';
  const map = useServiceMap(project, window);
  const services = useServices(project, window);
  const structure = useServiceStructure(project, window, showStructure);
  const search = useCarriedSearch();

  const nodes = useMemo(() => new Map((map.data?.nodes ?? []).map((node) => [node.id, node])), [map.data]);
  const names = useMemo(() => new Map([...nodes].map(([id, node]) => [id, node.name])), [nodes]);
  const figures = useMemo(() => (map.data ? figuresOf(map.data, services.data?.data) : new Map<string, NodeFigures>()), [map.data, services.data]);
  const overlay = useMemo(() => (showStructure && structure.data ? overlayOf(structure.data) : undefined), [showStructure, structure.data]);
  const hrefOf = (node: MapNode) => (node.type === 'service' ? servicePath(node.name, search) : undefined);

  const nodeCell = (id: string) => {
    const node = nodes.get(id);
    if (!node) return id;
    const href = hrefOf(node);
    return (
      <span className="node-cell wrap-anywhere">
        {href ? <Link to={href}>{node.name}</Link> : node.name} <span className="muted small nowrap">({node.type === 'messaging' ? 'queue' : node.type})</span>
      </span>
    );
  };
  const columns: Column<MapEdge>[] = [
    { header: 'Caller', cell: (edge) => nodeCell(edge.source) },
    { header: 'Callee', cell: (edge) => nodeCell(edge.target) },
    { header: 'Kind', cell: (edge) => edge.kind },
    { header: 'Calls', numeric: true, cell: (edge) => formatCount(edge.calls) },
    { header: 'Errors', numeric: true, cell: (edge) => `${formatCount(edge.errors)} (${formatPercent(edge.error_rate)})` },
    { header: 'p95', numeric: true, cell: (edge) => formatDuration(edge.p95_ms) },
  ];

  return (
    <>
      <PageHeader
        title="Service map"
        description="Services, databases, queues and external hosts, and the calls between them, callers on the left."
        actions={
          <>
            <button type="button" className="toggle" aria-pressed={showStructure} onClick={() => update({ structure: showStructure ? undefined : '1' }, { replace: true })}>
              Show structure
            </button>
            <Link className="button" to={`/services${search}`}>
              Service list
            </Link>
          </>
        }
      />
      <QueryView
        query={map}
        loadingLabel="Loading the service map…"
        isEmpty={(answer) => answer.nodes.length === 0}
        empty={
          <EmptyState title="No calls seen in this window">
            <p>The map draws itself from traces: send spans from your services with an OpenTelemetry exporter, or widen the time range.</p>
            <Link to="/onboarding">Set up tracing</Link>
          </EmptyState>
        }
      >
        {(answer) => (
          <>
            {showStructure && structure.isPending && <Loading label="Loading the structure…" />}
            {showStructure && structure.isError && <ErrorNotice error={structure.error} title="The structure did not load" />}
            <ServiceMapPicture map={answer} figures={figures} overlay={overlay} hrefOf={hrefOf} />
            {showStructure && structure.data && <StructureSummary structure={structure.data} names={names} />}
            {answer.edges.length === 0 ? (
              <p className="muted">No calls between these nodes in this window.</p>
            ) : (
              <Table caption={`Calls between services (${formatCount(answer.edges.length)} edges)`} columns={columns} rows={answer.edges} rowKey={(edge) => `${edge.source}→${edge.target}:${edge.kind}`} />
            )}
          </>
        )}
      </QueryView>
    </>
  );
}
