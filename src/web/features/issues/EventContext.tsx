import type { ReactNode } from 'react';
import { Table } from '../../components/Table';
import type { IssueEvent } from './api';

/** A value the SDK sent, as text: scalars as they are, anything else as JSON. */
const asText = (value: unknown): string => (value == null ? '—' : typeof value === 'object' ? JSON.stringify(value) : String(value));

/** An object's fields as a definition list (user, a context, the request). */
function Fields({ fields }: { fields: Record<string, unknown> }) {
  const entries = Object.entries(fields);
  if (entries.length === 0) return <p className="muted small">None sent.</p>;
  return (
    <dl className="fields">
      {entries.map(([key, value]) => (
        <div key={key}>
          <dt className="wrap-anywhere">{key}</dt>
          <dd className="wrap-anywhere">{asText(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

function Panel({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  return (
    <section className="panel" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/** What the latest event says beside its stack: tags, user, release and environment, contexts, request, extra. */
export function EventContext({ event }: { event: IssueEvent }) {
  const tags = Object.entries(event.tags).map(([key, value]) => ({ key, value }));
  const contexts = Object.entries(event.contexts).filter(([, value]) => value && typeof value === 'object') as Array<[string, Record<string, unknown>]>;
  return (
    <div className="grid-2">
      <Panel id="event-tags" title="Tags">
        {tags.length ? (
          <Table
            caption="Tags of the latest event"
            captionHidden
            rows={tags}
            rowKey={(tag) => tag.key}
            columns={[
              { header: 'Tag', cell: (tag) => <span className="mono wrap-anywhere">{tag.key}</span> },
              { header: 'Value', cell: (tag) => <span className="wrap-anywhere">{tag.value}</span> },
            ]}
          />
        ) : (
          <p className="muted small">The event has no tags.</p>
        )}
      </Panel>
      <Panel id="event-user" title="User">
        {event.user ? <Fields fields={event.user} /> : <p className="muted small">The event names no user.</p>}
      </Panel>
      <Panel id="event-details" title="Release and environment">
        <Fields
          fields={{
            release: event.release,
            environment: event.environment,
            platform: event.platform,
            ...(event.transaction && { transaction: event.transaction }),
            ...(event.sdk && { sdk: [event.sdk.name, event.sdk.version].filter(Boolean).join(' ') }),
          }}
        />
      </Panel>
      <Panel id="event-contexts" title="Contexts">
        {contexts.length ? (
          contexts.map(([name, fields]) => (
            <div key={name} className="context">
              <h3 className="wrap-anywhere">{name}</h3>
              <Fields fields={fields} />
            </div>
          ))
        ) : (
          <p className="muted small">The event has no contexts.</p>
        )}
      </Panel>
      {event.request && (
        <Panel id="event-request" title="Request">
          <Fields fields={event.request} />
        </Panel>
      )}
      {Object.keys(event.extra).length > 0 && (
        <Panel id="event-extra" title="Additional data">
          <Fields fields={event.extra} />
        </Panel>
      )}
    </div>
  );
}
