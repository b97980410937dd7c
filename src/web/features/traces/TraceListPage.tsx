import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { Pager, Table, type Column } from '../../components/Table';
import { EmptyState, QueryView } from '../../components/states';
import { AttributeFilters } from '../../components/AttributeFilters';
import { ChoiceField } from '../../components/ChoiceField';
import { formatCount, formatDuration, formatTime } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useTraces, type TraceFilters, type TraceSummary } from './api';
import { ErrorMark } from './ErrorMark';
import './traces.css';

const KINDS = ['server', 'client', 'producer', 'consumer', 'internal'] as const;
const STATUSES = ['error', 'ok', 'unset'] as const;
type Kind = (typeof KINDS)[number];
type Status = (typeof STATUSES)[number];

const oneOf = <T extends string>(values: readonly T[], value: string | undefined) => (values.includes(value as T) ? (value as T) : undefined);
const wholeNumber = (value: string | undefined) => (value && /^\d+$/.test(value) ? Number(value) : undefined);

/** `?service=&name=&kind=&status=&min_duration_ms=&http_status=&attribute=key:value…`, named as the API's. */
function useTraceFilters(): TraceFilters {
  const { get, params } = useQueryParams();
  const { project } = useScope();
  return {
    project,
    service: get('service'),
    name: get('name'),
    kind: oneOf<Kind>(KINDS, get('kind')),
    status: oneOf<Status>(STATUSES, get('status')),
    min_duration_ms: wholeNumber(get('min_duration_ms')),
    http_status: wholeNumber(get('http_status')),
    attribute: params.getAll('attribute'),
  };
}

const FILTER_NAMES = ['service', 'name', 'kind', 'status', 'min_duration_ms', 'http_status', 'attribute'] as const;
const hasFilters = (filters: TraceFilters) => FILTER_NAMES.some((name) => (name === 'attribute' ? Boolean(filters.attribute?.length) : filters[name] !== undefined));

/** Text fields apply together on submit; the kind and status menus apply as soon as one is picked. */
function TraceFilterForm({ filters }: { filters: TraceFilters }) {
  const { update } = useQueryParams();
  const [service, setService] = useState(filters.service ?? '');
  const [name, setName] = useState(filters.name ?? '');
  const [minDuration, setMinDuration] = useState(filters.min_duration_ms?.toString() ?? '');
  const [httpStatus, setHttpStatus] = useState(filters.http_status?.toString() ?? '');
  const [attribute, setAttribute] = useState('');
  const attributes = [filters.attribute ?? []].flat();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const added = attribute.trim();
    update({
      service: service.trim(),
      name: name.trim(),
      min_duration_ms: minDuration,
      http_status: httpStatus,
      attribute: added && !attributes.includes(added) ? [...attributes, added] : attributes,
    });
    setAttribute('');
  };
  const clear = () => {
    setService('');
    setName('');
    setMinDuration('');
    setHttpStatus('');
    update(Object.fromEntries(FILTER_NAMES.map((filter) => [filter, undefined])));
  };
  return (
    <form className="panel trace-filters" role="search" aria-label="Trace filters" onSubmit={submit}>
      <div className="toolbar">
        <label className="field">
          <span>Service</span>
          <input name="service" value={service} onChange={(event) => setService(event.target.value)} placeholder="checkout" />
        </label>
        <label className="field trace-filter-wide">
          <span>Span name or route</span>
          <input name="name" value={name} onChange={(event) => setName(event.target.value)} placeholder="GET /cart" />
        </label>
        <ChoiceField label="Span kind" name="kind" value={filters.kind} choices={KINDS} anyLabel="All kinds" onChange={(kind) => update({ kind })} />
        <ChoiceField label="Span status" name="status" value={filters.status} choices={STATUSES} anyLabel="All statuses" onChange={(status) => update({ status })} />
        <label className="field trace-filter-number">
          <span>Min. duration (ms)</span>
          <input name="min_duration_ms" type="number" min={0} step={1} inputMode="numeric" value={minDuration} onChange={(event) => setMinDuration(event.target.value)} placeholder="500" />
        </label>
        <label className="field trace-filter-number">
          <span>HTTP status</span>
          <input name="http_status" type="number" min={100} max={599} step={1} inputMode="numeric" value={httpStatus} onChange={(event) => setHttpStatus(event.target.value)} placeholder="500" />
        </label>
        <label className="field">
          <span>Attribute (key:value)</span>
          <input name="attribute" value={attribute} onChange={(event) => setAttribute(event.target.value)} pattern="[^:]+:.*" title="key:value, e.g. customer.tier:gold" placeholder="customer.tier:gold" />
        </label>
        <div className="actions">
          <button type="submit" className="primary">
            Apply filters
          </button>
          {hasFilters(filters) && (
            <button type="button" onClick={clear}>
              Clear filters
            </button>
          )}
        </div>
      </div>
      <AttributeFilters attributes={attributes} onRemove={(remaining) => update({ attribute: remaining })} />
    </form>
  );
}

const COLUMNS: Column<TraceSummary>[] = [
  {
    header: 'Root span',
    cell: (trace) => (
      <Link to={`/traces/${trace.trace_id}`} className="trace-root wrap-anywhere">
        {trace.root_name ?? <span className="muted">Root span not received yet · {trace.trace_id.slice(0, 12)}…</span>}
      </Link>
    ),
  },
  { header: 'Duration', numeric: true, cell: (trace) => formatDuration(trace.duration_ms) },
  { header: 'Spans', numeric: true, cell: (trace) => formatCount(trace.span_count) },
  { header: 'Errors', numeric: true, cell: (trace) => (trace.error_count > 0 ? <ErrorMark label={`${formatCount(trace.error_count)} ${trace.error_count === 1 ? 'error' : 'errors'}`} /> : <span className="muted">0</span>) },
  { header: 'Services', cell: (trace) => <span className="trace-services wrap-anywhere">{trace.services.join(', ')}</span> },
  { header: 'Started', cell: (trace) => <span className="nowrap">{formatTime(trace.start)}</span> },
];

export default function TraceListPage() {
  const filters = useTraceFilters();
  const window = useTimeWindow();
  const { get, update } = useQueryParams();
  const cursor = get('cursor');
  const traces = useTraces(filters, window, cursor);
  const filtered = hasFilters(filters);
  return (
    <>
      <PageHeader title="Traces" description="Requests followed across services, newest first. A trace is listed when one of its spans matches every filter." />
      <TraceFilterForm filters={filters} />
      <QueryView
        query={traces}
        loadingLabel="Loading traces…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          filtered ? (
            <EmptyState title="No trace matches these filters">
              <p>Every filter must hold for one span of a trace. Widen the time range or remove a filter.</p>
            </EmptyState>
          ) : (
            <EmptyState title="No traces in this time range">
              <p>
                Send spans with an OpenTelemetry exporter or a Sentry SDK with tracing on. <Link to="/onboarding">Set up a project</Link> to get its DSN and the exporter settings.
              </p>
            </EmptyState>
          )
        }
      >
        {(page) => (
          <div aria-busy={traces.isFetching}>
            <Table caption={`Traces${filtered ? ' matching the filters' : ''}`} columns={COLUMNS} rows={page.data} rowKey={(trace) => `${trace.project_id}:${trace.trace_id}`} />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </div>
        )}
      </QueryView>
    </>
  );
}
