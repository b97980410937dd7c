import { Fragment, useEffect, useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { AnswerOf } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { AttributeFilters } from '../../components/AttributeFilters';
import { ChoiceField } from '../../components/ChoiceField';
import { formatTime } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useLogLines, type LogFilters } from './api';
import { LogTabs } from './LogTabs';
import './logs.css';

type LogLine = AnswerOf<'/v1/logs'>['data'][number];
type Level = LogLine['level'];

const LEVELS: Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];
const isLevel = (value: string | undefined): value is Level => LEVELS.includes(value as Level);

/** `?q=&service=&level=&trace_id=&attribute=key:value…`: the API's own filters, read from the URL. */
function useLogFilters(): LogFilters {
  const { get, params } = useQueryParams();
  const { project } = useScope();
  const level = get('level');
  return {
    project,
    q: get('q'),
    service: get('service'),
    level: isLevel(level) ? level : undefined,
    trace_id: get('trace_id'),
    attribute: params.getAll('attribute'),
  };
}

const hasFilters = (filters: LogFilters) => Boolean(filters.q || filters.service || filters.level || filters.trace_id || filters.attribute?.length);

/** The text fields apply together on submit; the level applies as soon as it is picked. */
function LogFilterForm({ filters }: { filters: LogFilters }) {
  const { update } = useQueryParams();
  const [q, setQ] = useState(filters.q ?? '');
  const [service, setService] = useState(filters.service ?? '');
  const [traceId, setTraceId] = useState(filters.trace_id ?? '');
  const [attribute, setAttribute] = useState('');
  const attributes = [filters.attribute ?? []].flat();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const added = attribute.trim();
    update({ q: q.trim(), service: service.trim(), trace_id: traceId.trim(), attribute: added && !attributes.includes(added) ? [...attributes, added] : attributes });
    setAttribute('');
  };
  return (
    <form className="panel log-filters" role="search" aria-label="Log search" onSubmit={submit}>
      <div className="toolbar">
        <label className="field log-filter-wide">
          <span>Search words</span>
          <input type="search" name="q" value={q} onChange={(event) => setQ(event.target.value)} placeholder="payment declined" />
        </label>
        <label className="field">
          <span>Service</span>
          <input name="service" value={service} onChange={(event) => setService(event.target.value)} placeholder="checkout" />
        </label>
        <ChoiceField label="Level" name="level" value={filters.level} choices={LEVELS} anyLabel="All levels" onChange={(level) => update({ level })} />
        <label className="field">
          <span>Trace ID</span>
          <input name="trace_id" className="mono" value={traceId} onChange={(event) => setTraceId(event.target.value)} pattern="[0-9a-fA-F]{32}" title="32 hexadecimal characters" placeholder="32 hex characters" />
        </label>
        <label className="field">
          <span>Attribute (key:value)</span>
          <input name="attribute" value={attribute} onChange={(event) => setAttribute(event.target.value)} pattern="[^:]+:.*" title="key:value, e.g. customer.tier:gold" placeholder="customer.tier:gold" />
        </label>
        <div className="actions">
          <button type="submit" className="primary">
            Search
          </button>
          {hasFilters(filters) && (
            <button type="button" onClick={() => update({ q: undefined, service: undefined, level: undefined, trace_id: undefined, attribute: undefined })}>
              Clear filters
            </button>
          )}
        </div>
      </div>
      <AttributeFilters attributes={attributes} onRemove={(remaining) => update({ attribute: remaining })} />
    </form>
  );
}

const attributeText = (value: LogLine['attributes'][string]) => (typeof value === 'string' ? value : JSON.stringify(value));

/** A line's attributes and ids, each attribute one click from narrowing the search to it. */
function LogLineDetails({ line, filters }: { line: LogLine; filters: LogFilters }) {
  const { update } = useQueryParams();
  const attributes = Object.entries(line.attributes);
  const current = [filters.attribute ?? []].flat();
  return (
    <div className="log-details">
      {attributes.length === 0 ? (
        <p className="muted small">This line has no attributes.</p>
      ) : (
        <dl className="log-attributes">
          {attributes.map(([key, value]) => (
            <div key={key}>
              <dt className="mono wrap-anywhere">{key}</dt>
              <dd>
                <span className="mono wrap-anywhere">{attributeText(value)}</span>
                {(typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') && !current.includes(`${key}:${value}`) && (
                  <button type="button" className="small" onClick={() => update({ attribute: [...current, `${key}:${value}`] })}>
                    Filter by this
                  </button>
                )}
              </dd>
            </div>
          ))}
        </dl>
      )}
      <p className="small muted wrap-anywhere">
        Severity {line.severity_number}
        {line.span_id && <> · span {line.span_id}</>}
        {line.trace_id && filters.trace_id !== line.trace_id && (
          <>
            {' · '}
            <button type="button" className="small" onClick={() => update({ trace_id: line.trace_id })}>
              Lines of this trace
            </button>
          </>
        )}
      </p>
    </div>
  );
}

/** Lines that arrived while following, marked until following stops. */
function useArrivedWhileFollowing(lines: readonly LogLine[] | undefined, following: boolean) {
  const [tracked, setTracked] = useState<{ known: Set<string>; arrived: Set<string> }>();
  useEffect(() => {
    if (!following || !lines) return setTracked(undefined);
    setTracked((previous) => {
      if (!previous) return { known: new Set(lines.map((line) => line.id)), arrived: new Set() };
      const fresh = lines.filter((line) => !previous.known.has(line.id));
      if (fresh.length === 0) return previous;
      return { known: new Set([...previous.known, ...fresh.map((line) => line.id)]), arrived: new Set([...previous.arrived, ...fresh.map((line) => line.id)]) };
    });
  }, [lines, following]);
  return tracked?.arrived ?? new Set<string>();
}

function LogTable({ lines, filters, arrived }: { lines: readonly LogLine[]; filters: LogFilters; arrived: Set<string> }) {
  const [open, setOpen] = useState<Set<string>>(new Set());
  const toggle = (id: string) => setOpen((current) => (current.has(id) ? new Set([...current].filter((other) => other !== id)) : new Set([...current, id])));
  return (
    <div className="table-wrap">
      <table className="log-table">
        <caption>Log lines, newest first (select a message to see its attributes)</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Level</th>
            <th scope="col">Service</th>
            <th scope="col">Message</th>
            <th scope="col">Trace</th>
          </tr>
        </thead>
        <tbody>
          {lines.map((line) => {
            const expanded = open.has(line.id);
            return (
              <Fragment key={line.id}>
                <tr className={arrived.has(line.id) ? 'log-arrived' : undefined}>
                  <td className="nowrap">
                    <time dateTime={line.timestamp}>{formatTime(line.timestamp)}</time>
                    {arrived.has(line.id) && <span className="badge new-line">new</span>}
                  </td>
                  <td>
                    <span className={`badge ${line.level}`}>{line.level}</span>
                  </td>
                  <td className="log-service wrap-anywhere">{line.service}</td>
                  <td className="log-message">
                    <button type="button" className="log-toggle" aria-expanded={expanded} aria-controls={`log-${line.id}`} onClick={() => toggle(line.id)}>
                      {line.body}
                    </button>
                  </td>
                  <td className={line.trace_id ? 'log-trace' : 'log-trace none'}>{line.trace_id ? <Link className="mono ellipsis" to={`/traces/${line.trace_id}`} title={`Open trace ${line.trace_id}`}>{line.trace_id}</Link> : <span className="muted">—</span>}</td>
                </tr>
                {expanded && (
                  <tr id={`log-${line.id}`} className="log-detail-row">
                    <td colSpan={5}>
                      <LogLineDetails line={line} filters={filters} />
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export default function LogsPage() {
  const { get, update, params } = useQueryParams();
  const window = useTimeWindow();
  const filters = useLogFilters();
  const cursor = get('cursor');
  // following reads the newest page as it grows; a custom window ends at a fixed time, so nothing new enters it
  const canFollow = window.kind === 'preset' && !cursor;
  const following = get('follow') === '1' && canFollow;
  const lines = useLogLines(filters, window, cursor, following);
  const arrived = useArrivedWhileFollowing(lines.data?.data, following);
  const filterKey = ['q', 'service', 'trace_id'].map((key) => params.get(key)).join('\u0000');

  return (
    <>
      <PageHeader
        title="Logs"
        description="Log lines from OTLP log exporters and Sentry SDKs, newest first."
        actions={
          <>
            <button type="button" className="follow-toggle" aria-pressed={following} disabled={window.kind === 'custom'} onClick={() => update({ follow: following ? undefined : '1' }, { replace: true })}>
              Follow
            </button>
            <span className="small muted">{window.kind === 'custom' ? 'Pick a preset range to follow new lines' : following ? 'New lines appear at the top every 2 s' : ''}</span>
          </>
        }
      />
      <LogTabs />
      <LogFilterForm key={filterKey} filters={filters} />
      <p className="visually-hidden" role="status" aria-live="polite">
        {following && arrived.size > 0 ? `${arrived.size} new ${arrived.size === 1 ? 'line' : 'lines'} since following began` : ''}
      </p>
      <QueryView
        query={lines}
        loadingLabel="Loading log lines…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          hasFilters(filters) ? (
            <EmptyState title="No lines match these filters">
              <p>Every word of the search must appear in a line, and every filter must match. Widen the time range or clear a filter.</p>
            </EmptyState>
          ) : (
            <EmptyState title="No log lines in this window">
              <p>
                Send logs with an OTLP log exporter (<code>OTEL_EXPORTER_OTLP_LOGS_ENDPOINT</code>) or a Sentry SDK with logs enabled, using your project's DSN; they show up here within seconds. <Link to="/onboarding">Set up a project</Link>
              </p>
            </EmptyState>
          )
        }
      >
        {(page) => (
          <>
            {page.data.length > 0 ? <LogTable lines={page.data} filters={filters} arrived={arrived} /> : <p className="muted">No older lines in this window.</p>}
            <nav className="pager" aria-label="Pages of log lines">
              {cursor && (
                <button type="button" onClick={() => update({ cursor: undefined })}>
                  Newest lines
                </button>
              )}
              {page.next_cursor && (
                <button type="button" onClick={() => update({ cursor: page.next_cursor, follow: undefined })}>
                  Older lines
                </button>
              )}
            </nav>
          </>
        )}
      </QueryView>
    </>
  );
}
