import { Link, useNavigate } from 'react-router';
import { ChoiceField } from '../../components/ChoiceField';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { useCarriedSearch, useQueryParams, useScope } from '../../lib/url-state';
import { SeenAt } from '../issues/parts';
import { useCreateMonitor, useUptimeMonitors, type MonitorState, type UptimeMonitor } from './api';
import { MonitorForm } from './MonitorForm';
import { MonitorStateBadge, ProjectName, TlsDays } from './parts';
import './monitors.css';

const STATES: readonly MonitorState[] = ['pending', 'up', 'down', 'paused'];

function NewMonitor({ project, onClose }: { project: string | undefined; onClose: () => void }) {
  const create = useCreateMonitor();
  const navigate = useNavigate();
  const search = useCarriedSearch();
  return (
    <section className="panel new-panel" aria-labelledby="new-monitor-heading">
      <div className="panel-head">
        <h2 id="new-monitor-heading">New monitor</h2>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
      <MonitorForm project={project} submitLabel="Create monitor" pending={create.isPending} error={create.error} onSubmit={(body) => create.mutate(body, { onSuccess: (monitor) => navigate(`/monitors/uptime/${monitor.id}${search}`) })} />
    </section>
  );
}

export default function UptimeListPage() {
  const { get, update } = useQueryParams();
  const { project } = useScope();
  const search = useCarriedSearch();
  const state = STATES.find((candidate) => candidate === get('state'));
  const cursor = get('cursor');
  const monitors = useUptimeMonitors({ project, state }, cursor);
  const creating = get('new') === 'monitor';
  const columns: Column<UptimeMonitor>[] = [
    {
      header: 'Monitor',
      cell: (monitor) => (
        <div className="name-cell">
          <Link to={`/monitors/uptime/${monitor.id}${search}`}>{monitor.name}</Link>
          <div className="small muted url-cell">
            <span className="mono">{monitor.method}</span> {monitor.url}
          </div>
        </div>
      ),
    },
    { header: 'Project', cell: (monitor) => <ProjectName id={monitor.project_id} /> },
    {
      header: 'State',
      cell: (monitor) => (
        <>
          <MonitorStateBadge state={monitor.state} />
          {monitor.state === 'down' && monitor.last_error && <div className="small muted url-cell">{monitor.last_error}</div>}
        </>
      ),
    },
    { header: 'Last probe', cell: (monitor) => (monitor.last_checked_at ? <SeenAt time={monitor.last_checked_at} /> : <span className="muted">not yet</span>) },
    { header: 'Interval', numeric: true, cell: (monitor) => `${monitor.interval_seconds} s` },
    { header: 'Certificate', numeric: true, cell: (monitor) => <TlsDays expiresAt={monitor.tls_expires_at} /> },
  ];
  return (
    <>
      <PageHeader
        title="Uptime monitors"
        description="HTTP(S) endpoints probed on an interval. A monitor goes down, with an alert, after its failure threshold of failed probes in a row."
        actions={
          !creating && (
            <button type="button" className="primary" onClick={() => update({ new: 'monitor' })}>
              New monitor
            </button>
          )
        }
      />
      {creating && <NewMonitor project={project} onClose={() => update({ new: undefined })} />}
      <div className="toolbar">
        <ChoiceField label="State" name="state" value={state} choices={STATES} anyLabel="Any state" onChange={(value) => update({ state: value })} />
      </div>
      <QueryView
        query={monitors}
        loadingLabel="Loading uptime monitors…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          state ? (
            <EmptyState title={`No ${state} monitors`}>
              <p>No monitor is {state} right now.</p>
              <button type="button" onClick={() => update({ state: undefined })}>
                Show every monitor
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No uptime monitors yet">
              <p>Add a monitor for each endpoint that must answer: Sluice probes it from the server and tells you when it stops answering as expected, and when its certificate is about to expire.</p>
              {!creating && (
                <button type="button" className="primary" onClick={() => update({ new: 'monitor' })}>
                  New monitor
                </button>
              )}
            </EmptyState>
          )
        }
      >
        {(page) => (
          <div className={`monitor-list${monitors.isPlaceholderData ? ' stale' : ''}`} aria-busy={monitors.isPlaceholderData}>
            <Table caption="Uptime monitors" captionHidden columns={columns} rows={page.data} rowKey={(monitor) => monitor.id} />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </div>
        )}
      </QueryView>
    </>
  );
}
