import { useMemo, type FormEvent } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { Pager } from '../../components/Table';
import { TimeSeriesChart, type ChartSeries } from '../../components/TimeSeriesChart';
import { EmptyState, ErrorNotice, Loading, QueryView } from '../../components/states';
import { formatDuration, formatNumber, formatPercent, formatTime } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useAnomalies, useServiceTraffic, type Anomaly, type AnomalyFilters } from './api';
import './metrics.css';
import { FormField } from '../../components/FormField';

type Metric = Anomaly['metric'];
/** `unit` is the chart's: short, since the value axis has a fixed width. */
const METRICS: Record<Metric, { label: string; unit: string; format: (value: number) => string }> = {
  throughput: { label: 'Throughput', unit: '/min', format: (value) => `${formatNumber(value)} requests/min` },
  error_rate: { label: 'Error rate', unit: '%', format: (value) => formatPercent(value) },
  p95_ms: { label: 'p95 latency', unit: 'ms', format: (value) => formatDuration(value) },
  log_volume: { label: 'Log volume', unit: '/min', format: (value) => `${formatNumber(value)} logs/min` },
};
const WINDOW_MS = 5 * 60_000;
/** The detector judges a window against the 12 before it: the chart shows those and what followed. */
const BASELINE_MS = 12 * WINDOW_MS;

export default function AnomaliesPage() {
  const { get, update } = useQueryParams();
  const { project } = useScope();
  const window = useTimeWindow();
  const metric = get('metric') as Metric | undefined;
  const status = get('status') as AnomalyFilters['status'];
  const filters: AnomalyFilters = {
    ...(get('service') && { service: get('service') }),
    ...(metric && metric in METRICS && { metric }),
    ...((status === 'open' || status === 'closed') && { status }),
    ...(get('cursor') && { cursor: get('cursor') }),
  };
  const anomalies = useAnomalies(project, window, filters);
  const filterService = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    update({ service: String(new FormData(event.currentTarget).get('service') ?? '').trim() });
  };

  return (
    <>
      <PageHeader title="Anomalies" description="Throughput, error rate, p95 latency and log volume per service that left their usual band: each against the hour before it." />
      <div className="toolbar">
        <form className="inline-field metric-add" onSubmit={filterService} aria-label="Service filter">
          <label className="field">
            <span>Service</span>
            <input name="service" defaultValue={get('service') ?? ''} key={get('service') ?? ''} autoComplete="off" />
          </label>
          <button type="submit">Filter</button>
        </form>
        <FormField label="Metric">
          {(control) => (
            <select {...control} value={filters.metric ?? ''} onChange={(event) => update({ metric: event.target.value })}>
              <option value="">All metrics</option>
              {Object.entries(METRICS).map(([value, { label }]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField label="Status">
          {(control) => (
            <select {...control} value={filters.status ?? ''} onChange={(event) => update({ status: event.target.value })}>
              <option value="">Open and closed</option>
              <option value="open">Open</option>
              <option value="closed">Closed</option>
            </select>
          )}
        </FormField>
      </div>
      <QueryView
        query={anomalies}
        loadingLabel="Loading anomalies…"
        isEmpty={(answer) => answer.data.length === 0}
        empty={
          <EmptyState title="No anomalies in this window">
            <p>
              The detector compares every service's last 5 minutes with the hour before, once a minute; it needs requests or logs in at least 6 of those windows. Send traces and logs
              from your services, widen the time range or clear the filters.
            </p>
            <Link to="/onboarding">Set up a project and its DSN</Link>
          </EmptyState>
        }
      >
        {(answer) => (
          <>
            <ol className="anomaly-list">
              {answer.data.map((anomaly) => (
                <li key={anomaly.id}>
                  <AnomalyCard anomaly={anomaly} />
                </li>
              ))}
            </ol>
            <Pager nextCursor={answer.next_cursor} hasPrevious={Boolean(filters.cursor)} onNext={(cursor) => update({ cursor })} onFirst={() => update({ cursor: undefined })} />
          </>
        )}
      </QueryView>
    </>
  );
}

function AnomalyCard({ anomaly }: { anomaly: Anomaly }) {
  const metric = METRICS[anomaly.metric];
  const headingId = `anomaly-${anomaly.id}`;
  return (
    <article className="panel anomaly" aria-labelledby={headingId}>
      <header className="anomaly-header">
        <h2 id={headingId} className="wrap-anywhere">
          {anomaly.service}: {metric.label.toLowerCase()}
        </h2>
        <span className={`badge ${anomaly.ended_at ? 'resolved' : 'critical'}`}>{anomaly.ended_at ? 'Closed' : 'Open'}</span>
      </header>
      <dl className="stats">
        <div>
          <dt>Observed</dt>
          <dd>{metric.format(anomaly.observed)}</dd>
        </div>
        <div>
          <dt>Baseline</dt>
          <dd>{metric.format(anomaly.baseline)}</dd>
        </div>
        <div>
          <dt>Normal band</dt>
          <dd>
            {metric.format(anomaly.band.low)} to {metric.format(anomaly.band.high)}
          </dd>
        </div>
        <div>
          <dt>Score</dt>
          <dd>
            {formatNumber(anomaly.score)} <span className="muted small">(peak {formatNumber(anomaly.peak_score)})</span>
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd className="small">{formatTime(anomaly.started_at)}</dd>
        </div>
        <div>
          <dt>Ended</dt>
          <dd className="small">{anomaly.ended_at ? formatTime(anomaly.ended_at) : 'Still open'}</dd>
        </div>
      </dl>
      <p className="anomaly-reason wrap-anywhere">{anomaly.reason}</p>
      {anomaly.metric === 'throughput' || anomaly.metric === 'error_rate' ? (
        <TrafficAroundAnomaly anomaly={anomaly} />
      ) : (
        <p className="muted small">
          No per-service series of {metric.label.toLowerCase()} is served by the API yet, so only the detector's figures above are shown for this anomaly.
        </p>
      )}
    </article>
  );
}

/** The anomaly's service in the detector's 5-minute windows: the hour before it, and until it ended (or now). */
function TrafficAroundAnomaly({ anomaly }: { anomaly: Anomaly }) {
  const started = Date.parse(anomaly.started_at);
  const from = new Date(started - BASELINE_MS).toISOString();
  // whole windows only, up to three after the anomaly ended (or now): a partial last window would look like a drop
  const end = Math.min(anomaly.ended_at ? Date.parse(anomaly.ended_at) + 3 * WINDOW_MS : Infinity, Date.now());
  const to = new Date(started - BASELINE_MS + Math.max(13, Math.floor((end - started + BASELINE_MS) / WINDOW_MS)) * WINDOW_MS).toISOString();
  const traffic = useServiceTraffic(anomaly.project_id, from, to);
  const metric = METRICS[anomaly.metric];

  const chart = useMemo(() => {
    if (!traffic.data) return undefined;
    const service = traffic.data.series.find((candidate) => candidate.service === anomaly.service);
    const points = service?.points ?? [];
    const times = points.map((point) => Date.parse(point.t));
    const perMinute = traffic.data.step / 60;
    // the error rate as the page shows it (percent); the detector's own figures are ratios
    const scale = anomaly.metric === 'error_rate' ? 100 : 1;
    const observed = points.map((point) => (anomaly.metric === 'throughput' ? point.requests / perMinute : point.requests ? (point.errors / point.requests) * scale : null));
    const flat = (value: number) => times.map(() => value * scale);
    const series: ChartSeries[] = [
      { label: metric.label, values: observed, color: '#ef4444' },
      { label: 'Baseline', values: flat(anomaly.baseline), dashed: true, color: '#64748b' },
      { label: 'Band high', values: flat(anomaly.band.high), color: '#93c5fd', bandTo: 3 },
      { label: 'Band low', values: flat(anomaly.band.low), color: '#93c5fd' },
    ];
    return { times, series };
  }, [traffic.data, anomaly, metric.label]);

  if (traffic.isPending) return <Loading label="Loading the service's series…" />;
  if (traffic.isError) return <ErrorNotice error={traffic.error} title="The service's series did not load" />;
  return (
    <div className="anomaly-chart">
      <TimeSeriesChart title={`${anomaly.service}: ${metric.label.toLowerCase()} per 5 minutes, with the baseline and normal band`} times={chart!.times} series={chart!.series} unit={metric.unit} />
      <p className="muted small">
        {metric.label} of {anomaly.service} per 5-minute window; the dashed line is the baseline and the shaded band the normal range, as the detector last judged them.
      </p>
    </div>
  );
}
