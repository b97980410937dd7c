import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatAgo, formatCount, formatTime } from '../../lib/format';
import { useCarriedSearch, useQueryParams } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useCreateDashboard, useDashboards, useDeleteDashboard, useUpdateDashboard, type Dashboard } from './api';
import './dashboards.css';

const NAME_MAX = 200;
const DESCRIPTION_MAX = 2000;

/** Name and description, as both creating and renaming ask for them. */
function DetailsFields({ name, description }: { name?: string; description?: string | null }) {
  return (
    <>
      <label className="field">
        <span>Name</span>
        <input type="text" name="name" defaultValue={name} required maxLength={NAME_MAX} autoComplete="off" />
      </label>
      <label className="field dashboard-description-field">
        <span>
          Description <span className="muted">(optional)</span>
        </span>
        <input type="text" name="description" defaultValue={description ?? ''} maxLength={DESCRIPTION_MAX} autoComplete="off" />
      </label>
    </>
  );
}

const detailsOf = (form: HTMLFormElement) => {
  const data = new FormData(form);
  return { name: String(data.get('name') ?? '').trim(), description: String(data.get('description') ?? '').trim() };
};

function CreateDashboard({ canEdit }: { canEdit: boolean }) {
  const headingId = useId();
  const create = useCreateDashboard();
  const navigate = useNavigate();
  const carried = useCarriedSearch();
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const { name, description } = detailsOf(event.currentTarget);
    create.mutate({ name, ...(description && { description }) }, { onSuccess: (dashboard) => navigate(`/dashboards/${dashboard.id}${carried}`) });
  };
  return (
    <section className="panel" aria-labelledby={headingId}>
      <h2 id={headingId}>New dashboard</h2>
      <form className="dashboard-details" onSubmit={submit}>
        <DetailsFields />
        <button type="submit" className="primary" disabled={!canEdit || create.isPending} title={canEdit ? undefined : 'Your role may only read dashboards'}>
          {create.isPending ? 'Creating…' : 'Create dashboard'}
        </button>
      </form>
      {create.isError && <ErrorNotice error={create.error} title="The dashboard was not created" />}
    </section>
  );
}

function RenameForm({ dashboard, onDone }: { dashboard: Dashboard; onDone: () => void }) {
  const rename = useUpdateDashboard(dashboard.id);
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const { name, description } = detailsOf(event.currentTarget);
    rename.mutate({ name, description: description || null }, { onSuccess: onDone });
  };
  return (
    <form className="dashboard-rename" aria-label={`Rename ${dashboard.name}`} onSubmit={submit}>
      <DetailsFields name={dashboard.name} description={dashboard.description} />
      <div className="actions">
        <button type="submit" className="primary" disabled={rename.isPending}>
          {rename.isPending ? 'Saving…' : 'Save name'}
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      {rename.isError && <ErrorNotice error={rename.error} title="The dashboard was not renamed" />}
    </form>
  );
}

const widgetCount = (count: number) => `${formatCount(count)} ${count === 1 ? 'widget' : 'widgets'}`;

export default function DashboardListPage() {
  const { get, update } = useQueryParams();
  const cursor = get('cursor');
  const dashboards = useDashboards(cursor);
  const remove = useDeleteDashboard();
  const canEdit = useCan('member');
  const carried = useCarriedSearch();
  const [renaming, setRenaming] = useState<string>();
  const readOnly = canEdit ? undefined : 'Your role may only read dashboards';

  const columns: Column<Dashboard>[] = [
    {
      header: 'Dashboard',
      cell: (dashboard) =>
        renaming === dashboard.id ? (
          <RenameForm dashboard={dashboard} onDone={() => setRenaming(undefined)} />
        ) : (
          <div className="dashboard-name-cell">
            <Link to={`/dashboards/${dashboard.id}${carried}`}>{dashboard.name}</Link>
            {dashboard.description && <div className="small">{dashboard.description}</div>}
            <div className="small muted" title={formatTime(dashboard.updated_at)}>
              Changed {formatAgo(dashboard.updated_at)}
            </div>
          </div>
        ),
    },
    { header: 'Widgets', numeric: true, cell: (dashboard) => formatCount(dashboard.widgets.length) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (dashboard) => (
        <div className="actions dashboard-actions">
          <button type="button" disabled={!canEdit || renaming === dashboard.id} title={readOnly} onClick={() => setRenaming(dashboard.id)}>
            Rename
          </button>
          <ConfirmButton
            label="Delete"
            title={`Delete “${dashboard.name}”?`}
            consequence={
              <p>
                {dashboard.widgets.length ? `Its ${widgetCount(dashboard.widgets.length)} and their layout are lost` : 'Its name and description are lost'}, for everyone in the organisation. The issues, traces, logs and metrics
                widgets show are not touched.
              </p>
            }
            confirmLabel="Delete dashboard"
            disabled={!canEdit}
            pending={remove.isPending && remove.variables === dashboard.id}
            onConfirm={() => remove.mutate(dashboard.id)}
          />
        </div>
      ),
    },
  ];

  return (
    <>
      <PageHeader title="Dashboards" description="Your own pages of charts and tables, each widget one view with its filters on a 12-column grid. The top bar's project and time range apply to every widget." />
      <CreateDashboard canEdit={canEdit} />
      {remove.isError && <ErrorNotice error={remove.error} title="The dashboard was not deleted" />}
      <QueryView
        query={dashboards}
        loadingLabel="Loading dashboards…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          <EmptyState title="No dashboards yet">
            <p>Name one above, then add widgets: the newest issues, traffic over time, a metric, log lines… Everyone in the organisation sees and may change it.</p>
          </EmptyState>
        }
      >
        {(page) => (
          <>
            <Table caption="Dashboards, oldest first" captionHidden columns={columns} rows={page.data} rowKey={(dashboard) => dashboard.id} />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
          </>
        )}
      </QueryView>
    </>
  );
}
