import { Table } from '../../components/Table';
import { formatTime } from '../../lib/format';
import type { IssueEvent } from './api';
import { LevelBadge } from './parts';

/** What happened before the error, newest last, as the SDK recorded it: a table a person reads top to bottom. */
export function Breadcrumbs({ event }: { event: IssueEvent }) {
  const crumbs = event.breadcrumbs.map((crumb, index) => ({ ...crumb, index }));
  return (
    <section className="panel" aria-labelledby="event-breadcrumbs">
      <h2 id="event-breadcrumbs">Breadcrumbs</h2>
      {crumbs.length ? (
        <Table
          caption="Breadcrumbs of the latest event, oldest first"
          captionHidden
          rows={crumbs}
          rowKey={(crumb) => String(crumb.index)}
          columns={[
            { header: 'Time', cell: (crumb) => <span className="nowrap">{formatTime(crumb.timestamp, 'time')}</span> },
            { header: 'Category', cell: (crumb) => <span className="mono wrap-anywhere">{crumb.category ?? crumb.type ?? '—'}</span> },
            { header: 'Level', cell: (crumb) => (crumb.level ? <LevelBadge level={crumb.level} /> : '—') },
            {
              header: 'Message',
              cell: (crumb) => (
                <span className="wrap-anywhere">
                  {crumb.message ?? ''}
                  {crumb.data && Object.keys(crumb.data).length > 0 && <span className="mono small muted"> {JSON.stringify(crumb.data)}</span>}
                </span>
              ),
            },
          ]}
        />
      ) : (
        <p className="muted small">The SDK recorded no breadcrumbs before this event.</p>
      )}
    </section>
  );
}
