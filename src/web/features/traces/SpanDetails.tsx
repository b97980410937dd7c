import { Link } from 'react-router';
import { CopyButton } from '../../components/CopyButton';
import { formatDuration, formatTime } from '../../lib/format';
import type { Span } from './api';
import { ErrorMark } from './ErrorMark';
import { formatOffset } from './Waterfall';

type AttributeValue = Span['attributes'][string];

const valueText = (value: AttributeValue) => (typeof value === 'string' ? value : JSON.stringify(value));

function Attributes({ attributes, label }: { attributes: Span['attributes']; label: string }) {
  const entries = Object.entries(attributes).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <p className="muted small">No {label}.</p>;
  return (
    <dl className="span-fields" aria-label={label}>
      {entries.map(([key, value]) => (
        <div key={key}>
          <dt className="mono wrap-anywhere">{key}</dt>
          <dd className="mono wrap-anywhere">{valueText(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * The selected span: what it is, when it ran relative to the trace, its status, attributes, events and the
 * ids a person copies into another tool. The API reports a span's resource as its service and project.
 */
export function SpanDetails({ span, traceID, traceStart, colorClass, onSelectParent }: { span: Span; traceID: string; traceStart: number; colorClass: string; onSelectParent?: () => void }) {
  const start = Date.parse(span.start);
  return (
    <div className="span-details">
      <h2 className="wrap-anywhere">{span.name}</h2>
      <p className="span-badges">
        <span className="badge">{span.kind}</span>
        {span.status === 'error' ? <ErrorMark label="Status: error" /> : <span className={`badge${span.status === 'ok' ? ' ok' : ''}`}>Status: {span.status}</span>}
        <span className="nowrap">{formatDuration(span.duration_ms)}</span>
      </p>
      {span.status_message && <p className="notice error wrap-anywhere">{span.status_message}</p>}
      <dl className="span-fields">
        <div>
          <dt>Started</dt>
          <dd>
            {formatTime(span.start)} <span className="muted">(+{formatOffset(start - traceStart)} into the trace)</span>
          </dd>
        </div>
        <div>
          <dt>Ended</dt>
          <dd>{formatTime(span.end)}</dd>
        </div>
      </dl>

      <h3>Resource</h3>
      <dl className="span-fields">
        <div>
          <dt>Service</dt>
          <dd>
            <span className={`service-swatch ${colorClass}`} aria-hidden="true" /> <Link to={`/services/${encodeURIComponent(span.service)}`}>{span.service}</Link>
          </dd>
        </div>
        <div>
          <dt>Project</dt>
          <dd className="mono wrap-anywhere">{span.project_id}</dd>
        </div>
      </dl>

      <h3>Attributes</h3>
      <Attributes attributes={span.attributes} label="attributes" />

      <h3>Events</h3>
      {span.events.length === 0 ? (
        <p className="muted small">No events.</p>
      ) : (
        <ol className="span-events">
          {span.events.map((event, index) => (
            <li key={index}>
              <p>
                <strong className="wrap-anywhere">{event.name}</strong> <span className="muted small">+{formatOffset(Date.parse(event.time) - start)} · {formatTime(event.time, 'time')}</span>
              </p>
              <Attributes attributes={event.attributes} label={`attributes of ${event.name}`} />
            </li>
          ))}
        </ol>
      )}

      <h3>Ids</h3>
      <dl className="span-fields">
        <div>
          <dt>Span</dt>
          <dd>
            <span className="mono wrap-anywhere">{span.span_id}</span> <CopyButton className="small" text={span.span_id} label="Copy span id" />
          </dd>
        </div>
        <div>
          <dt>Parent</dt>
          <dd>
            {span.parent_span_id == null ? (
              <span className="muted">None: a root span</span>
            ) : onSelectParent ? (
              <>
                <span className="mono wrap-anywhere">{span.parent_span_id}</span>{' '}
                <button type="button" className="small" onClick={onSelectParent}>
                  Show the parent
                </button>
              </>
            ) : (
              <span className="mono wrap-anywhere">
                {span.parent_span_id} <span className="muted">(not loaded)</span>
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>Trace</dt>
          <dd className="mono wrap-anywhere">{traceID}</dd>
        </div>
      </dl>
    </div>
  );
}
