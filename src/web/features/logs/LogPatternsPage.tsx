import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { AnswerOf } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table } from '../../components/Table';
import { formatAgo, formatCount, formatNumber, formatTime } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow, type TimeWindow } from '../../lib/url-state';
import { useLogPatterns, useLogSurges, type LogPatternFilters } from './api';
import { LogTabs } from './LogTabs';
import './logs.css';

type LogPattern = AnswerOf<'/v1/logs/patterns'>['data'][number];
type LogSurge = AnswerOf<'/v1/logs/surges'>['data'][number];

const seen = (time: string) => (
  <time dateTime={time} title={formatTime(time)} className="nowrap">
    {formatAgo(time)}
  </time>
);

const PATTERN_COLUMNS = [
  { header: 'Template', cell: (pattern: LogPattern) => <span className="pattern-template">{pattern.template}</span> },
  { header: 'Lines', numeric: true, cell: (pattern: LogPattern) => formatCount(pattern.count) },
  {
    header: 'Levels',
    cell: (pattern: LogPattern) => (
      <span className="level-counts">
        {Object.entries(pattern.levels).map(([level, count]) => (
          <span key={level} className={`badge ${level}`}>
            {level} {formatCount(count)}
          </span>
        ))}
      </span>
    ),
  },
  { header: 'Services', cell: (pattern: LogPattern) => <span className="name-cell">{pattern.services.join(', ')}</span> },
  { header: 'Example', cell: (pattern: LogPattern) => <span className="pattern-example small">{pattern.example ?? '—'}</span> },
  { header: 'First seen', cell: (pattern: LogPattern) => seen(pattern.first_seen) },
  { header: 'Last seen', cell: (pattern: LogPattern) => seen(pattern.last_seen) },
];

const SURGE_COLUMNS = [
  {
    header: 'What',
    cell: (surge: LogSurge) =>
      surge.kind === 'service' ? (
        <span className="name-cell">Service {surge.service}</span>
      ) : (
        <>
          <span className="pattern-template">{surge.pattern}</span>
          {surge.new_pattern && <span className="badge warning">new pattern</span>}
        </>
      ),
  },
  { header: 'Services', cell: (surge: LogSurge) => <span className="name-cell">{surge.services.join(', ')}</span> },
  { header: 'Lines in window', numeric: true, cell: (surge: LogSurge) => formatCount(surge.observed) },
  { header: 'Previous window', numeric: true, cell: (surge: LogSurge) => formatCount(surge.baseline) },
  { header: 'Ratio', numeric: true, cell: (surge: LogSurge) => `×${formatNumber(surge.ratio)}` },
  { header: 'Reason', cell: (surge: LogSurge) => <span className="small surge-reason">{surge.reason}</span> },
];

const NO_LOGS = (
  <p>
    Patterns come from the log lines you send (OTLP log exporters, Sentry SDKs with logs enabled). <Link to="/onboarding">Set up a project</Link>
  </p>
);

function Patterns({ filters, window }: { filters: LogPatternFilters; window: TimeWindow }) {
  const [cursors, setCursors] = useState<string[]>([]);
  const patterns = useLogPatterns(filters, window, cursors.at(-1));
  return (
    <section className="panel" aria-labelledby="log-patterns">
      <h2 id="log-patterns">Recurring shapes</h2>
      <QueryView
        query={patterns}
        loadingLabel="Loading log patterns…"
        isEmpty={(page) => page.data.length === 0}
        empty={
          <EmptyState title="No log lines in this window">
            {NO_LOGS}
          </EmptyState>
        }
      >
        {(page) => (
          <>
            <Table caption="Log patterns, most frequent first" captionHidden columns={PATTERN_COLUMNS} rows={page.data} rowKey={(pattern) => pattern.id} />
            <Pager nextCursor={page.next_cursor} hasPrevious={cursors.length > 0} onNext={(cursor) => setCursors([...cursors, cursor])} onFirst={() => setCursors([])} />
          </>
        )}
      </QueryView>
    </section>
  );
}

function Surges({ filters, window }: { filters: LogPatternFilters; window: TimeWindow }) {
  const surges = useLogSurges(filters, window);
  return (
    <section className="panel" aria-labelledby="log-surges">
      <h2 id="log-surges">Volume surges and new patterns</h2>
      <p className="small muted">Against the previous window of the same length: 20 lines or more and at least 3× as many; a new pattern has 5 lines or more and none before.</p>
      <QueryView
        query={surges}
        loadingLabel="Loading log surges…"
        isEmpty={(answer) => answer.data.length === 0}
        empty={
          <EmptyState title="No surge in this window">
            <p>Log volume per service and per pattern is in line with the previous window.</p>
          </EmptyState>
        }
      >
        {(answer) => <Table caption="Log volume surges, new patterns first" captionHidden columns={SURGE_COLUMNS} rows={answer.data} rowKey={(surge) => `${surge.kind}:${surge.service ?? ''}:${surge.pattern_id ?? ''}`} />}
      </QueryView>
    </section>
  );
}

function ServiceFilter() {
  const { get, update } = useQueryParams();
  const [service, setService] = useState(get('service') ?? '');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update({ service: service.trim() });
  };
  return (
    <form className="toolbar" role="search" aria-label="Narrow patterns" onSubmit={submit}>
      <label className="field">
        <span>Service</span>
        <input name="service" value={service} onChange={(event) => setService(event.target.value)} placeholder="All services" />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}

export default function LogPatternsPage() {
  const { get } = useQueryParams();
  const { project } = useScope();
  const window = useTimeWindow();
  const filters: LogPatternFilters = { project, service: get('service') };
  // a new project, service or window starts paging over
  const key = JSON.stringify([filters, window]);
  return (
    <>
      <PageHeader title="Log patterns" description="Recurring log shapes, with numbers, ids and addresses masked, and where log volume surged." />
      <LogTabs />
      <ServiceFilter key={filters.service ?? ''} />
      <Patterns key={key} filters={filters} window={window} />
      <Surges filters={filters} window={window} />
    </>
  );
}
