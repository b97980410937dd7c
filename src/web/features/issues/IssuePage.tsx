import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, QueryView } from '../../components/states';
import { Pager, Table } from '../../components/Table';
import { TimeSeriesChart } from '../../components/TimeSeriesChart';
import { formatCount, formatTime } from '../../lib/format';
import { useQueryParams, useTimeWindow } from '../../lib/url-state';
import { useChangeIssueStatus, useFeedbackSince, useIssue, useIssueEvents, useIssueSeries, type Issue, type IssueEvent } from './api';
import { LevelBadge, SeenAt, StatusBadge } from './parts';
import { StackFrames } from './StackFrames';
import { Breadcrumbs } from './Breadcrumbs';
import { EventContext } from './EventContext';
import { Investigation } from './Investigation';
import { ReleaseHealth } from './ReleaseHealth';
import './issues.css';

/** How many of the newest events the end users and the feedback are drawn from. */
const RECENT_EVENTS = 200;
const EVENTS_PAGE = 25;

/** The end users among events: one row per person, however the SDK named them. */
function usersOf(events: IssueEvent[]) {
  const byKey = new Map<string, { key: string; label: string; detail: string; events: number; last: string }>();
  for (const event of events) {
    const user = event.user;
    if (!user) continue;
    const text = (field: string) => (typeof user[field] === 'string' || typeof user[field] === 'number' ? String(user[field]) : undefined);
    const id = text('id');
    const email = text('email');
    const username = text('username');
    const ip = text('ip_address');
    const key = id ?? email ?? username ?? ip;
    if (!key) continue;
    const known = byKey.get(key);
    if (known) {
      known.events += 1;
      if (event.timestamp > known.last) known.last = event.timestamp;
    } else {
      byKey.set(key, { key, label: email ?? username ?? id ?? ip!, detail: [id && `id ${id}`, username, ip].filter((part) => part && part !== (email ?? username ?? id ?? ip)).join(' · '), events: 1, last: event.timestamp });
    }
  }
  return [...byKey.values()];
}

function StatusActions({ issue }: { issue: Issue }) {
  const change = useChangeIssueStatus(issue.id);
  const act = (action: 'resolve' | 'ignore' | 'reopen') => change.mutate({ action });
  return (
    <div className="actions">
      {issue.status !== 'resolved' && (
        <button type="button" className="primary" disabled={change.isPending} onClick={() => act('resolve')}>
          Resolve
        </button>
      )}
      {issue.status !== 'ignored' && (
        <button type="button" disabled={change.isPending} onClick={() => act('ignore')}>
          Ignore
        </button>
      )}
      {issue.status !== 'unresolved' && (
        <button type="button" disabled={change.isPending} onClick={() => act('reopen')}>
          Unresolve
        </button>
      )}
      {change.isError && <ErrorNotice error={change.error} title="The status did not change" />}
    </div>
  );
}

function IssueSummary({ issue }: { issue: Issue }) {
  return (
    <dl className="stats">
      <div>
        <dt>Level</dt>
        <dd>
          <LevelBadge level={issue.level} />
        </dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd aria-live="polite">
          <StatusBadge status={issue.status} />
          {issue.ignore?.until && <div className="small muted">until {formatTime(issue.ignore.until)}</div>}
          {issue.ignore?.until_count != null && <div className="small muted">until {formatCount(issue.ignore.until_count)} events</div>}
        </dd>
      </div>
      <div>
        <dt>Events</dt>
        <dd>{formatCount(issue.count)}</dd>
      </div>
      <div>
        <dt>Users</dt>
        <dd>{formatCount(issue.user_count)}</dd>
      </div>
      <div>
        <dt>First seen</dt>
        <dd>
          <SeenAt time={issue.first_seen} />
        </dd>
      </div>
      <div>
        <dt>Last seen</dt>
        <dd>
          <SeenAt time={issue.last_seen} />
        </dd>
      </div>
      <div>
        <dt>Environments</dt>
        <dd className="small">{issue.environments.join(', ') || '—'}</dd>
      </div>
      <div>
        <dt>Releases</dt>
        <dd className="small">{issue.releases.join(', ') || '—'}</dd>
      </div>
    </dl>
  );
}

function EventsChart({ issueID }: { issueID: string }) {
  const window = useTimeWindow();
  const series = useIssueSeries(issueID, window);
  const chart = useMemo(() => {
    const points = series.data?.data ?? [];
    return { times: points.map((point) => Date.parse(point.time)), series: [{ label: 'Events per hour', values: points.map((point) => point.events) }] };
  }, [series.data]);
  return (
    <section className="panel" aria-labelledby="events-over-time">
      <h2 id="events-over-time">Events over time</h2>
      <QueryView query={series}>{() => <TimeSeriesChart title="Events of this issue per hour" times={chart.times} series={chart.series} unit="events" height={180} />}</QueryView>
    </section>
  );
}

function IssueEvents({ issueID }: { issueID: string }) {
  const { get, update } = useQueryParams();
  const cursor = get('cursor');
  const events = useIssueEvents(issueID, EVENTS_PAGE, cursor);
  return (
    <section className="panel issue-events" aria-labelledby="issue-events">
      <h2 id="issue-events">Events</h2>
      <QueryView query={events} loadingLabel="Loading events…" isEmpty={(page) => page.data.length === 0} empty={<p className="muted">No events are stored for this issue any more.</p>}>
        {(page) => (
          <>
            <Table
              caption="Events of this issue, newest first"
              captionHidden
              rows={page.data}
              rowKey={(event) => event.event_id}
              columns={[
                { header: 'Time', cell: (event) => <span className="nowrap">{formatTime(event.timestamp)}</span> },
                { header: 'Event', cell: (event) => <span className="mono small wrap-anywhere">{event.event_id}</span> },
                { header: 'Message', cell: (event) => <span className="wrap-anywhere">{event.message ?? event.title}</span> },
                { header: 'Environment', cell: (event) => event.environment ?? '—' },
                { header: 'Release', cell: (event) => <span className="wrap-anywhere">{event.release ?? '—'}</span> },
              ]}
            />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </>
        )}
      </QueryView>
    </section>
  );
}

function IssueUsers({ events }: { events: IssueEvent[] }) {
  const users = usersOf(events);
  return (
    <section className="panel" aria-labelledby="issue-users">
      <h2 id="issue-users">End users</h2>
      {users.length === 0 ? (
        <p className="muted small">No event of this issue named a user. SDKs send one when the app sets it (Sentry.setUser).</p>
      ) : (
        <Table
          caption="End users who met this issue"
          captionHidden
          rows={users}
          rowKey={(user) => user.key}
          columns={[
            {
              header: 'User',
              cell: (user) => (
                <>
                  <span className="wrap-anywhere">{user.label}</span>
                  {user.detail && <div className="small muted wrap-anywhere">{user.detail}</div>}
                </>
              ),
            },
            { header: 'Events', numeric: true, cell: (user) => formatCount(user.events) },
            { header: 'Last seen', cell: (user) => <SeenAt time={user.last} /> },
          ]}
        />
      )}
      <p className="small muted">From the newest {formatCount(events.length)} events.</p>
    </section>
  );
}

function IssueFeedback({ issue, events }: { issue: Issue; events: IssueEvent[] }) {
  const feedback = useFeedbackSince(issue.project_id, issue.first_seen);
  const eventIds = useMemo(() => new Set(events.map((event) => event.event_id)), [events]);
  return (
    <section className="panel" aria-labelledby="issue-feedback">
      <h2 id="issue-feedback">User feedback</h2>
      <QueryView query={feedback} loadingLabel="Loading feedback…">
        {(page) => {
          const mine = page.data.filter((item) => item.associated_event_id && eventIds.has(item.associated_event_id));
          if (mine.length === 0) return <p className="muted small">No feedback was sent about this issue's events.</p>;
          return (
            <ul className="feedback-list">
              {mine.map((item) => (
                <li key={item.id}>
                  <blockquote className="wrap-anywhere">{item.message}</blockquote>
                  <div className="small muted wrap-anywhere">
                    {[item.name, item.email].filter(Boolean).join(' · ') || 'Anonymous'} · <SeenAt time={item.received_at} />
                    {item.url && <> · {item.url}</>}
                  </div>
                </li>
              ))}
            </ul>
          );
        }}
      </QueryView>
    </section>
  );
}

function IssueDetail({ issue }: { issue: Issue }) {
  const recent = useIssueEvents(issue.id, RECENT_EVENTS);
  const events = recent.data?.data;
  const latest = issue.latest_event;
  return (
    <>
      <PageHeader title={issue.title} description={issue.culprit ?? undefined} actions={<StatusActions issue={issue} />} />
      <IssueSummary issue={issue} />
      <ReleaseHealth issue={issue} />
      <Investigation issueID={issue.id} />
      {recent.isError && <ErrorNotice error={recent.error} title="The issue's events did not load" />}
      <EventsChart issueID={issue.id} />
      {latest ? (
        <>
          <section className="panel" aria-labelledby="latest-event">
            <h2 id="latest-event">Latest event</h2>
            <p className="small muted wrap-anywhere">
              {formatTime(latest.timestamp)} · event <span className="mono">{latest.event_id}</span>
              {latest.transaction && <> · {latest.transaction}</>}
            </p>
            {latest.message && <p className="wrap-anywhere">{latest.message}</p>}
            {latest.symbolication_errors.length > 0 && <p className="notice info small">Some frames could not be source-mapped: {latest.symbolication_errors.join('; ')}</p>}
            {latest.exception.length ? <StackFrames exceptions={latest.exception} /> : <p className="muted small">This event carries no exception.</p>}
          </section>
          <Breadcrumbs event={latest} />
          <EventContext event={latest} />
        </>
      ) : (
        <p className="notice info">Retention has removed this issue's events; its counts remain.</p>
      )}
      <IssueEvents issueID={issue.id} />
      {events && (
        <div className="grid-2">
          <IssueUsers events={events} />
          <IssueFeedback issue={issue} events={events} />
        </div>
      )}
    </>
  );
}

export default function IssuePage() {
  const { issueId = '' } = useParams();
  const issue = useIssue(issueId);
  if (issue.isError) {
    return (
      <>
        <PageHeader title="Issue" />
        <ErrorNotice error={issue.error} title="The issue did not load" />
        <p>
          <Link to="/issues">Back to the issues</Link>
        </p>
      </>
    );
  }
  return (
    <QueryView query={issue} loadingLabel="Loading the issue…">
      {(data) => <IssueDetail issue={data} />}
    </QueryView>
  );
}

