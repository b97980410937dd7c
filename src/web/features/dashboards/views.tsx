import { useMemo, type ReactNode } from 'react';
import { Link } from 'react-router';
import type { UseQueryResult } from '@tanstack/react-query';
import type { AnswerOf, QueryOf } from '../../api/client';
import { QueryView } from '../../components/states';
import { Table, type Column } from '../../components/Table';
import { TimeSeriesChart } from '../../components/TimeSeriesChart';
import { formatAgo, formatCount, formatDuration, formatNumber, formatPercent, formatTime } from '../../lib/format';
import type { TimeWindow } from '../../lib/url-state';
import { useIssues } from '../issues/api';
import { useLogLines, useLogPatterns, useLogSurges } from '../logs/api';
import { useAnomalies, useMetricNames, useMetricSeries } from '../metrics/api';
import { readableUnit, unitOf } from '../metrics/units';
import { useEndpointSurges, useQueryPatterns, useQueues, useSlowQueries, useTraffic } from '../performance/api';
import { useProjects } from '../projects/api';
import { servicePath, useApproaching, useServiceMap, useServices } from '../services/api';
import { useTraces } from '../traces/api';
import { useAlerts } from '../alerts/api';
import { useCronChecks, useUptimeMonitors } from '../monitors/api';
import type { ViewName, WidgetType } from './api';

/** A widget's parameters as saved: the view route's query parameters (text, numbers, booleans or lists). */
export type Params = Readonly<Record<string, unknown>>;

/** What the top bar gives every widget: the project (the top bar's, else the widget's own) and the window. */
export interface WidgetScope {
  project: string | undefined;
  window: TimeWindow;
}

interface BodyProps {
  params: Params;
  scope: WidgetScope;
  type: WidgetType;
  title: string;
  /** Pixels the widget's body has for a chart. */
  height: number;
}

/** A parameter the "Add a widget" form asks for: free text, or one of `choices`. */
export interface ParamField {
  name: string;
  label: string;
  choices?: readonly string[];
  required?: boolean;
  placeholder?: string;
  /** Offer the metric names reported in the window. */
  metricNames?: boolean;
}

export interface ViewSpec {
  label: string;
  /** What the widget shows, for the form. */
  description: string;
  fields: readonly ParamField[];
  /** Drawn over time: a chart, or a table of its points. */
  chart?: boolean;
  Body: (props: BodyProps) => ReactNode;
}

/** A parameter's text (the first of a list), or nothing. */
export function paramText(params: Params, key: string): string | undefined {
  const value = params[key];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === null || first === '' ? undefined : String(first);
}

const paramTexts = (params: Params, key: string): string[] => {
  const value = params[key];
  return value === undefined || value === null ? [] : (Array.isArray(value) ? value : [value]).map(String);
};

/** A saved enumerated parameter, when it is one the route takes (the API checked it when it was saved). */
const paramChoice = <T extends string>(params: Params, key: string, choices: readonly T[]): T | undefined => choices.find((choice) => choice === paramText(params, key));

/** The rows a widget shows: its `limit` parameter caps what the read page's hook answers. */
function firstRows<T>(rows: readonly T[], params: Params): readonly T[] {
  const limit = Number(paramText(params, 'limit'));
  return Number.isInteger(limit) && limit > 0 ? rows.slice(0, limit) : rows;
}

const Empty = ({ children }: { children: ReactNode }) => <p className="widget-empty">{children}</p>;

/** A view's answer as a table in the widget, or its loading, error (in place) or empty state. */
function Rows<T, Row>({ query, rows, caption, columns, rowKey, params, empty }: { query: UseQueryResult<T>; rows: (data: T) => readonly Row[]; caption: string; columns: Column<Row>[]; rowKey: (row: Row) => string; params: Params; empty: string }) {
  return (
    <QueryView query={query} isEmpty={(data) => rows(data).length === 0} empty={<Empty>{empty}</Empty>}>
      {(data) => <Table caption={caption} captionHidden columns={columns} rows={firstRows(rows(data), params)} rowKey={rowKey} />}
    </QueryView>
  );
}

const Badge = ({ value, tone = value }: { value: string; tone?: string }) => <span className={`badge ${tone}`}>{value}</span>;
const Ago = ({ time }: { time: string | null }) => <span title={formatTime(time)}>{formatAgo(time)}</span>;
const Name = ({ children }: { children: ReactNode }) => <span className="widget-name">{children}</span>;

type IssueQuery = QueryOf<'/v1/issues'>;
const ISSUE_STATUSES = ['unresolved', 'resolved', 'ignored'] as const satisfies ReadonlyArray<IssueQuery['status']>;
const ISSUE_LEVELS = ['fatal', 'error', 'warning', 'info', 'debug'] as const satisfies ReadonlyArray<IssueQuery['level']>;
const ISSUE_SORTS = ['last_seen', 'first_seen', 'events', 'users'] as const satisfies ReadonlyArray<IssueQuery['sort']>;
type Issue = AnswerOf<'/v1/issues'>['data'][number];

function IssuesBody({ params, scope, title }: BodyProps) {
  const filters = { project: scope.project, status: paramChoice(params, 'status', ISSUE_STATUSES), level: paramChoice(params, 'level', ISSUE_LEVELS), sort: paramChoice(params, 'sort', ISSUE_SORTS), environment: paramText(params, 'environment'), release: paramText(params, 'release'), q: paramText(params, 'q') };
  const query = useIssues(filters, scope.window, undefined);
  const columns: Column<Issue>[] = [
    {
      header: 'Issue',
      cell: (issue) => (
        <Link className="widget-name" to={`/issues/${issue.id}`}>
          {issue.title}
        </Link>
      ),
    },
    { header: 'Events', numeric: true, cell: (issue) => formatCount(issue.count) },
    { header: 'Last seen', cell: (issue) => <Ago time={issue.last_seen} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(issue) => issue.id} params={params} empty="No issues in this window." />;
}

type TraceQuery = QueryOf<'/v1/traces'>;
const SPAN_KINDS = ['server', 'client', 'producer', 'consumer', 'internal'] as const satisfies ReadonlyArray<TraceQuery['kind']>;
const SPAN_STATUSES = ['error', 'ok', 'unset'] as const satisfies ReadonlyArray<TraceQuery['status']>;
type TraceSummary = AnswerOf<'/v1/traces'>['data'][number];

function TracesBody({ params, scope, title }: BodyProps) {
  const minDuration = Number(paramText(params, 'min_duration_ms'));
  const httpStatus = Number(paramText(params, 'http_status'));
  const filters = {
    project: scope.project,
    service: paramText(params, 'service'),
    name: paramText(params, 'name'),
    kind: paramChoice(params, 'kind', SPAN_KINDS),
    status: paramChoice(params, 'status', SPAN_STATUSES),
    ...(Number.isFinite(minDuration) && minDuration > 0 && { min_duration_ms: minDuration }),
    ...(Number.isInteger(httpStatus) && httpStatus > 0 && { http_status: httpStatus }),
    ...(paramTexts(params, 'attribute').length && { attribute: paramTexts(params, 'attribute') }),
  };
  const query = useTraces(filters, scope.window, undefined);
  const columns: Column<TraceSummary>[] = [
    {
      header: 'Trace',
      cell: (trace) => (
        <Link className="widget-name" to={`/traces/${trace.trace_id}`}>
          {[trace.root_service, trace.root_name].filter(Boolean).join(' · ') || trace.trace_id}
        </Link>
      ),
    },
    { header: 'Duration', numeric: true, cell: (trace) => formatDuration(trace.duration_ms) },
    { header: 'Errors', numeric: true, cell: (trace) => formatCount(trace.error_count) },
    { header: 'Started', cell: (trace) => <Ago time={trace.start} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(trace) => trace.trace_id} params={params} empty="No traces in this window." />;
}

type Service = AnswerOf<'/v1/services'>['data'][number];

function ServicesBody({ params, scope, title }: BodyProps) {
  const query = useServices(scope.project, scope.window);
  const columns: Column<Service>[] = [
    {
      header: 'Service',
      cell: (service) => (
        <Link className="widget-name" to={servicePath(service.name)}>
          {service.name}
        </Link>
      ),
    },
    { header: 'Health', cell: (service) => <Badge value={service.health.status} /> },
    { header: 'Requests', numeric: true, cell: (service) => `${formatCount(service.requests)} req` },
    { header: 'Error rate', numeric: true, cell: (service) => formatPercent(service.error_rate) },
    { header: 'p95', numeric: true, cell: (service) => formatDuration(service.p95_ms) },
  ];
  return <Rows query={query} rows={(answer) => answer.data} caption={title} columns={columns} rowKey={(service) => service.name} params={params} empty="No service served requests in this window." />;
}

type ServiceMap = AnswerOf<'/v1/services/map'>;
type MapEdge = ServiceMap['edges'][number];

function ServiceMapBody({ params, scope, title }: BodyProps) {
  const query = useServiceMap(scope.project, scope.window);
  const names = useMemo(() => new Map((query.data?.nodes ?? []).map((node) => [node.id, node.name])), [query.data]);
  const columns: Column<MapEdge>[] = [
    {
      header: 'Call',
      cell: (edge) => (
        <Name>
          {names.get(edge.source) ?? edge.source} → {names.get(edge.target) ?? edge.target}
        </Name>
      ),
    },
    { header: 'Calls', numeric: true, cell: (edge) => formatCount(edge.calls) },
    { header: 'Error rate', numeric: true, cell: (edge) => formatPercent(edge.error_rate) },
    { header: 'p95', numeric: true, cell: (edge) => formatDuration(edge.p95_ms) },
  ];
  return <Rows query={query} rows={(map) => [...map.edges].sort((a, b) => b.calls - a.calls)} caption={title} columns={columns} rowKey={(edge) => `${edge.source}>${edge.target}:${edge.kind}`} params={params} empty="No calls between services in this window." />;
}

type Approaching = AnswerOf<'/v1/services/approaching'>['data'][number];

function ApproachingBody({ params, scope, title }: BodyProps) {
  const query = useApproaching(scope.project, scope.window);
  const columns: Column<Approaching>[] = [
    { header: 'Service', cell: (item) => <Name>{item.service}</Name> },
    { header: 'Metric', cell: (item) => <Name>{item.metric}</Name> },
    { header: 'Now', numeric: true, cell: (item) => formatNumber(item.current) },
    { header: 'Threshold', numeric: true, cell: (item) => formatNumber(item.threshold) },
    { header: 'Reaches it', cell: (item) => <Ago time={item.eta} /> },
  ];
  return <Rows query={query} rows={(answer) => answer.data} caption={title} columns={columns} rowKey={(item) => `${item.kind}:${item.service}:${item.metric}`} params={params} empty="Nothing is climbing toward its threshold." />;
}

type TrafficSeries = AnswerOf<'/v1/traffic'>['series'][number];

function TrafficBody({ params, scope, type, title, height }: BodyProps) {
  const query = useTraffic(scope.project, scope.window);
  const projects = useProjects();
  const projectName = (id: string) => projects.data?.data.find((project) => project.id === id)?.name ?? id;
  const chart = useMemo(() => {
    const series = query.data?.series ?? [];
    const times = series[0]?.points.map((point) => Date.parse(point.t)) ?? [];
    const sum = (pick: 'requests' | 'errors') => times.map((_, index) => series.reduce((total, entry) => total + (entry.points[index]?.[pick] ?? 0), 0));
    return { times, lines: [{ label: 'Requests', values: sum('requests') }, { label: 'Errors', values: sum('errors') }] };
  }, [query.data]);
  if (type === 'timeseries') {
    return (
      <QueryView query={query} isEmpty={(answer) => answer.series.every((series) => series.requests === 0)} empty={<Empty>No requests in this window.</Empty>}>
        {(answer) => <TimeSeriesChart title={`${title}, per ${formatDuration(answer.step * 1000)}`} times={chart.times} series={chart.lines} unit="req" height={height} />}
      </QueryView>
    );
  }
  const columns: Column<TrafficSeries>[] = [
    { header: scope.project ? 'Service' : 'Project', cell: (series) => <Name>{scope.project ? (series.service ?? 'unknown service') : projectName(series.project_id)}</Name> },
    { header: 'Requests', numeric: true, cell: (series) => `${formatCount(series.requests)} req` },
    { header: 'Errors', numeric: true, cell: (series) => `${formatCount(series.points.reduce((sum, point) => sum + point.errors, 0))} err` },
  ];
  return <Rows query={query} rows={(answer) => answer.series.filter((series) => series.requests > 0)} caption={title} columns={columns} rowKey={(series) => `${series.project_id}:${series.service ?? ''}`} params={params} empty="No requests in this window." />;
}

type Queue = AnswerOf<'/v1/queues'>['data'][number];

function QueuesBody({ params, scope, title }: BodyProps) {
  const query = useQueues(scope.project, scope.window);
  const columns: Column<Queue>[] = [
    { header: 'Queue', cell: (queue) => <Name>{queue.queue}</Name> },
    { header: 'Processed', numeric: true, cell: (queue) => formatCount(queue.processed) },
    { header: 'Failure rate', numeric: true, cell: (queue) => formatPercent(queue.failure_rate) },
    { header: 'p95 wait', numeric: true, cell: (queue) => formatDuration(queue.p95_wait_ms) },
  ];
  return <Rows query={query} rows={(answer) => answer.data} caption={title} columns={columns} rowKey={(queue) => `${queue.system ?? ''}:${queue.queue}`} params={params} empty="No messaging spans in this window." />;
}

type AnomalyQuery = QueryOf<'/v1/anomalies'>;
const ANOMALY_METRICS = ['throughput', 'error_rate', 'p95_ms', 'log_volume'] as const satisfies ReadonlyArray<AnomalyQuery['metric']>;
const ANOMALY_STATUSES = ['open', 'closed'] as const satisfies ReadonlyArray<AnomalyQuery['status']>;
type Anomaly = AnswerOf<'/v1/anomalies'>['data'][number];

function AnomaliesBody({ params, scope, title }: BodyProps) {
  const query = useAnomalies(scope.project, scope.window, { service: paramText(params, 'service'), metric: paramChoice(params, 'metric', ANOMALY_METRICS), status: paramChoice(params, 'status', ANOMALY_STATUSES) });
  const columns: Column<Anomaly>[] = [
    { header: 'Service', cell: (anomaly) => <Name>{anomaly.service}</Name> },
    { header: 'Metric', cell: (anomaly) => anomaly.metric.replace('_', ' ') },
    { header: 'Observed', numeric: true, cell: (anomaly) => `${formatNumber(anomaly.observed)} (was ${formatNumber(anomaly.baseline)})` },
    { header: 'Started', cell: (anomaly) => <Ago time={anomaly.started_at} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(anomaly) => anomaly.id} params={params} empty="No anomaly in this window." />;
}

type EndpointSurge = AnswerOf<'/v1/endpoints/surges'>['data'][number];

function EndpointSurgesBody({ params, scope, title }: BodyProps) {
  const query = useEndpointSurges({ project: scope.project, service: paramText(params, 'service') }, scope.window);
  const columns: Column<EndpointSurge>[] = [
    { header: 'Endpoint', cell: (surge) => <Name>{[surge.method, surge.route].filter(Boolean).join(' ')}</Name> },
    { header: 'Service', cell: (surge) => <Name>{surge.service}</Name> },
    { header: 'Requests', numeric: true, cell: (surge) => `${formatCount(surge.requests)} req` },
    { header: 'Ratio', numeric: true, cell: (surge) => `×${formatNumber(surge.ratio)}` },
  ];
  return <Rows query={query} rows={(answer) => answer.data} caption={title} columns={columns} rowKey={(surge) => `${surge.service} ${surge.method ?? ''} ${surge.route}`} params={params} empty="No endpoint surged in this window." />;
}

const QUERY_SORTS = ['total_ms', 'calls'] as const satisfies ReadonlyArray<QueryOf<'/v1/database/query-patterns'>['sort']>;
type SlowQuery = AnswerOf<'/v1/database/slow-queries'>['data'][number];
type QueryPattern = AnswerOf<'/v1/database/query-patterns'>['data'][number];

const databaseFilters = (params: Params, scope: WidgetScope) => ({ project: scope.project, service: paramText(params, 'service'), system: paramText(params, 'system') });

function SlowQueriesBody({ params, scope, title }: BodyProps) {
  const query = useSlowQueries(databaseFilters(params, scope), scope.window, undefined);
  const columns: Column<SlowQuery>[] = [
    { header: 'Statement', cell: (row) => <code className="widget-statement">{row.statement}</code> },
    { header: 'Calls', numeric: true, cell: (row) => formatCount(row.calls) },
    { header: 'p95', numeric: true, cell: (row) => formatDuration(row.p95_ms) },
    { header: 'Total', numeric: true, cell: (row) => formatDuration(row.total_ms) },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(row) => `${row.system}:${row.statement}`} params={params} empty="No database calls in this window." />;
}

function QueryPatternsBody({ params, scope, title }: BodyProps) {
  const query = useQueryPatterns({ ...databaseFilters(params, scope), sort: paramChoice(params, 'sort', QUERY_SORTS) }, scope.window, undefined);
  const columns: Column<QueryPattern>[] = [
    { header: 'Pattern', cell: (row) => <code className="widget-statement">{row.pattern}</code> },
    { header: 'Calls', numeric: true, cell: (row) => formatCount(row.calls) },
    { header: 'Mean', numeric: true, cell: (row) => formatDuration(row.mean_ms) },
    { header: 'Total', numeric: true, cell: (row) => formatDuration(row.total_ms) },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(row) => `${row.system}:${row.pattern}`} params={params} empty="No database calls in this window." />;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const satisfies ReadonlyArray<QueryOf<'/v1/logs'>['level']>;
type LogLine = AnswerOf<'/v1/logs'>['data'][number];

function LogsBody({ params, scope, title }: BodyProps) {
  const filters = { project: scope.project, service: paramText(params, 'service'), level: paramChoice(params, 'level', LOG_LEVELS), trace_id: paramText(params, 'trace_id'), q: paramText(params, 'q'), ...(paramTexts(params, 'attribute').length && { attribute: paramTexts(params, 'attribute') }) };
  const query = useLogLines(filters, scope.window, undefined, false);
  const columns: Column<LogLine>[] = [
    { header: 'Time', cell: (line) => <span className="nowrap">{formatTime(line.timestamp, 'time')}</span> },
    { header: 'Level', cell: (line) => <Badge value={line.level} /> },
    { header: 'Service', cell: (line) => <Name>{line.service}</Name> },
    { header: 'Message', cell: (line) => <span className="widget-message">{line.body}</span> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(line) => line.id} params={params} empty="No log lines in this window." />;
}

type LogPattern = AnswerOf<'/v1/logs/patterns'>['data'][number];
type LogSurge = AnswerOf<'/v1/logs/surges'>['data'][number];

function LogPatternsBody({ params, scope, title }: BodyProps) {
  const query = useLogPatterns({ project: scope.project, service: paramText(params, 'service') }, scope.window, undefined);
  const columns: Column<LogPattern>[] = [
    { header: 'Pattern', cell: (pattern) => <code className="widget-statement">{pattern.template}</code> },
    { header: 'Lines', numeric: true, cell: (pattern) => formatCount(pattern.count) },
    { header: 'Services', cell: (pattern) => <Name>{pattern.services.join(', ')}</Name> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(pattern) => pattern.id} params={params} empty="No log lines in this window." />;
}

function LogSurgesBody({ params, scope, title }: BodyProps) {
  const query = useLogSurges({ project: scope.project, service: paramText(params, 'service') }, scope.window);
  const columns: Column<LogSurge>[] = [
    { header: 'Surge', cell: (surge) => (surge.pattern ? <code className="widget-statement">{surge.pattern}</code> : <Name>{surge.service}</Name>) },
    { header: 'Lines', numeric: true, cell: (surge) => `${formatCount(surge.observed)} (was ${formatCount(surge.baseline)})` },
    { header: 'Why', cell: (surge) => <span className="widget-message">{surge.reason}</span> },
  ];
  return <Rows query={query} rows={(answer) => answer.data} caption={title} columns={columns} rowKey={(surge) => `${surge.kind}:${surge.service ?? ''}:${surge.pattern_id ?? ''}`} params={params} empty="No log volume surged in this window." />;
}

type MetricName = AnswerOf<'/v1/metrics/names'>['data'][number];
const AGGREGATIONS = ['avg', 'sum', 'min', 'max', 'count', 'rate', 'p50', 'p95', 'p99'] as const satisfies ReadonlyArray<QueryOf<'/v1/metrics/series'>['aggregation']>;

function MetricNamesBody({ params, scope, title }: BodyProps) {
  const query = useMetricNames(scope.project, scope.window);
  const columns: Column<MetricName>[] = [
    { header: 'Metric', cell: (metric) => <Name>{metric.name}</Name> },
    { header: 'Type', cell: (metric) => metric.type.replace('_', ' ') },
    { header: 'Unit', cell: (metric) => readableUnit(metric.unit) || '—' },
    { header: 'Last seen', cell: (metric) => <Ago time={metric.last_seen} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(metric) => metric.name} params={params} empty="No metric reported in this window." />;
}

type Point = { time: number; values: Array<number | null> };

function MetricSeriesBody({ params, scope, type, title, height }: BodyProps) {
  const service = paramText(params, 'service');
  const step = Number(paramText(params, 'step'));
  const query = useMetricSeries({
    project: scope.project,
    window: scope.window,
    name: paramText(params, 'name'),
    services: service ? [service] : [],
    attributes: paramTexts(params, 'attribute'),
    aggregation: paramChoice(params, 'aggregation', AGGREGATIONS),
    step: Number.isInteger(step) && step > 0 ? step : undefined,
  });
  const drawn = useMemo(() => {
    const lines = query.data ?? [];
    const times = lines[0]?.answer.points.map((point) => Date.parse(point.t)) ?? [];
    return {
      times,
      unit: lines[0] ? unitOf(lines[0].answer.type, lines[0].answer.unit, lines[0].answer.aggregation) : '',
      series: lines.map((line) => ({ label: `${line.answer.aggregation}${line.service ? ` · ${line.service}` : ''}`, values: line.answer.points.map((point) => point.value) })),
      points: times.map((time, index): Point => ({ time, values: lines.map((line) => line.answer.points[index]?.value ?? null) })),
    };
  }, [query.data]);
  return (
    <QueryView query={query} isEmpty={() => drawn.times.length === 0} empty={<Empty>No points in this window.</Empty>}>
      {() =>
        type === 'timeseries' ? (
          <TimeSeriesChart title={title} times={drawn.times} series={drawn.series} unit={drawn.unit} height={height} />
        ) : (
          <Table
            caption={title}
            captionHidden
            rows={[...drawn.points].reverse()}
            rowKey={(point) => String(point.time)}
            columns={[
              { header: 'Time', cell: (point) => formatTime(point.time) },
              ...drawn.series.map((line, index) => ({ header: line.label, numeric: true, cell: (point: Point) => `${formatNumber(point.values[index])}${drawn.unit ? ` ${drawn.unit}` : ''}` })),
            ]}
          />
        )
      }
    </QueryView>
  );
}

type AlertQuery = QueryOf<'/v1/alerts'>;
const ALERT_KINDS = ['issue.new', 'issue.regression', 'cron.down', 'uptime.down', 'uptime.tls_expiring', 'anomaly', 'endpoint.surge', 'log.surge', 'deployment.degraded'] as const satisfies ReadonlyArray<AlertQuery['kind']>;
const ALERT_STATUSES = ['open', 'resolved'] as const satisfies ReadonlyArray<AlertQuery['status']>;
type Alert = AnswerOf<'/v1/alerts'>['data'][number];

function AlertsBody({ params, scope, title }: BodyProps) {
  const query = useAlerts({ project: scope.project, kind: paramChoice(params, 'kind', ALERT_KINDS), status: paramChoice(params, 'status', ALERT_STATUSES) }, scope.window, undefined);
  const columns: Column<Alert>[] = [
    { header: 'Alert', cell: (alert) => <Name>{alert.title}</Name> },
    { header: 'Status', cell: (alert) => <Badge value={alert.status} tone={alert.status === 'open' ? 'critical' : 'resolved'} /> },
    { header: 'Opened', cell: (alert) => <Ago time={alert.opened_at} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(alert) => alert.id} params={params} empty="No alert opened in this window." />;
}

const MONITOR_STATES = ['pending', 'up', 'down', 'paused'] as const satisfies ReadonlyArray<QueryOf<'/v1/uptime/monitors'>['state']>;
const CHECK_STATES = ['new', 'up', 'late', 'down', 'paused'] as const satisfies ReadonlyArray<QueryOf<'/v1/cron/checks'>['state']>;
/** A monitor's or check's state in the shared badge colours. */
const STATE_TONE: Record<string, string> = { up: 'ok', down: 'critical', late: 'warning' };
type Monitor = AnswerOf<'/v1/uptime/monitors'>['data'][number];
type Check = AnswerOf<'/v1/cron/checks'>['data'][number];

function UptimeBody({ params, scope, title }: BodyProps) {
  const query = useUptimeMonitors({ project: scope.project, state: paramChoice(params, 'state', MONITOR_STATES) }, undefined);
  const columns: Column<Monitor>[] = [
    {
      header: 'Monitor',
      cell: (monitor) => (
        <Link className="widget-name" to={`/monitors/uptime/${monitor.id}`}>
          {monitor.name}
        </Link>
      ),
    },
    { header: 'State', cell: (monitor) => <Badge value={monitor.state} tone={STATE_TONE[monitor.state]} /> },
    { header: 'Last checked', cell: (monitor) => <Ago time={monitor.last_checked_at} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(monitor) => monitor.id} params={params} empty="No uptime monitor yet." />;
}

function CronBody({ params, scope, title }: BodyProps) {
  const query = useCronChecks({ project: scope.project, state: paramChoice(params, 'state', CHECK_STATES) }, undefined);
  const columns: Column<Check>[] = [
    {
      header: 'Check',
      cell: (check) => (
        <Link className="widget-name" to={`/monitors/cron/${check.id}`}>
          {check.name}
        </Link>
      ),
    },
    { header: 'State', cell: (check) => <Badge value={check.state} tone={STATE_TONE[check.state]} /> },
    { header: 'Last ping', cell: (check) => <Ago time={check.last_checkin_at} /> },
    { header: 'Next expected', cell: (check) => <Ago time={check.next_expected_at} /> },
  ];
  return <Rows query={query} rows={(page) => page.data} caption={title} columns={columns} rowKey={(check) => check.id} params={params} empty="No cron check yet." />;
}

const service = { name: 'service', label: 'Service', placeholder: 'Every service' } as const;

/** Every view the API lets a widget show, as the dashboard draws it and asks for its parameters. */
export const VIEWS: Record<ViewName, ViewSpec> = {
  issues: {
    label: 'Issues',
    description: 'The issue list: title, events and when each was last seen.',
    fields: [
      { name: 'status', label: 'Status', choices: ISSUE_STATUSES },
      { name: 'level', label: 'Level', choices: ISSUE_LEVELS },
      { name: 'sort', label: 'Sort by', choices: ISSUE_SORTS },
      { name: 'q', label: 'Search words', placeholder: 'Title or culprit' },
    ],
    Body: IssuesBody,
  },
  traces: {
    label: 'Traces',
    description: 'Recent traces with their duration and errors.',
    fields: [service, { name: 'status', label: 'Span status', choices: SPAN_STATUSES }, { name: 'kind', label: 'Span kind', choices: SPAN_KINDS }, { name: 'min_duration_ms', label: 'Slower than (ms)', placeholder: 'e.g. 500' }],
    Body: TracesBody,
  },
  services: { label: 'Services', description: 'Each service with its health, requests, error rate and p95.', fields: [], Body: ServicesBody },
  'services.map': { label: 'Service map', description: 'The calls between services, databases and queues, busiest first.', fields: [], Body: ServiceMapBody },
  'services.approaching': { label: 'Approaching thresholds', description: 'Error rates, latencies and gauges climbing toward their threshold, and when they reach it.', fields: [], Body: ApproachingBody },
  traffic: { label: 'Traffic', description: 'Requests and errors over time.', fields: [], chart: true, Body: TrafficBody },
  queues: { label: 'Queues', description: 'Messages processed and failed, and the p95 wait, per queue.', fields: [], Body: QueuesBody },
  anomalies: {
    label: 'Anomalies',
    description: 'What the detector found, with the observed value and its baseline.',
    fields: [service, { name: 'metric', label: 'Metric', choices: ANOMALY_METRICS }, { name: 'status', label: 'Status', choices: ANOMALY_STATUSES }],
    Body: AnomaliesBody,
  },
  'endpoints.surges': { label: 'Endpoint surges', description: 'Endpoints whose volume or share of refusals surged.', fields: [service], Body: EndpointSurgesBody },
  'database.slow_queries': { label: 'Slow queries', description: 'Database statements, slowest first.', fields: [service, { name: 'system', label: 'Database system', placeholder: 'e.g. postgresql' }], Body: SlowQueriesBody },
  'database.query_patterns': {
    label: 'Query patterns',
    description: 'Statements grouped into patterns, by total time or calls.',
    fields: [service, { name: 'system', label: 'Database system', placeholder: 'e.g. postgresql' }, { name: 'sort', label: 'Sort by', choices: QUERY_SORTS }],
    Body: QueryPatternsBody,
  },
  logs: {
    label: 'Logs',
    description: 'The newest log lines.',
    fields: [service, { name: 'level', label: 'Level', choices: LOG_LEVELS }, { name: 'q', label: 'Search words', placeholder: 'Words in the message' }],
    Body: LogsBody,
  },
  'logs.patterns': { label: 'Log patterns', description: 'Recurring shapes of log lines and how often each came.', fields: [service], Body: LogPatternsBody },
  'logs.surges': { label: 'Log surges', description: 'Services and patterns whose log volume surged, and new patterns.', fields: [service], Body: LogSurgesBody },
  'metrics.names': { label: 'Metric names', description: 'The metrics reported, with their type and unit.', fields: [], Body: MetricNamesBody },
  'metrics.series': {
    label: 'Metric',
    description: "One metric's values over time.",
    fields: [{ name: 'name', label: 'Metric name', required: true, metricNames: true, placeholder: 'e.g. http.server.duration' }, { name: 'aggregation', label: 'Aggregation', choices: AGGREGATIONS }, service],
    chart: true,
    Body: MetricSeriesBody,
  },
  alerts: {
    label: 'Alerts',
    description: 'Alerts opened in the window, and whether they are still open.',
    fields: [{ name: 'kind', label: 'Kind', choices: ALERT_KINDS }, { name: 'status', label: 'Status', choices: ALERT_STATUSES }],
    Body: AlertsBody,
  },
  'uptime.monitors': { label: 'Uptime monitors', description: 'Each monitor and whether it is up.', fields: [{ name: 'state', label: 'State', choices: MONITOR_STATES }], Body: UptimeBody },
  'cron.checks': { label: 'Cron checks', description: 'Each cron check, its last ping and the next one expected.', fields: [{ name: 'state', label: 'State', choices: CHECK_STATES }], Body: CronBody },
};

/** The views in the order the form offers them. */
export const VIEW_NAMES = Object.keys(VIEWS) as ViewName[];

export const isViewName = (view: string): view is ViewName => Object.hasOwn(VIEWS, view);
