import { useMemo, useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { ErrorNotice, QueryView } from '../../components/states';
import { Table } from '../../components/Table';
import { TimeSeriesChart } from '../../components/TimeSeriesChart';
import { formatCount, formatDuration, formatPercent, formatTime } from '../../lib/format';
import { useCarriedSearch, useTimeWindow } from '../../lib/url-state';
import { SeenAt } from '../issues/parts';
import { HISTORY_LIMIT, useDeleteMonitor, useProbeResults, useUpdateMonitor, useUptimeMonitor, type ProbeResult, type UptimeMonitor } from './api';
import { incidentsOf, latestTlsDaysLeft, uptimeRatio, type Incident } from './history';
import { MonitorForm } from './MonitorForm';
import { MonitorFrame, MonitorStateBadge, ProjectName, Stat, StatusStrip, TlsDays, type StripKind } from './parts';
import './monitors.css';

type ProbeKind = 'ok' | 'failed';
const PROBE_KINDS: StripKind<ProbeKind>[] = [
  { kind: 'ok', label: 'up', tone: 'ok' },
  { kind: 'failed', label: 'failed', tone: 'danger' },
];
const PROBES_SHOWN = 50;

function MonitorActions({ monitor }: { monitor: UptimeMonitor }) {
  const navigate = useNavigate();
  const listSearch = useCarriedSearch();
  const update = useUpdateMonitor(monitor.id);
  const remove = useDeleteMonitor(monitor.id);
  const paused = monitor.state === 'paused';
  return (
    <div className="monitor-actions">
      <div className="actions">
        <button type="button" disabled={update.isPending} onClick={() => update.mutate({ paused: !paused })}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <ConfirmButton
          label="Delete monitor"
          title={`Delete "${monitor.name}"?`}
          pending={remove.isPending}
          consequence={<p>The monitor stops probing, and all its probe results (its uptime and incident history) are deleted. Its open alerts are resolved. This cannot be undone.</p>}
          onConfirm={() => remove.mutate(undefined, { onSuccess: () => navigate(`/monitors/uptime${listSearch}`, { replace: true }) })}
        />
      </div>
      {update.isError && <ErrorNotice error={update.error} title={paused ? 'The monitor was not resumed' : 'The monitor was not paused'} />}
      {remove.isError && <ErrorNotice error={remove.error} title="The monitor was not deleted" />}
    </div>
  );
}

function MonitorSummary({ monitor, probes }: { monitor: UptimeMonitor; probes: readonly ProbeResult[] | undefined }) {
  const ratio = probes ? uptimeRatio(probes) : undefined;
  const latencies = (probes ?? []).flatMap((probe) => (probe.ok && probe.latency_ms !== null ? [probe.latency_ms] : []));
  const average = latencies.length ? latencies.reduce((sum, value) => sum + value, 0) / latencies.length : null;
  return (
    <dl className="stats">
      <Stat term="Status" live>
        <MonitorStateBadge state={monitor.state} />
        {monitor.last_error && monitor.state !== 'up' && <span className="stat-note wrap-anywhere">{monitor.last_error}</span>}
      </Stat>
      <Stat term="Uptime in this range">
        {ratio === undefined ? '…' : formatPercent(ratio)}
        {probes && (
          <span className="stat-note">
            {formatCount(probes.filter((probe) => probe.ok).length)} of {formatCount(probes.length)} probes up
          </span>
        )}
      </Stat>
      <Stat term="Average response">{formatDuration(average)}</Stat>
      <Stat term="Last probe">{monitor.last_checked_at ? <SeenAt time={monitor.last_checked_at} /> : <span className="small muted">within seconds</span>}</Stat>
      <Stat term="Next probe" className="small">
        {monitor.next_check_at ? formatTime(monitor.next_check_at) : 'paused'}
      </Stat>
      <Stat term="TLS certificate">
        <TlsDays days={probes ? latestTlsDaysLeft(probes) : null} expiresAt={monitor.tls_expires_at} />
        {monitor.tls_expires_at && <span className="stat-note">expires {formatTime(monitor.tls_expires_at)}</span>}
      </Stat>
    </dl>
  );
}

const incidentColumns = [
  { header: 'Went down', cell: (incident: Incident) => <span className="nowrap">{formatTime(incident.start)}</span> },
  { header: 'Back up', cell: (incident: Incident) => (incident.end ? <span className="nowrap">{formatTime(incident.end)}</span> : <span className="badge error">ongoing</span>) },
  { header: 'Down for', numeric: true, cell: (incident: Incident) => formatDuration((incident.end ? Date.parse(incident.end) : Date.now()) - Date.parse(incident.start)) },
  { header: 'Failed probes', numeric: true, cell: (incident: Incident) => formatCount(incident.failedProbes) },
  { header: 'First error', cell: (incident: Incident) => <span className="small message-cell">{incident.firstError ?? '—'}</span> },
];

const probeColumns = [
  { header: 'Probed', cell: (probe: ProbeResult) => <span className="nowrap">{formatTime(probe.checked_at)}</span> },
  { header: 'Result', cell: (probe: ProbeResult) => <span className={`badge ${probe.ok ? 'ok' : 'error'}`}>{probe.ok ? 'up' : 'failed'}</span> },
  { header: 'Status', numeric: true, cell: (probe: ProbeResult) => probe.status_code ?? '—' },
  { header: 'Response time', numeric: true, cell: (probe: ProbeResult) => formatDuration(probe.latency_ms) },
  { header: 'Certificate', numeric: true, cell: (probe: ProbeResult) => (probe.tls_days_left === null ? '—' : `${probe.tls_days_left} days`) },
  { header: 'Error', cell: (probe: ProbeResult) => <span className="small message-cell">{probe.error ?? ''}</span> },
];

function ProbeHistory({ monitor, history }: { monitor: UptimeMonitor; history: { items: ProbeResult[]; from: number; to: number; complete: boolean } }) {
  const [shown, setShown] = useState(PROBES_SHOWN);
  const oldestFirst = useMemo(() => [...history.items].reverse(), [history.items]);
  const chart = useMemo(() => ({ times: oldestFirst.map((probe) => Date.parse(probe.checked_at)), series: [{ label: 'Response time', values: oldestFirst.map((probe) => probe.latency_ms) }] }), [oldestFirst]);
  const incidents = useMemo(() => incidentsOf(history.items, monitor).reverse(), [history.items, monitor]);
  return (
    <>
      <section className="panel" aria-labelledby="latency-heading">
        <h2 id="latency-heading">Response time</h2>
        <TimeSeriesChart title="Response time of each probe" times={chart.times} series={chart.series} unit="ms" height={200} />
        <StatusStrip label="Probes" from={history.from} to={history.to} marks={history.items.map((probe) => ({ time: Date.parse(probe.checked_at), kind: probe.ok ? 'ok' : 'failed' }))} kinds={PROBE_KINDS} />
        {!history.complete && <p className="small muted">The newest {HISTORY_LIMIT.toLocaleString()} probes of this range are shown and counted; pick a shorter range to see all of them.</p>}
      </section>
      <section className="panel history-panel" aria-labelledby="incidents-heading">
        <h2 id="incidents-heading">Incidents</h2>
        <p className="small muted">
          Down periods in this range: from the first of {monitor.failure_threshold} failed probe{monitor.failure_threshold === 1 ? '' : 's'} in a row until {monitor.recovery_threshold} successful one{monitor.recovery_threshold === 1 ? '' : 's'} in a row.
        </p>
        {/* only once the history holds the monitor's latest probe, so it never flashes while the two are read */}
        {monitor.state === 'down' && history.items[0]?.checked_at === monitor.last_checked_at && !incidents.some((incident) => incident.end === null) && <p className="notice info small">The monitor went down before the probes of this range: widen the range to see when.</p>}
        {incidents.length === 0 ? <p className="muted">No incidents in this range.</p> : <Table caption="Incidents, newest first" captionHidden columns={incidentColumns} rows={incidents} rowKey={(incident) => incident.start} />}
      </section>
      <section className="panel history-panel" aria-labelledby="probes-heading">
        <h2 id="probes-heading">Probes</h2>
        {history.items.length === 0 ? (
          <p className="muted">No probes in this range yet. The first one runs within seconds of creating or resuming the monitor.</p>
        ) : (
          <>
            <Table caption="Probe results, newest first" captionHidden columns={probeColumns} rows={history.items.slice(0, shown)} rowKey={(probe) => probe.id} />
            {history.items.length > shown && (
              <button type="button" onClick={() => setShown(shown + PROBES_SHOWN)}>
                Show older probes
              </button>
            )}
          </>
        )}
      </section>
    </>
  );
}

function EditMonitor({ monitor }: { monitor: UptimeMonitor }) {
  const update = useUpdateMonitor(monitor.id);
  return (
    <section className="panel" aria-labelledby="edit-heading">
      <h2 id="edit-heading">Edit monitor</h2>
      {update.isSuccess && !update.isPending && (
        <p className="notice ok small" role="status">
          Saved.
        </p>
      )}
      {/* keyed by the saved monitor, so the form starts again from what was saved */}
      <MonitorForm key={JSON.stringify({ ...monitor, state: undefined, last_checked_at: undefined, last_error: undefined, next_check_at: undefined, tls_expires_at: undefined })} monitor={monitor} submitLabel="Save changes" pending={update.isPending} error={update.error} onSubmit={(changes) => update.mutate(changes)} />
    </section>
  );
}

export default function UptimeMonitorPage() {
  const { monitorId = '' } = useParams();
  const monitor = useUptimeMonitor(monitorId);
  const window = useTimeWindow();
  const version = monitor.data ? `${monitor.data.last_checked_at}|${monitor.data.state}` : '';
  const probes = useProbeResults(monitorId, window, version);
  return (
    <MonitorFrame
      query={monitor}
      what="Uptime monitor"
      list={{ path: '/monitors/uptime', label: 'Uptime monitors' }}
      description={(data) => (
        <>
          <ProjectName id={data.project_id} /> · <span className="mono">{data.method}</span> <span className="wrap-anywhere">{data.url}</span> · every {data.interval_seconds} s
        </>
      )}
    >
      {(data) => (
        <>
          <MonitorActions monitor={data} />
          <MonitorSummary monitor={data} probes={probes.data?.items} />
          <QueryView query={probes} loadingLabel="Loading probe results…">
            {(history) => <ProbeHistory monitor={data} history={history} />}
          </QueryView>
          <EditMonitor monitor={data} />
        </>
      )}
    </MonitorFrame>
  );
}
