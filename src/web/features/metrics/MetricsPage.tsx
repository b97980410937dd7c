import { useMemo, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { Table } from '../../components/Table';
import { TimeSeriesChart, type ChartSeries } from '../../components/TimeSeriesChart';
import { EmptyState, QueryView } from '../../components/states';
import { formatAgo, formatCount, formatDuration, formatNumber, formatTime } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useMetricNames, useMetricSeries, type Aggregation, type MetricName, type MetricSeries } from './api';
import { DISTRIBUTIONS, readableUnit, unitOf, withUnit } from './units';
import './metrics.css';
import { FormField } from '../../components/FormField';

const AGGREGATIONS: Aggregation[] = ['sum', 'avg', 'min', 'max', 'count', 'rate', 'p50', 'p95', 'p99'];
const PERCENTILES = new Set<Aggregation>(['p50', 'p95', 'p99']);
const STEPS = [10, 60, 300, 900, 3600, 86_400];

export default function MetricsPage() {
  const { get, params, update } = useQueryParams();
  const { project } = useScope();
  const window = useTimeWindow();
  const names = useMetricNames(project, window);
  const name = get('name');

  return (
    <>
      <PageHeader title="Metrics" description="Pick a metric, how its points combine in each step, and which services to draw as lines." />
      <QueryView
        query={names}
        loadingLabel="Loading metric names…"
        isEmpty={(answer) => answer.data.length === 0 && !name}
        empty={
          <EmptyState title="No metrics in this window">
            <p>
              Send OpenTelemetry metrics (OTLP/JSON or protobuf to the ingest port's <code>/v1/metrics</code>, with the project's public key as a Bearer token) or widen the time
              range.
            </p>
            <Link to="/onboarding">Set up a project and its DSN</Link>
          </EmptyState>
        }
      >
        {(answer) => {
          const metric = answer.data.find((candidate) => candidate.name === name);
          return (
            <>
              <FormField label="Metric">
                {(control) => (
                  <select {...control} className="metric-select" value={name ?? ''} onChange={(event) => update({ name: event.target.value, aggregation: undefined, attribute: undefined })}>
                    <option value="">Choose a metric…</option>
                    {name && !metric && <option value={name}>{name}</option>}
                    {answer.data.map((candidate) => (
                      <option key={candidate.name} value={candidate.name}>
                        {candidate.name}
                        {candidate.unit && candidate.unit !== '1' ? ` (${readableUnit(candidate.unit)})` : ''}
                      </option>
                    ))}
                  </select>
                )}
              </FormField>
              {name ? (
                <MetricView name={name} metric={metric} project={project} />
              ) : (
                <MetricNames names={answer.data} params={params} more={Boolean(answer.next_cursor)} />
              )}
            </>
          );
        }}
      </QueryView>
    </>
  );
}

/** Before a metric is picked: every name in the window, each a link that picks it. */
function MetricNames({ names, params, more }: { names: MetricName[]; params: URLSearchParams; more: boolean }) {
  const linkTo = (name: string) => {
    const next = new URLSearchParams(params);
    next.set('name', name);
    return { search: `?${next}` };
  };
  return (
    <Table
      caption={`Metrics reported in this window (${formatCount(names.length)}${more ? ', the first 200 by name' : ''})`}
      rows={names}
      rowKey={(metric) => metric.name}
      columns={[
        {
          header: 'Metric',
          cell: (metric) => (
            <Link className="wrap-anywhere" to={linkTo(metric.name)}>
              {metric.name}
            </Link>
          ),
        },
        { header: 'Type', cell: (metric) => metric.type.replace('_', ' ') },
        { header: 'Unit', cell: (metric) => readableUnit(metric.unit) || '—' },
        { header: 'Attributes', cell: (metric) => <span className="wrap-anywhere">{metric.attribute_keys.join(', ') || '—'}</span> },
        { header: 'Last seen', cell: (metric) => <span title={formatTime(metric.last_seen)}>{formatAgo(metric.last_seen)}</span> },
      ]}
    />
  );
}

function MetricView({ name, metric, project }: { name: string; metric: MetricName | undefined; project: string | undefined }) {
  const { get, params, update } = useQueryParams();
  const window = useTimeWindow();
  const requested = get('aggregation') as Aggregation | undefined;
  const aggregation = requested && AGGREGATIONS.includes(requested) ? requested : undefined;
  const stepParam = Number(get('step'));
  const step = STEPS.includes(stepParam) ? stepParam : undefined;
  const services = params.getAll('service');
  const attributes = params.getAll('attribute');
  const series = useMetricSeries({ project, window, name, services, attributes, aggregation, step });
  const answered = series.data?.[0]?.answer;
  const type = answered?.type ?? metric?.type;

  return (
    <>
      <div className="toolbar">
        <FormField label="Aggregation">
          {(control) => (
            <select {...control} value={aggregation ?? ''} onChange={(event) => update({ aggregation: event.target.value })}>
              <option value="">Default{answered && !aggregation ? ` (${answered.aggregation})` : ''}</option>
              {AGGREGATIONS.map((option) => (
                <option key={option} value={option} disabled={PERCENTILES.has(option) && type !== undefined && !DISTRIBUTIONS.has(type)}>
                  {option}
                  {PERCENTILES.has(option) ? ' (histograms)' : ''}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <FormField label="Step">
          {(control) => (
            <select {...control} value={step ?? ''} onChange={(event) => update({ step: event.target.value })}>
              <option value="">Auto{answered && !step ? ` (${formatDuration(answered.step * 1000)})` : ''}</option>
              {STEPS.map((seconds) => (
                <option key={seconds} value={seconds}>
                  {formatDuration(seconds * 1000)}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <AddToList
          label="Service"
          action="Add line"
          hint="one line per service"
          onAdd={(service) => !services.includes(service) && update({ service: [...services, service] })}
        />
        <AddToList
          label="Attribute filter"
          action="Add filter"
          hint="key:value"
          keys={metric?.attribute_keys}
          onAdd={(pair) => pair.includes(':') && !attributes.includes(pair) && update({ attribute: [...attributes, pair] })}
        />
      </div>
      {(services.length > 0 || attributes.length > 0) && (
        <ul className="metric-chips" aria-label="Lines and filters">
          {services.map((service) => (
            <li key={`service ${service}`}>
              <span className="wrap-anywhere">service {service}</span>
              <button type="button" aria-label={`Remove the line of ${service}`} onClick={() => update({ service: services.filter((item) => item !== service) })}>
                ×
              </button>
            </li>
          ))}
          {attributes.map((pair) => (
            <li key={`attribute ${pair}`}>
              <span className="wrap-anywhere">{pair}</span>
              <button type="button" aria-label={`Remove the filter ${pair}`} onClick={() => update({ attribute: attributes.filter((item) => item !== pair) })}>
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      <QueryView query={series} loadingLabel="Loading the series…">
        {(lines) => <SeriesView lines={lines} />}
      </QueryView>
    </>
  );
}

/** A labelled input whose value is added to a list in the URL (a service's line, an attribute filter). */
function AddToList({ label, action, hint, keys, onAdd }: { label: string; action: string; hint: string; keys?: string[]; onAdd: (value: string) => void }) {
  const [value, setValue] = useState('');
  const listId = `metric-${label.replace(/\W+/g, '-').toLowerCase()}-keys`;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!value.trim()) return;
    onAdd(value.trim());
    setValue('');
  };
  return (
    <form className="inline-field metric-add" onSubmit={submit} aria-label={label}>
      <label className="field">
        <span>
          {label} <span className="muted small">({hint})</span>
        </span>
        <input value={value} onChange={(event) => setValue(event.target.value)} list={keys?.length ? listId : undefined} autoComplete="off" />
      </label>
      {keys?.length ? (
        <datalist id={listId}>
          {keys.map((key) => (
            <option key={key} value={`${key}:`} />
          ))}
        </datalist>
      ) : null}
      <button type="submit">{action}</button>
    </form>
  );
}

/** The lines on one chart (their steps on one time axis), and the latest value of each in a table. */
function SeriesView({ lines }: { lines: Array<{ service: string | undefined; answer: MetricSeries }> }) {
  const first = lines[0]!.answer;
  // while another metric loads, the previous one stays on screen under its own name
  const name = first.name;
  const unit = unitOf(first.type, first.unit, first.aggregation);
  // built once per answer: the chart redraws only when the data does, however long the series
  const chart = useMemo(() => {
    const times = [...new Set(lines.flatMap((line) => line.answer.points.map((point) => Date.parse(point.t))))].sort((a, b) => a - b);
    const position = new Map(times.map((time, index) => [time, index]));
    const series: ChartSeries[] = lines.map((line) => {
      const values: Array<number | null> = new Array(times.length).fill(null);
      for (const point of line.answer.points) values[position.get(Date.parse(point.t))!] = point.value;
      return { label: line.service ?? 'All services', values };
    });
    return { times, series };
  }, [lines]);
  const latest = useMemo(
    () =>
      lines.map((line) => {
        const values = line.answer.points.filter((point) => point.value != null);
        const numbers = values.map((point) => point.value!);
        return {
          label: line.service ?? 'All services',
          latest: values.at(-1),
          low: numbers.length ? numbers.reduce((a, b) => Math.min(a, b)) : null,
          high: numbers.length ? numbers.reduce((a, b) => Math.max(a, b)) : null,
          steps: values.length,
        };
      }),
    [lines],
  );
  const show = (value: number | null | undefined) => withUnit(value, unit, formatNumber);

  if (chart.times.length === 0)
    return (
      <EmptyState title="No points in this window">
        <p>Nothing matched {name} with these lines and filters in this window: widen the time range, remove a filter, or check the service's name.</p>
      </EmptyState>
    );
  return (
    <>
      <section className="panel" aria-labelledby="metric-chart-title">
        <h2 id="metric-chart-title" className="wrap-anywhere">
          {name}
        </h2>
        <p className="muted small">
          {first.type.replace('_', ' ')} · {first.aggregation} per {formatDuration(first.step * 1000)} step{unit ? ` · ${unit}` : ''} · {formatTime(first.from)} to {formatTime(first.to)}
        </p>
        {/* the chart's value axis has a fixed width: a long unit would cut its numbers off, and is named just above */}
        <TimeSeriesChart title={`${name}, ${first.aggregation} per step`} times={chart.times} series={chart.series} unit={unit.length <= 4 ? unit : ''} height={280} />
      </section>
      <Table
        caption={`Latest ${first.aggregation} of each line`}
        rows={latest}
        rowKey={(row) => row.label}
        columns={[
          { header: 'Line', cell: (row) => row.label },
          { header: 'Latest', numeric: true, cell: (row) => show(row.latest?.value) },
          { header: 'Step start', cell: (row) => <span className="nowrap">{formatTime(row.latest?.t)}</span> },
          { header: 'Lowest step', numeric: true, cell: (row) => show(row.low) },
          { header: 'Highest step', numeric: true, cell: (row) => show(row.high) },
          { header: 'Steps with data', numeric: true, cell: (row) => formatCount(row.steps) },
        ]}
      />
    </>
  );
}
