import { useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { Link } from 'react-router';
import type { AnswerOf } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table } from '../../components/Table';
import { TimeSeriesChart } from '../../components/TimeSeriesChart';
import { formatCount, formatDuration, formatNumber, formatPercent } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow, type TimeWindow } from '../../lib/url-state';
import { useProjects } from '../projects/api';
import { useEndpointSurges, useQueryPatterns, useQueues, useSlowQueries, useTraffic, type DatabaseFilters } from './api';
import './performance.css';
import { FormField } from '../../components/FormField';

type Traffic = AnswerOf<'/v1/traffic'>;
type EndpointSurge = AnswerOf<'/v1/endpoints/surges'>['data'][number];
type SlowQuery = AnswerOf<'/v1/database/slow-queries'>['data'][number];
type QueryPattern = AnswerOf<'/v1/database/query-patterns'>['data'][number];
type Queue = AnswerOf<'/v1/queues'>['data'][number];

/** The chart draws the busiest series; the table lists them all. */
const CHARTED_SERIES = 8;

const SEND_TRACES = (what: string) => (
  <p>
    {what} <Link to="/onboarding">Set up a project</Link>
  </p>
);

function Section({ id, title, note, children }: { id: string; title: string; note?: ReactNode; children: ReactNode }) {
  return (
    <section className="panel perf-section" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {note && <p className="small muted">{note}</p>}
      {children}
    </section>
  );
}

const stepLabel = (seconds: number) => formatDuration(seconds * 1000);

function TrafficView({ traffic, byService }: { traffic: Traffic; byService: boolean }) {
  const projects = useProjects();
  const rows = useMemo(
    () =>
      traffic.series.map((series) => ({
        name: byService ? (series.service ?? 'unknown service') : (projects.data?.data.find((project) => project.id === series.project_id)?.name ?? series.project_id),
        key: `${series.project_id}:${series.service ?? ''}`,
        series,
        errors: series.points.reduce((sum, point) => sum + point.errors, 0),
      })),
    [traffic, byService, projects.data],
  );
  const times = useMemo(() => traffic.series[0]?.points.map((point) => Date.parse(point.t)) ?? [], [traffic]);
  const charted = useMemo(() => rows.slice(0, CHARTED_SERIES).map((row) => ({ label: row.name, values: row.series.points.map((point) => point.requests) })), [rows]);
  const step = stepLabel(traffic.step);
  return (
    <>
      <TimeSeriesChart title={`Requests per ${step} by ${byService ? 'service' : 'project'}`} times={times} series={charted} unit="req" />
      <Table
        caption={`Traffic by ${byService ? 'service' : 'project'}, busiest first`}
        captionHidden
        rows={rows}
        rowKey={(row) => row.key}
        columns={[
          {
            header: byService ? 'Service' : 'Project',
            cell: (row) =>
              byService ? (
                <Link className="name-cell" to={`/services/${encodeURIComponent(row.name)}?project=${row.series.project_id}`}>
                  {row.name}
                </Link>
              ) : (
                <Link className="name-cell" to={`/performance?project=${row.series.project_id}`}>
                  {row.name}
                </Link>
              ),
          },
          { header: 'Requests', numeric: true, cell: (row) => `${formatCount(row.series.requests)} req` },
          { header: 'Errors', numeric: true, cell: (row) => `${formatCount(row.errors)} err` },
          { header: 'Error rate', numeric: true, cell: (row) => formatPercent(row.series.requests ? row.errors / row.series.requests : null) },
          { header: `Busiest ${step}`, numeric: true, cell: (row) => `${formatCount(Math.max(0, ...row.series.points.map((point) => point.requests)))} req` },
        ]}
      />
    </>
  );
}

function TrafficSection({ project, window }: { project: string | undefined; window: TimeWindow }) {
  const traffic = useTraffic(project, window);
  return (
    <Section id="traffic" title={project ? 'Traffic by service' : 'Traffic by project'} note={project ? undefined : 'Pick a project to see its traffic by service.'}>
      <QueryView query={traffic} loadingLabel="Loading traffic…" isEmpty={(answer) => answer.series.every((series) => series.requests === 0)} empty={<EmptyState title="No requests in this window">{SEND_TRACES('Requests are the entry spans of your services: send traces with an OpenTelemetry exporter or a Sentry SDK.')}</EmptyState>}>
        {(answer) => <TrafficView traffic={answer} byService={Boolean(project)} />}
      </QueryView>
    </Section>
  );
}

const share = (value: { count: number; observed: number; baseline: number }) => `${formatPercent(value.observed)} (was ${formatPercent(value.baseline)})`;

const SURGE_COLUMNS = [
  {
    header: 'Endpoint',
    cell: (surge: EndpointSurge) => (
      <span className="mono wrap-anywhere endpoint">
        {surge.method && <strong>{surge.method} </strong>}
        {surge.route}
      </span>
    ),
  },
  { header: 'Service', cell: (surge: EndpointSurge) => <span className="name-cell">{surge.service}</span> },
  { header: 'Requests', numeric: true, cell: (surge: EndpointSurge) => `${formatCount(surge.requests)} req` },
  { header: 'Previous window', numeric: true, cell: (surge: EndpointSurge) => `${formatCount(surge.baseline_requests)} req` },
  { header: 'Ratio', numeric: true, cell: (surge: EndpointSurge) => `×${formatNumber(surge.ratio)}` },
  { header: '4xx share', numeric: true, cell: (surge: EndpointSurge) => share(surge.shares['4xx']) },
  {
    header: 'Why',
    cell: (surge: EndpointSurge) => (
      <ul className="reasons small">
        {surge.reasons.map((reason) => (
          <li key={reason}>{reason}</li>
        ))}
      </ul>
    ),
  },
];

function SurgesSection({ project, service, window }: { project: string | undefined; service: string | undefined; window: TimeWindow }) {
  const surges = useEndpointSurges({ project, service }, window);
  return (
    <Section id="endpoint-surges" title="Endpoint surges" note="Endpoints with 20 requests or more whose volume, or share of 4xx, 401, 403 or 429 answers, surged against the previous window of the same length.">
      <QueryView query={surges} loadingLabel="Loading endpoint surges…" isEmpty={(answer) => answer.data.length === 0} empty={<EmptyState title="No endpoint surged in this window"><p>Every endpoint's traffic is in line with the previous window.</p></EmptyState>}>
        {(answer) => <Table caption="Endpoint surges, largest first" captionHidden columns={SURGE_COLUMNS} rows={answer.data} rowKey={(surge) => `${surge.service} ${surge.method ?? ''} ${surge.route}`} />}
      </QueryView>
    </Section>
  );
}

const traceLinks = (ids: string[]) =>
  ids.length === 0 ? (
    <span className="muted">—</span>
  ) : (
    <ul className="trace-links">
      {ids.map((id) => (
        <li key={id}>
          <Link className="mono ellipsis" to={`/traces/${id}`} title={`Open trace ${id}`}>
            {id}
          </Link>
        </li>
      ))}
    </ul>
  );

const SLOW_QUERY_COLUMNS = [
  { header: 'Statement', cell: (query: SlowQuery) => <code className="statement">{query.statement}</code> },
  { header: 'System', cell: (query: SlowQuery) => query.system },
  { header: 'Services', cell: (query: SlowQuery) => <span className="name-cell">{query.services.join(', ')}</span> },
  { header: 'Calls', numeric: true, cell: (query: SlowQuery) => formatCount(query.calls) },
  { header: 'Errors', numeric: true, cell: (query: SlowQuery) => formatCount(query.errors) },
  { header: 'p50', numeric: true, cell: (query: SlowQuery) => formatDuration(query.p50_ms) },
  { header: 'p95', numeric: true, cell: (query: SlowQuery) => formatDuration(query.p95_ms) },
  { header: 'Slowest', numeric: true, cell: (query: SlowQuery) => formatDuration(query.max_ms) },
  { header: 'Total time', numeric: true, cell: (query: SlowQuery) => formatDuration(query.total_ms) },
  { header: 'Example traces', cell: (query: SlowQuery) => traceLinks(query.example_trace_ids) },
];

const NO_DATABASE_CALLS = <EmptyState title="No database calls in this window">{SEND_TRACES('Database client spans with db.system and a statement (db.statement or db.query.text), or Sentry db spans, are listed here.')}</EmptyState>;

/** Pages through a section's list; the cursors stay in the section, which starts over when its filters change. */
function useCursorTrail() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    cursor: cursors.at(-1),
    pager: (next: string | null) => <Pager nextCursor={next} hasPrevious={cursors.length > 0} onNext={(cursor) => setCursors([...cursors, cursor])} onFirst={() => setCursors([])} />,
  };
}

function SlowQueriesSection({ filters, window }: { filters: DatabaseFilters; window: TimeWindow }) {
  const { cursor, pager } = useCursorTrail();
  const queries = useSlowQueries(filters, window, cursor);
  return (
    <Section id="slow-queries" title="Slow database queries" note="Normalised statements, slowest first by p95.">
      <QueryView query={queries} loadingLabel="Loading slow queries…" isEmpty={(page) => page.data.length === 0 && !cursor} empty={NO_DATABASE_CALLS}>
        {(page) => (
          <>
            <Table caption="Slow database queries, slowest first" captionHidden columns={SLOW_QUERY_COLUMNS} rows={page.data} rowKey={(query) => `${query.system} ${query.statement}`} />
            {pager(page.next_cursor)}
          </>
        )}
      </QueryView>
    </Section>
  );
}

const PATTERN_COLUMNS = [
  { header: 'Pattern', cell: (pattern: QueryPattern) => <code className="statement">{pattern.pattern}</code> },
  { header: 'System', cell: (pattern: QueryPattern) => pattern.system },
  { header: 'Services', cell: (pattern: QueryPattern) => <span className="name-cell">{pattern.services.join(', ')}</span> },
  { header: 'Calls', numeric: true, cell: (pattern: QueryPattern) => formatCount(pattern.calls) },
  { header: 'Errors', numeric: true, cell: (pattern: QueryPattern) => formatCount(pattern.errors) },
  { header: 'Mean', numeric: true, cell: (pattern: QueryPattern) => formatDuration(pattern.mean_ms) },
  { header: 'Total time', numeric: true, cell: (pattern: QueryPattern) => formatDuration(pattern.total_ms) },
];

function QueryPatternsSection({ filters, window }: { filters: DatabaseFilters; window: TimeWindow }) {
  const { get, update } = useQueryParams();
  const sort = get('sort') === 'calls' ? 'calls' : 'total_ms';
  const { cursor, pager } = useCursorTrail();
  const patterns = useQueryPatterns({ ...filters, sort }, window, cursor);
  return (
    <Section id="query-patterns" title="Query patterns" note="Statements with literals, IN lists and VALUES rows as placeholders.">
      <div className="toolbar">
        <FormField label="Rank patterns by">
          {(control) => (
            <select {...control} value={sort} onChange={(event) => update({ sort: event.target.value === 'calls' ? 'calls' : undefined })}>
              <option value="total_ms">Total time</option>
              <option value="calls">Calls</option>
            </select>
          )}
        </FormField>
      </div>
      <QueryView query={patterns} loadingLabel="Loading query patterns…" isEmpty={(page) => page.data.length === 0 && !cursor} empty={NO_DATABASE_CALLS}>
        {(page) => (
          <>
            <Table caption={`Query patterns by ${sort === 'calls' ? 'calls' : 'total time'}`} captionHidden columns={PATTERN_COLUMNS} rows={page.data} rowKey={(pattern) => `${pattern.system} ${pattern.pattern}`} />
            {pager(page.next_cursor)}
          </>
        )}
      </QueryView>
    </Section>
  );
}

const QUEUE_COLUMNS = [
  {
    header: 'Queue',
    cell: (queue: Queue) => (
      <>
        <span className="name-cell">{queue.queue}</span>
        {queue.system && <span className="small muted"> ({queue.system})</span>}
      </>
    ),
  },
  { header: 'Producers', cell: (queue: Queue) => <span className="name-cell">{queue.producers.join(', ') || '—'}</span> },
  { header: 'Consumers', cell: (queue: Queue) => <span className="name-cell">{queue.consumers.join(', ') || '—'}</span> },
  { header: 'Published', numeric: true, cell: (queue: Queue) => `${formatCount(queue.published)} msg` },
  { header: 'Processed', numeric: true, cell: (queue: Queue) => `${formatCount(queue.processed)} msg` },
  { header: 'Failed', numeric: true, cell: (queue: Queue) => `${formatCount(queue.failed)} (${formatPercent(queue.failure_rate)})` },
  { header: 'Processing p95', numeric: true, cell: (queue: Queue) => formatDuration(queue.p95_processing_ms) },
  { header: 'Wait p95', numeric: true, cell: (queue: Queue) => formatDuration(queue.p95_wait_ms) },
  { header: 'Backlog growth', numeric: true, cell: (queue: Queue) => `${formatNumber(queue.backlog_growth_per_min)} msg/min` },
];

function QueuesSection({ project, window }: { project: string | undefined; window: TimeWindow }) {
  const queues = useQueues(project, window);
  return (
    <Section id="queues" title="Queues" note="From messaging spans: producers publish, consumers process; a growing backlog means the consumers fall behind.">
      <QueryView query={queues} loadingLabel="Loading queues…" isEmpty={(answer) => answer.data.length === 0} empty={<EmptyState title="No queues in this window">{SEND_TRACES('Producer and consumer spans with messaging.system (and messaging.destination.name) show their queues here.')}</EmptyState>}>
        {(answer) => <Table caption="Queues, busiest first" captionHidden columns={QUEUE_COLUMNS} rows={answer.data} rowKey={(queue) => `${queue.system ?? ''} ${queue.queue}`} />}
      </QueryView>
    </Section>
  );
}

/** `?service=&system=`: narrows the endpoint and database sections, as their routes take them. */
function PerformanceFilters() {
  const { get, update } = useQueryParams();
  const [service, setService] = useState(get('service') ?? '');
  const [system, setSystem] = useState(get('system') ?? '');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update({ service: service.trim(), system: system.trim() });
  };
  return (
    <form className="toolbar perf-filters" role="search" aria-label="Narrow endpoints and database calls" onSubmit={submit}>
      <label className="field">
        <span>Service</span>
        <input name="service" value={service} onChange={(event) => setService(event.target.value)} placeholder="All services" />
      </label>
      <label className="field">
        <span>Database system</span>
        <input name="system" value={system} onChange={(event) => setSystem(event.target.value)} placeholder="postgresql" />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}

export default function PerformancePage() {
  const { get } = useQueryParams();
  const { project } = useScope();
  const window = useTimeWindow();
  const service = get('service');
  const database: DatabaseFilters = { project, service, system: get('system') };
  // a section's paging starts over when what it lists changes
  const databaseKey = JSON.stringify([database, window, get('sort')]);
  return (
    <>
      <PageHeader title="Performance" description="Traffic, endpoints that surged, slow database queries and queues, from your traces." />
      <nav className="perf-contents" aria-label="Sections">
        <a href="#traffic">Traffic</a>
        <a href="#endpoint-surges">Endpoint surges</a>
        <a href="#slow-queries">Slow queries</a>
        <a href="#query-patterns">Query patterns</a>
        <a href="#queues">Queues</a>
      </nav>
      <PerformanceFilters key={`${service ?? ''}\u0000${get('system') ?? ''}`} />
      <TrafficSection project={project} window={window} />
      <SurgesSection project={project} service={service} window={window} />
      <SlowQueriesSection key={`slow ${databaseKey}`} filters={database} window={window} />
      <QueryPatternsSection key={`patterns ${databaseKey}`} filters={database} window={window} />
      <QueuesSection project={project} window={window} />
    </>
  );
}
