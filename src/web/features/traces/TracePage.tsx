import { useMemo, useRef } from 'react';
import { Link, useParams } from 'react-router';
import { CopyButton } from '../../components/CopyButton';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading } from '../../components/states';
import { formatCount, formatDuration, formatTime } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useIssueTitles, useTrace, type Trace } from './api';
import { ErrorMark } from './ErrorMark';
import { SpanDetails } from './SpanDetails';
import { inTreeOrder, Waterfall } from './Waterfall';
import './traces.css';

/** As many distinct colours as the palette in traces.css holds; services past them share colours. */
const SERVICE_COLOURS = 10;
/** Issues whose titles are read; the rest are linked by id. */
const ISSUE_TITLES = 10;
/** Logs of a trace are looked for from a little before its start to a little after its end. */
const LOG_MARGIN_MS = 5 * 60_000;

/** `/logs` narrowed to the trace, over a window around it so that old traces find their lines too. */
function logsOf(trace: Trace) {
  const start = Date.parse(trace.start);
  const query = new URLSearchParams({
    trace_id: trace.trace_id,
    from: new Date(start - LOG_MARGIN_MS).toISOString(),
    to: new Date(start + trace.duration_ms + LOG_MARGIN_MS).toISOString(),
  });
  return `/logs?${query}`;
}

function TraceIssues({ issueIDs }: { issueIDs: string[] }) {
  const titles = useIssueTitles(issueIDs.slice(0, ISSUE_TITLES));
  return (
    <section className="panel" aria-labelledby="trace-issues">
      <h2 id="trace-issues">Issues from this trace</h2>
      {issueIDs.length === 0 ? (
        <p className="muted small">None: issues link to a trace when a Sentry SDK reports an error inside one of its spans.</p>
      ) : (
        <ul className="trace-issues">
          {issueIDs.map((issueID, index) => (
            <li key={issueID}>
              <Link to={`/issues/${issueID}`} className="wrap-anywhere">
                {titles[index]?.data?.title ?? `Issue ${issueID}`}
              </Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

export default function TracePage() {
  const traceID = useParams().traceId!;
  const trace = useTrace(traceID);
  const { get, update } = useQueryParams();
  const selected = get('span');
  const details = useRef<HTMLElement>(null);

  const pages = trace.data?.pages;
  const summary = pages?.[0];
  const placed = useMemo(() => inTreeOrder(pages?.flatMap((page) => page.spans) ?? []), [pages]);
  const colorOf = useMemo(() => {
    const order = new Map(summary?.services.map((service, index) => [service, index]));
    return (service: string) => `service-${(order.get(service) ?? order.size) % SERVICE_COLOURS}`;
  }, [summary]);

  const root = placed.find(({ span }) => span.parent_span_id == null)?.span ?? placed[0]?.span;
  const title = root ? root.name : `Trace ${traceID.slice(0, 8)}…`;

  if (trace.isPending)
    return (
      <>
        <PageHeader title="Trace" />
        <Loading label="Loading the trace…" />
      </>
    );
  // a failed "Load more spans" keeps the spans already shown; only a trace that never opened is an error page
  if (!trace.data)
    return (
      <>
        <PageHeader title="Trace" />
        <ErrorNotice error={trace.error} title="The trace could not be opened" />
        <p>
          <Link to="/traces">Back to the traces</Link>
        </p>
      </>
    );

  const whole = summary!;
  const traceStart = Date.parse(whole.start);
  const selectedSpan = selected ? placed.find(({ span }) => span.span_id === selected)?.span : undefined;
  const loadedIDs = new Set(placed.map(({ span }) => span.span_id));
  const select = (spanID: string) => {
    update({ span: spanID }, { replace: true });
    // on a phone the details sit below the waterfall: bring them into view
    if (window.matchMedia('(max-width: 800px)').matches) details.current?.scrollIntoView({ block: 'start' });
  };
  const lastPage = pages![pages!.length - 1]!;

  return (
    <>
      <PageHeader
        title={title}
        description={
          <span className="trace-id">
            Trace <span className="mono wrap-anywhere">{whole.trace_id}</span> <CopyButton className="small" text={whole.trace_id} label="Copy trace id" />
          </span>
        }
        actions={
          <>
            <Link className="button" to={logsOf(whole)}>
              Logs of this trace
            </Link>
            <Link className="button" to="/traces">
              All traces
            </Link>
          </>
        }
      />
      <dl className="stats">
        <div>
          <dt>Started</dt>
          <dd>{formatTime(whole.start)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{formatDuration(whole.duration_ms)}</dd>
        </div>
        <div>
          <dt>Spans</dt>
          <dd>{formatCount(whole.span_count)}</dd>
        </div>
        <div>
          <dt>Errors</dt>
          <dd>{whole.error_count > 0 ? <ErrorMark label={formatCount(whole.error_count)} /> : '0'}</dd>
        </div>
        <div>
          <dt>Services</dt>
          <dd>{formatCount(whole.services.length)}</dd>
        </div>
      </dl>
      <TraceIssues issueIDs={whole.issues} />

      <div className="trace-layout">
        <section className="panel waterfall-panel" aria-labelledby="waterfall-heading">
          <div className="waterfall-heading">
            <h2 id="waterfall-heading">Waterfall</h2>
            <ul className="service-legend" aria-label="Service colours">
              {whole.services.map((service) => (
                <li key={service}>
                  <span className={`service-swatch ${colorOf(service)}`} aria-hidden="true" />
                  <span className="wrap-anywhere">{service}</span>
                </li>
              ))}
            </ul>
          </div>
          {placed.length === 0 ? (
            <p className="muted">No span of this trace has been stored yet. Spans show here moments after they are sent.</p>
          ) : (
            <Waterfall spans={placed} traceStart={traceStart} durationMs={whole.duration_ms} colorOf={colorOf} selected={selected} onSelect={select} />
          )}
          <div className="waterfall-more">
            <p className="small muted" role="status">
              {formatCount(placed.length)} of {formatCount(whole.span_count)} spans shown
            </p>
            {lastPage.next_cursor && (
              <button type="button" onClick={() => void trace.fetchNextPage()} disabled={trace.isFetchingNextPage}>
                {trace.isFetchingNextPage ? 'Loading spans…' : 'Load more spans'}
              </button>
            )}
          </div>
          {trace.isFetchNextPageError && <ErrorNotice error={trace.error} title="More spans could not be loaded" />}
        </section>

        <aside className="panel span-panel" aria-label="Selected span" ref={details}>
          {selectedSpan ? (
            <SpanDetails
              span={selectedSpan}
              traceID={whole.trace_id}
              traceStart={traceStart}
              colorClass={colorOf(selectedSpan.service)}
              onSelectParent={selectedSpan.parent_span_id && loadedIDs.has(selectedSpan.parent_span_id) ? () => select(selectedSpan.parent_span_id!) : undefined}
            />
          ) : selected ? (
            <p className="muted">
              The span <span className="mono wrap-anywhere">{selected}</span> is not among the spans loaded{lastPage.next_cursor ? ': load more spans to find it' : ''}.
            </p>
          ) : (
            <p className="muted">Select a span to see its attributes, resource, events, status and ids.</p>
          )}
        </aside>
      </div>
    </>
  );
}
