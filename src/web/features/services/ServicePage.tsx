import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, Loading, QueryView } from '../../components/states';
import { Table, type Column } from '../../components/Table';
import { TimeSeriesChart } from '../../components/TimeSeriesChart';
import { formatCount, formatDuration, formatNumber, formatPercent, formatTime, timeZone } from '../../lib/format';
import { useScope, useTimeWindow, useCarriedSearch } from '../../lib/url-state';
import { servicePath, useApproaching, useEndpointSurges, useServiceDependencies, useServices, useServiceTraffic, type Approaching, type Dependency, type Service } from './api';
import { HealthSummary } from './health';
import './services.css';

type Surge = NonNullable<ReturnType<typeof useEndpointSurges>['data']>['data'][number];

function Figures({ service }: { service: Service }) {
  return (
    <dl className="stats">
      <div>
        <dt>Requests</dt>
        <dd>{formatCount(service.requests)}</dd>
      </div>
      <div>
        <dt>Throughput</dt>
        <dd>{formatNumber(service.throughput_per_min)} /min</dd>
      </div>
      <div>
        <dt>Errors</dt>
        <dd>
          {formatCount(service.errors)} ({formatPercent(service.error_rate)})
        </dd>
      </div>
      <div>
        <dt>p50</dt>
        <dd>{formatDuration(service.p50_ms)}</dd>
      </div>
      <div>
        <dt>p95</dt>
        <dd>{formatDuration(service.p95_ms)}</dd>
      </div>
      <div>
        <dt>p99</dt>
        <dd>{formatDuration(service.p99_ms)}</dd>
      </div>
    </dl>
  );
}

/** Requests and errors per step, summed over the projects the service reported from. */
function TrafficChart({ name, projectIds }: { name: string; projectIds: readonly string[] }) {
  const window = useTimeWindow();
  const traffic = useServiceTraffic(name, projectIds, window);
  const series = useMemo(
    () =>
      traffic.data && [
        { label: 'Requests', values: traffic.data.requests },
        { label: 'Errors', values: traffic.data.errors, color: '#ef4444' },
      ],
    [traffic.data],
  );
  if (traffic.error) return <ErrorNotice error={traffic.error} title="Traffic did not load" />;
  if (!traffic.data || !series) return <Loading label="Loading traffic…" />;
  return <TimeSeriesChart title={`Requests and errors of ${name}, per ${formatDuration(traffic.data.stepSeconds * 1000)}`} times={traffic.data.times} series={series} unit="req" />;
}

const metricName = (row: Approaching) => (row.metric === 'error_rate' ? 'Error rate' : row.metric === 'p95_ms' ? 'p95 latency' : row.metric);
const metricValue = (row: Approaching, value: number) => (row.metric === 'error_rate' ? formatPercent(value) : row.metric === 'p95_ms' ? formatDuration(value) : formatNumber(value));
const metricSlope = (row: Approaching) =>
  row.metric === 'error_rate' ? `+${formatNumber(row.slope_per_hour * 100)} points/h` : row.metric === 'p95_ms' ? `+${formatDuration(row.slope_per_hour)}/h` : `+${formatNumber(row.slope_per_hour)}/h`;

function ApproachingSeries({ row }: { row: Approaching }) {
  const percent = row.metric === 'error_rate';
  const { times, series } = useMemo(() => {
    const scale = (value: number) => (percent ? value * 100 : value);
    return {
      times: row.points.map((point) => Date.parse(point.t)),
      series: [
        { label: metricName(row), values: row.points.map((point) => scale(point.value)) },
        { label: 'Threshold', values: row.points.map(() => scale(row.threshold)), color: '#b42318', dashed: true },
      ],
    };
  }, [row, percent]);
  return <TimeSeriesChart title={`${metricName(row)} approaching its threshold`} times={times} series={series} unit={percent ? '%' : row.metric === 'p95_ms' ? 'ms' : ''} height={160} />;
}

function DependencyTable({ caption, rows, other, search }: { caption: string; rows: Dependency[]; other: 'caller' | 'callee'; search: string }) {
  const columns: Column<Dependency>[] = [
    {
      header: other === 'callee' ? 'Callee' : 'Caller',
      cell: (row) => {
        const name = row[other];
        const type = row[`${other}_type`];
        return (
          <span className="node-cell wrap-anywhere">
            {type === 'service' ? <Link to={servicePath(name, search)}>{name}</Link> : name} <span className="muted small nowrap">({type === 'messaging' ? 'queue' : type})</span>
          </span>
        );
      },
    },
    { header: 'Kind', cell: (row) => row.kind },
    { header: 'Calls', numeric: true, cell: (row) => formatCount(row.calls) },
    { header: 'Errors', numeric: true, cell: (row) => `${formatCount(row.errors)} (${formatPercent(row.error_rate)})` },
    { header: 'p95', numeric: true, cell: (row) => formatDuration(row.p95_ms) },
  ];
  if (rows.length === 0) return <p className="muted">{other === 'callee' ? 'It called nothing that traces show in this window.' : 'No traced caller in this window.'}</p>;
  return <Table caption={caption} columns={columns} rows={rows} rowKey={(row) => `${row.caller}→${row.callee}:${row.kind}:${row[`${other}_type`]}`} />;
}

const surgeColumns: Column<Surge>[] = [
  { header: 'Endpoint', cell: (surge) => <span className="mono wrap-anywhere">{[surge.method, surge.route].filter(Boolean).join(' ')}</span> },
  { header: 'Requests', numeric: true, cell: (surge) => formatCount(surge.requests) },
  { header: 'Previous window', numeric: true, cell: (surge) => formatCount(surge.baseline_requests) },
  { header: 'Change', numeric: true, cell: (surge) => `×${formatNumber(surge.ratio)}` },
  { header: '4xx share', numeric: true, cell: (surge) => `${formatPercent(surge.shares['4xx'].observed)} (was ${formatPercent(surge.shares['4xx'].baseline)})` },
  { header: 'Why', cell: (surge) => <span className="surge-reasons">{surge.reasons.join('; ')}</span> },
];

export default function ServicePage() {
  const name = useParams().name ?? '';
  const { project } = useScope();
  const window = useTimeWindow();
  const search = useCarriedSearch();
  const services = useServices(project, window);
  const dependencies = useServiceDependencies(project, window);
  const approaching = useApproaching(project, window);
  const surges = useEndpointSurges(project, name, window);
  const service = services.data?.data.find((candidate) => candidate.name === name);
  const tracesSearch = new URLSearchParams(search);
  tracesSearch.set('service', name);

  const approachingRows = approaching.data?.data.filter((row) => row.service === name) ?? [];

  return (
    <>
      <PageHeader
        title={name}
        description="A service: what it served, what it calls and who calls it, in the chosen window."
        actions={
          <>
            <Link className="button" to={`/traces?${tracesSearch}`}>
              Its traces
            </Link>
            <Link className="button" to={`/services/map${search}`}>
              Service map
            </Link>
          </>
        }
      />
      <QueryView
        query={services}
        loadingLabel="Loading the service…"
        isEmpty={() => !service}
        empty={
          <EmptyState title={`${name} served no requests in this window`}>
            <p>Widen the time range or pick another project; a service appears once its spans arrive.</p>
            <Link to={`/services${search}`}>All services</Link> · <Link to="/onboarding">Set up tracing</Link>
          </EmptyState>
        }
      >
        {() => (
          <>
            <section className="panel" aria-labelledby="health-heading">
              <h2 id="health-heading">Health</h2>
              <HealthSummary health={service!.health} />
            </section>
            <Figures service={service!} />
            <section className="panel" aria-labelledby="traffic-heading">
              <h2 id="traffic-heading">Requests and errors</h2>
              <TrafficChart name={name} projectIds={project ? [project] : service!.project_ids} />
              <p className="muted small">
                Times in {timeZone()}. Latency percentiles (p50, p95, p99) are for the whole window above; p95 over time shows below when it climbs toward its threshold.
              </p>
            </section>
          </>
        )}
      </QueryView>
      <div className="grid-2">
        <section className="panel" aria-labelledby="calls-out-heading">
          <h2 id="calls-out-heading">Calls out</h2>
          <QueryView query={dependencies} loadingLabel="Loading dependencies…">
            {(answer) => <DependencyTable caption={`What ${name} calls`} rows={answer.data.filter((row) => row.caller === name && row.caller_type === 'service')} other="callee" search={search} />}
          </QueryView>
        </section>
        <section className="panel" aria-labelledby="calls-in-heading">
          <h2 id="calls-in-heading">Called by</h2>
          <QueryView query={dependencies} loadingLabel="Loading dependencies…">
            {(answer) => <DependencyTable caption={`What calls ${name}`} rows={answer.data.filter((row) => row.callee === name && row.callee_type === 'service')} other="caller" search={search} />}
          </QueryView>
        </section>
      </div>
      <section className="panel" aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading">Endpoints that surged</h2>
        <QueryView
          query={surges}
          loadingLabel="Loading endpoints…"
          isEmpty={(answer) => answer.data.length === 0}
          empty={<p className="muted">No endpoint of {name} surged in volume or in 4xx, 401, 403 or 429 answers against the previous window.</p>}
        >
          {(answer) => <Table caption={`Endpoints of ${name} that surged against the previous window`} columns={surgeColumns} rows={answer.data} rowKey={(surge) => `${surge.method} ${surge.route}`} />}
        </QueryView>
      </section>
      <section className="panel" aria-labelledby="approaching-heading">
        <h2 id="approaching-heading">Approaching a threshold</h2>
        {approaching.isPending ? (
          <Loading label="Loading trends…" />
        ) : approaching.isError ? (
          <ErrorNotice error={approaching.error} />
        ) : approachingRows.length === 0 ? (
          <p className="muted">Nothing of {name} is climbing toward its threshold in this window.</p>
        ) : (
          approachingRows.map((row) => (
            <article key={row.metric} className="approaching">
              <h3>{metricName(row)}</h3>
              <p>
                Now {metricValue(row, row.current)} of a {metricValue(row, row.threshold)} threshold, climbing {metricSlope(row)}; at this slope it reaches the threshold{' '}
                <time dateTime={row.eta}>{formatTime(row.eta)}</time>.
              </p>
              <ApproachingSeries row={row} />
            </article>
          ))
        )}
      </section>
    </>
  );
}
