import { useMemo, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CopyButton } from '../../components/CopyButton';
import { ErrorNotice, QueryView } from '../../components/states';
import { Table } from '../../components/Table';
import { formatDuration, formatTime, timeZone } from '../../lib/format';
import { useCarriedSearch, useTimeWindow } from '../../lib/url-state';
import { SeenAt } from '../issues/parts';
import { HISTORY_LIMIT, useCronCheck, useCronPings, useDeleteCronCheck, useRotateCronToken, useUpdateCronCheck, type CronCheck } from './api';
import { CheckForm } from './CheckForm';
import { classifyPings, type ClassifiedPing, type PingKind } from './history';
import { CheckStateBadge, MonitorFrame, ProjectName, scheduleText, Stat, StatusStrip, type StripKind } from './parts';
import { PingSetup } from './PingSetup';
import './monitors.css';

/** Mildest first: a slice of the timeline takes the colour of the worst ping in it. */
const PING_KINDS: StripKind<PingKind>[] = [
  { kind: 'start', label: 'started', tone: 'accent' },
  { kind: 'ok', label: 'ok', tone: 'ok' },
  { kind: 'late', label: 'late', tone: 'warning' },
  { kind: 'fail', label: 'failed', tone: 'danger' },
  { kind: 'timeout', label: 'timed out', tone: 'danger' },
  { kind: 'missed', label: 'missed', tone: 'danger' },
];
const KIND_LABEL = Object.fromEntries(PING_KINDS.map((kind) => [kind.kind, kind.label])) as Record<PingKind, string>;
const KIND_BADGE: Record<PingKind, string> = { start: 'neutral', ok: 'ok', late: 'warning', fail: 'error', timeout: 'error', missed: 'error' };
const PINGS_SHOWN = 50;

/** A time on the check's own clock, and in the browser's zone when that differs. */
function CheckTime({ time, zone }: { time: string | null; zone: string }) {
  if (!time) return <>—</>;
  const browserZone = timeZone();
  const own = new Intl.DateTimeFormat(undefined, { timeZone: zone, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }).format(new Date(time));
  return (
    <time dateTime={time}>
      {own} <span className="stat-note">{zone}</span>
      {zone !== browserZone && (
        <span className="stat-note">
          {formatTime(time)} in {browserZone}
        </span>
      )}
    </time>
  );
}

function CheckActions({ check }: { check: CronCheck }) {
  const navigate = useNavigate();
  const listSearch = useCarriedSearch();
  const update = useUpdateCronCheck(check.id);
  const rotate = useRotateCronToken(check.id);
  const remove = useDeleteCronCheck(check.id);
  const paused = check.state === 'paused';
  return (
    <div className="monitor-actions">
      <div className="actions">
        <button type="button" disabled={update.isPending} onClick={() => update.mutate({ paused: !paused })}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <ConfirmButton
          label="Rotate token"
          title={`Rotate the ping URL of "${check.name}"?`}
          className=""
          pending={rotate.isPending}
          consequence={
            <>
              <p>The current ping URL stops working at once: every job still calling it gets 404 and its check-ins are lost, so the check goes late and then down.</p>
              <p>Put the new URL, shown next, in every crontab that uses this check.</p>
            </>
          }
          onConfirm={() => rotate.mutate()}
        />
        <ConfirmButton
          label="Delete check"
          title={`Delete "${check.name}"?`}
          pending={remove.isPending}
          consequence={<p>The check and its whole check-in history are deleted, and its ping URL answers 404. An open alert about it is resolved. This cannot be undone.</p>}
          onConfirm={() => remove.mutate(undefined, { onSuccess: () => navigate(`/monitors/cron${listSearch}`, { replace: true }) })}
        />
      </div>
      {update.isError && <ErrorNotice error={update.error} title={paused ? 'The check was not resumed' : 'The check was not paused'} />}
      {rotate.isError && <ErrorNotice error={rotate.error} title="The token was not rotated" />}
      {remove.isError && <ErrorNotice error={remove.error} title="The check was not deleted" />}
      {rotate.isSuccess && (
        <div className="notice ok rotated" role="status">
          <strong>New ping URL.</strong> The old one no longer works; update your crontab:
          <div className="dsn">
            <code className="wrap-anywhere" aria-label="New ping URL">
              {rotate.data.ping_url}
            </code>
            <CopyButton text={rotate.data.ping_url} label="Copy new ping URL" />
          </div>
        </div>
      )}
    </div>
  );
}

function CheckSummary({ check }: { check: CronCheck }) {
  return (
    <dl className="stats">
      <Stat term="State" live>
        <CheckStateBadge check={check} />
      </Stat>
      <Stat term="Last check-in">{check.last_checkin_at ? <SeenAt time={check.last_checkin_at} /> : <span className="small muted">none yet</span>}</Stat>
      <Stat term="Next expected" className="small">
        <CheckTime time={check.next_expected_at} zone={check.timezone} />
        {check.state === 'new' && <span className="stat-note">shown, not enforced until the first check-in</span>}
      </Stat>
      <Stat term="Schedule" className="small">
        <span className="mono">{scheduleText(check.schedule)}</span>
        <span className="stat-note">{check.timezone}</span>
      </Stat>
      <Stat term="Grace">{check.checkin_margin} min</Stat>
      <Stat term="Maximum runtime">{check.max_runtime} min</Stat>
    </dl>
  );
}

const pingColumns = [
  { header: 'Received', cell: ({ ping }: ClassifiedPing) => <span className="nowrap">{formatTime(ping.received_at)}</span> },
  {
    header: 'Signal',
    cell: ({ ping, kind, expectedAt }: ClassifiedPing) => (
      <>
        <span className={`badge ${KIND_BADGE[kind]}`}>{KIND_LABEL[kind]}</span>
        {expectedAt !== undefined && <div className="small muted">expected {formatTime(expectedAt, 'time')}</div>}
        {ping.source === 'monitor' && <div className="small muted">judged by Sluice</div>}
      </>
    ),
  },
  { header: 'Duration', numeric: true, cell: ({ ping }: ClassifiedPing) => formatDuration(ping.duration_ms) },
  { header: 'Run', cell: ({ ping }: ClassifiedPing) => <span className="mono small wrap-anywhere">{ping.run_id ?? '—'}</span> },
  {
    header: 'Output',
    cell: ({ ping }: ClassifiedPing) =>
      ping.excerpt ? (
        <details className="excerpt message-cell">
          <summary className="small">{ping.excerpt.slice(0, 60)}</summary>
          <pre>{ping.excerpt}</pre>
        </details>
      ) : (
        <span className="muted">—</span>
      ),
  },
];

/** The window's pings as a strip of ok, late, failed, timed-out and missed slices, then one row each. */
function CheckTimeline({ check }: { check: CronCheck }) {
  const window = useTimeWindow();
  const [shown, setShown] = useState(PINGS_SHOWN);
  const pings = useCronPings(check.id, window, `${check.last_checkin_at}|${check.next_expected_at}|${check.state}`);
  const classified = useMemo(() => (pings.data ? classifyPings(pings.data.items, check) : []), [pings.data, check]);
  const newestFirst = useMemo(() => [...classified].reverse(), [classified]);
  return (
    <section className="panel history-panel" aria-labelledby="pings-heading">
      <h2 id="pings-heading">Check-ins</h2>
      <QueryView query={pings} loadingLabel="Loading check-ins…">
        {(history) => (
          <>
            <StatusStrip label="Check-ins" from={history.from} to={history.to} marks={classified.map(({ ping, kind }) => ({ time: Date.parse(ping.received_at), kind }))} kinds={PING_KINDS} />
            {!history.complete && <p className="small muted">The newest {HISTORY_LIMIT.toLocaleString()} check-ins of this window are shown; pick a shorter range to see all of them.</p>}
            <p className="small muted">A check-in is late when it came after the time the schedule expected it (counted from the check-in before). Missed and timed-out runs are Sluice&apos;s own verdicts.</p>
            {newestFirst.length === 0 ? (
              <p className="muted">No check-ins in this time range. Use the ping URL above in your job, or widen the range.</p>
            ) : (
              <>
                <Table caption="Check-ins, newest first" captionHidden columns={pingColumns} rows={newestFirst.slice(0, shown)} rowKey={({ ping }) => ping.id} />
                {newestFirst.length > shown && (
                  <button type="button" onClick={() => setShown(shown + PINGS_SHOWN)}>
                    Show older check-ins
                  </button>
                )}
              </>
            )}
          </>
        )}
      </QueryView>
    </section>
  );
}

function EditCheck({ check }: { check: CronCheck }) {
  const update = useUpdateCronCheck(check.id);
  return (
    <section className="panel" aria-labelledby="edit-heading">
      <h2 id="edit-heading">Edit check</h2>
      {update.isSuccess && !update.isPending && (
        <p className="notice ok small" role="status">
          Saved.
        </p>
      )}
      {/* keyed by the saved check, so the form starts again from what was saved */}
      <CheckForm key={`${check.name}|${check.slug}|${JSON.stringify(check.schedule)}|${check.timezone}|${check.checkin_margin}|${check.max_runtime}`} check={check} submitLabel="Save changes" pending={update.isPending} error={update.error} onSubmit={(body) => update.mutate(body)} />
    </section>
  );
}

export default function CronCheckPage() {
  const { checkId = '' } = useParams();
  const check = useCronCheck(checkId);
  return (
    <MonitorFrame
      query={check}
      what="Cron check"
      list={{ path: '/monitors/cron', label: 'Cron checks' }}
      description={(data) => (
        <>
          <ProjectName id={data.project_id} /> · <span className="mono">{data.slug}</span>
        </>
      )}
    >
      {(data) => (
        <>
          <CheckActions check={data} />
          <CheckSummary check={data} />
          <PingSetup check={data} />
          <CheckTimeline check={data} />
          <EditCheck check={data} />
        </>
      )}
    </MonitorFrame>
  );
}
