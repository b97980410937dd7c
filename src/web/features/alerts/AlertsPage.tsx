import { Fragment } from 'react';
import { Link } from 'react-router';
import { ChoiceField } from '../../components/ChoiceField';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager } from '../../components/Table';
import { formatCount } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useProjects } from '../projects/api';
import { useAlerts, useDestinations, type Alert, type AlertFilters, type Delivery, type Destination } from './api';
import { ALERT_KINDS, destinationLabel, KIND_LABELS, oneOf, StatusBadge, subjectPath, TimeAt } from './parts';
import './alerts.css';
import { FormField } from '../../components/FormField';

const STATUSES = ['open', 'resolved'] as const;
const COLUMNS = 7;


/** "2 sent, 1 failed": each delivery status with its count. */
function deliverySummary(deliveries: readonly Delivery[]): string {
  if (deliveries.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const delivery of deliveries) counts.set(delivery.status, (counts.get(delivery.status) ?? 0) + 1);
  return [...counts].map(([status, count]) => `${formatCount(count)} ${status}`).join(', ');
}

function DeliveriesTable({ alert, destinations }: { alert: Alert; destinations: ReadonlyMap<string, Destination> | undefined }) {
  if (alert.deliveries.length === 0) {
    return <p className="small muted">No destination was sent this alert: none existed for its kind and project when it was handed over, or none exists yet.</p>;
  }
  return (
    <div className="table-wrap">
      <table className="deliveries">
        <caption>Deliveries</caption>
        <thead>
          <tr>
            <th scope="col">Destination</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col" className="number">
              Attempts
            </th>
            <th scope="col">Last error</th>
            <th scope="col">Last attempt</th>
          </tr>
        </thead>
        <tbody>
          {alert.deliveries.map((delivery) => {
            const destination = destinations?.get(delivery.destination_id);
            return (
              <tr key={`${delivery.destination_id}-${delivery.event}`}>
                <td className="wrap-anywhere">{destination ? destinationLabel(destination) : <span className="mono small">{delivery.destination_id}</span>}</td>
                <td>{delivery.event}</td>
                <td>
                  <StatusBadge status={delivery.status} />
                </td>
                <td className="number">{formatCount(delivery.attempts)}</td>
                <td className="wrap-anywhere">{delivery.last_error ?? '—'}</td>
                <td>
                  <TimeAt time={delivery.last_attempt_at} fallback="not yet" />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The figures behind the alert, as the detector recorded them. */
function AlertFacts({ alert }: { alert: Alert }) {
  const path = subjectPath(alert.subject);
  const facts = Object.entries(alert.details);
  return (
    <dl className="alert-facts">
      <div>
        <dt>About</dt>
        <dd>
          {path ? <Link to={path}>{alert.subject.type.replace(/_/g, ' ')}</Link> : alert.subject.type.replace(/_/g, ' ')} <span className="mono small">{alert.subject.id}</span>
        </dd>
      </div>
      {facts.map(([key, value]) => (
        <div key={key}>
          <dt>{key.replace(/_/g, ' ')}</dt>
          <dd className="wrap-anywhere">{value === null ? '—' : String(value)}</dd>
        </div>
      ))}
    </dl>
  );
}

function AlertTable({ alerts, refreshing }: { alerts: readonly Alert[]; refreshing: boolean }) {
  const { get, update } = useQueryParams();
  const expanded = get('alert');
  const projects = useProjects();
  const isAdmin = useCan('admin');
  // members may not list destinations: their deliveries name the destination by id
  const destinations = useDestinations(undefined, isAdmin);
  const destinationsById = destinations.data && new Map(destinations.data.data.map((destination) => [destination.id, destination]));
  const projectName = (id: string | null) => (id === null ? 'Organisation' : (projects.data?.data.find((project) => project.id === id)?.name ?? id));
  return (
    <div className={refreshing ? 'table-wrap stale' : 'table-wrap'} aria-busy={refreshing}>
      <table className="alert-table">
        <caption className="visually-hidden">Alerts, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Alert</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">Project</th>
            <th scope="col">Opened</th>
            <th scope="col">Resolved</th>
            <th scope="col">Deliveries</th>
          </tr>
        </thead>
        <tbody>
          {alerts.map((alert) => {
            const open = expanded === alert.id;
            return (
              <Fragment key={alert.id}>
                <tr className={open ? 'expanded' : undefined}>
                  <td className="title-cell">
                    <button type="button" className="disclosure" aria-expanded={open} aria-controls={`alert-${alert.id}`} onClick={() => update({ alert: open ? undefined : alert.id, cursor: get('cursor') }, { replace: true })}>
                      <span aria-hidden="true">{open ? '▾' : '▸'}</span>
                      <span className="alert-title">{alert.title}</span>
                    </button>
                  </td>
                  <td>{KIND_LABELS[alert.kind]}</td>
                  <td>
                    <StatusBadge status={alert.status} />
                  </td>
                  <td className="wrap-anywhere">{projectName(alert.project_id)}</td>
                  <td>
                    <TimeAt time={alert.opened_at} />
                  </td>
                  <td>
                    <TimeAt time={alert.resolved_at} fallback={alert.status === 'open' ? 'still open' : '—'} />
                  </td>
                  <td className="nowrap">{deliverySummary(alert.deliveries)}</td>
                </tr>
                {open && (
                  <tr className="alert-detail">
                    <td colSpan={COLUMNS} id={`alert-${alert.id}`}>
                      <AlertFacts alert={alert} />
                      <DeliveriesTable alert={alert} destinations={destinationsById} />
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

export default function AlertsPage() {
  const { get, update } = useQueryParams();
  const { project } = useScope();
  const window = useTimeWindow();
  const filters: AlertFilters = {
    project,
    kind: oneOf(ALERT_KINDS, get('kind')),
    status: oneOf(STATUSES, get('status')),
  };
  const cursor = get('cursor');
  const alerts = useAlerts(filters, window, cursor);
  const narrowed = Boolean(filters.kind || filters.status || project);
  return (
    <>
      <PageHeader
        title="Alerts"
        description="Every alert opened in the time range, newest first, with where it was sent. Open an alert to see its figures and each delivery's attempts."
        actions={
          <>
            <Link to="/alerts/destinations" className="button">
              Destinations
            </Link>
            <Link to="/reports" className="button">
              Digests
            </Link>
          </>
        }
      />
      <div className="toolbar">
        <FormField label="Kind">
          {(control) => (
            <select {...control} name="kind" value={filters.kind ?? ''} onChange={(event) => update({ kind: event.target.value, alert: undefined })}>
              <option value="">Any kind</option>
              {ALERT_KINDS.map((kind) => (
                <option key={kind} value={kind}>
                  {KIND_LABELS[kind]}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <ChoiceField label="Status" name="status" value={filters.status} choices={STATUSES} anyLabel="Any status" onChange={(value) => update({ status: value, alert: undefined })} />
      </div>
      <QueryView
        query={alerts}
        loadingLabel="Loading alerts…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          narrowed ? (
            <EmptyState title="No alert matches these filters">
              <p>Widen the time range or clear the filters to see more.</p>
              <button type="button" onClick={() => update({ kind: undefined, status: undefined, project: undefined })}>
                Clear filters
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No alerts in this time range">
              <p>
                Sluice opens an alert when a new issue arrives, a cron check or uptime monitor goes down, a surge or anomaly starts, or a deployment degrades. Widen the time range to look further back, and{' '}
                <Link to="/alerts/destinations">add a destination</Link> so that the next one reaches you.
              </p>
            </EmptyState>
          )
        }
      >
        {(page) => (
          <>
            <AlertTable alerts={page.data} refreshing={alerts.isPlaceholderData} />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </>
        )}
      </QueryView>
    </>
  );
}
