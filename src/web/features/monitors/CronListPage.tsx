import { Link, useNavigate } from 'react-router';
import { ChoiceField } from '../../components/ChoiceField';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatTime } from '../../lib/format';
import { useCarriedSearch, useQueryParams, useScope } from '../../lib/url-state';
import { SeenAt } from '../issues/parts';
import { useCreateCronCheck, useCronChecks, type CheckState, type CronCheck } from './api';
import { CheckForm } from './CheckForm';
import { CheckStateBadge, ProjectName, scheduleText } from './parts';
import './monitors.css';

const STATES: readonly CheckState[] = ['new', 'up', 'late', 'down', 'paused'];

function NewCheck({ project, onClose }: { project: string | undefined; onClose: () => void }) {
  const create = useCreateCronCheck();
  const navigate = useNavigate();
  const search = useCarriedSearch();
  return (
    <section className="panel new-panel" aria-labelledby="new-check-heading">
      <div className="panel-head">
        <h2 id="new-check-heading">New check</h2>
        <button type="button" onClick={onClose}>
          Cancel
        </button>
      </div>
      <p className="small muted">Once created, the check&apos;s page shows its ping URL and the crontab line to paste.</p>
      <CheckForm project={project} submitLabel="Create check" pending={create.isPending} error={create.error} onSubmit={(body) => create.mutate(body, { onSuccess: (check) => navigate(`/monitors/cron/${check.id}${search}`) })} />
    </section>
  );
}

export default function CronListPage() {
  const { get, update } = useQueryParams();
  const { project } = useScope();
  const search = useCarriedSearch();
  const state = STATES.find((candidate) => candidate === get('state'));
  const cursor = get('cursor');
  const checks = useCronChecks({ project, state }, cursor);
  const creating = get('new') === 'check';
  const columns: Column<CronCheck>[] = [
    {
      header: 'Check',
      cell: (check) => (
        <div className="name-cell">
          <Link to={`/monitors/cron/${check.id}${search}`}>{check.name}</Link>
          <div className="small muted mono">{check.slug}</div>
        </div>
      ),
    },
    { header: 'Project', cell: (check) => <ProjectName id={check.project_id} /> },
    {
      header: 'Schedule',
      cell: (check) => (
        <>
          <span className="mono small">{scheduleText(check.schedule)}</span>
          <div className="small muted">{check.timezone}</div>
        </>
      ),
    },
    { header: 'State', cell: (check) => <CheckStateBadge check={check} /> },
    { header: 'Last ping', cell: (check) => (check.last_checkin_at ? <SeenAt time={check.last_checkin_at} /> : <span className="muted">never</span>) },
    { header: 'Next expected', cell: (check) => <span className="nowrap">{formatTime(check.next_expected_at)}</span> },
  ];
  return (
    <>
      <PageHeader
        title="Cron checks"
        description="Jobs that check in on a schedule. A check is late once its expected time passes, and down (with an alert) once its grace passes too, when a run fails, or when it runs too long."
        actions={
          !creating && (
            <button type="button" className="primary" onClick={() => update({ new: 'check' })}>
              New check
            </button>
          )
        }
      />
      {creating && <NewCheck project={project} onClose={() => update({ new: undefined })} />}
      <div className="toolbar">
        <ChoiceField label="State" name="state" value={state} choices={STATES} anyLabel="Any state" onChange={(value) => update({ state: value })} />
      </div>
      <QueryView
        query={checks}
        loadingLabel="Loading cron checks…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          state ? (
            <EmptyState title={`No ${state} checks`}>
              <p>No check is {state} right now.</p>
              <button type="button" onClick={() => update({ state: undefined })}>
                Show every check
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No cron checks yet">
              <p>Create a check for each scheduled job, then add its ping URL to the job&apos;s crontab line: Sluice tells you when a run is late, fails or never comes.</p>
              {!creating && (
                <button type="button" className="primary" onClick={() => update({ new: 'check' })}>
                  New check
                </button>
              )}
            </EmptyState>
          )
        }
      >
        {(page) => (
          <div className={`monitor-list${checks.isPlaceholderData ? ' stale' : ''}`} aria-busy={checks.isPlaceholderData}>
            <Table caption="Cron checks" captionHidden columns={columns} rows={page.data} rowKey={(check) => check.id} />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </div>
        )}
      </QueryView>
    </>
  );
}
