import { useMemo, useRef, useState } from 'react';
import { Link, useParams } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { LeaveGuard } from '../../components/LeaveGuard';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, Loading } from '../../components/states';
import { useCarriedSearch, useScope, useTimeWindow } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useDashboard, useReplaceWidgets, type Dashboard, type ViewName, type WidgetInput, type WidgetParams } from './api';
import { byPlace, firstFreePlace } from './layout';
import { WidgetForm, type NewWidget } from './WidgetForm';
import { WidgetGrid, type DraftWidget } from './WidgetGrid';
import './dashboards.css';

/** The saved widgets in reading order. */
const draftOf = (dashboard: Dashboard): DraftWidget[] =>
  byPlace(dashboard.widgets.map((widget) => ({ key: widget.id, id: widget.id, title: widget.title, type: widget.type, query: widget.query, layout: widget.layout })));

/** The set as `PUT …/widgets` takes it: ids and titles kept, new widgets without either. */
const inputOf = (widget: DraftWidget): WidgetInput => ({
  ...(widget.id && { id: widget.id }),
  ...(widget.title && { title: widget.title }),
  type: widget.type,
  query: { view: widget.query.view as ViewName, params: widget.query.params as WidgetParams },
  layout: widget.layout,
});

function DashboardView({ dashboard }: { dashboard: Dashboard }) {
  const { project } = useScope();
  const window = useTimeWindow();
  const listSearch = useCarriedSearch();
  const canEdit = useCan('member');
  const save = useReplaceWidgets(dashboard.id);
  const [draft, setDraft] = useState<DraftWidget[] | null>(null);
  const [adding, setAdding] = useState(false);
  const [said, setSaid] = useState('');
  const nextKey = useRef(0);
  const saved = useMemo(() => draftOf(dashboard), [dashboard]);
  const editing = draft !== null;
  const widgets = draft ?? saved;
  const changed = editing && JSON.stringify(draft) !== JSON.stringify(saved);
  const scope = useMemo(() => ({ project, window }), [project, window]);

  const edit = (withForm: boolean) => {
    save.reset();
    setDraft(saved);
    setAdding(withForm);
    setSaid('');
  };
  const stop = () => {
    setDraft(null);
    setAdding(false);
    save.reset();
  };
  const change = (next: DraftWidget[], announcement: string) => {
    setDraft(next);
    setSaid(announcement);
  };
  const add = (widget: NewWidget) => {
    const current = draft ?? saved;
    const key = `new-${nextKey.current++}`;
    const layout = firstFreePlace(current, widget.size.w, widget.size.h);
    change([...current, { key, ...(widget.title && { title: widget.title }), type: widget.type, query: widget.query, layout }], `Widget added: ${widget.size.w} columns × ${widget.size.h} rows at column ${layout.x + 1}, row ${layout.y + 1}`);
    setAdding(false);
  };

  const actions = editing ? (
    <>
      <button type="button" aria-expanded={adding} onClick={() => setAdding(!adding)}>
        Add a widget
      </button>
      {changed ? (
        <ConfirmButton label="Cancel" className="" title="Discard your changes?" confirmLabel="Discard changes" consequence={<p>The widgets added, moved, resized or removed since you chose Edit go back to how they were saved.</p>} onConfirm={stop} />
      ) : (
        <button type="button" onClick={stop}>
          Cancel
        </button>
      )}
      <button type="button" className="primary" disabled={save.isPending} onClick={() => save.mutate(byPlace(widgets).map(inputOf), { onSuccess: stop })}>
        {save.isPending ? 'Saving…' : 'Save'}
      </button>
    </>
  ) : (
    <>
      <Link className="button" to={`/dashboards${listSearch}`}>
        All dashboards
      </Link>
      <button type="button" className="primary" disabled={!canEdit} title={canEdit ? undefined : 'Your role may only read dashboards'} onClick={() => edit(false)}>
        Edit
      </button>
    </>
  );

  return (
    <>
      <PageHeader title={dashboard.name} description={dashboard.description ?? undefined} actions={actions} />
      <LeaveGuard when={changed} consequence={<p>The widgets added, moved, resized or removed since you chose Edit are not saved, and are lost if you leave.</p>} />
      {editing && (
        <p className="notice info small">
          Editing. Move and resize a widget with its buttons, or on a wide screen drag it by its handle (⠿) or its corner; widgets in the way move down. Nothing is kept until you choose Save.
        </p>
      )}
      <p className="visually-hidden" aria-live="polite">
        {said}
      </p>
      {save.isError && <ErrorNotice error={save.error} title="The widgets were not saved" />}
      {editing && adding && <WidgetForm scopeProject={project} window={window} onAdd={add} onClose={() => setAdding(false)} />}
      {widgets.length === 0 ? (
        <EmptyState title={editing ? 'No widgets yet' : 'This dashboard has no widgets yet'}>
          <p>A widget shows one view (issues, traces, logs, traffic, a metric…) with its filters, as a chart or a table. The top bar's project and time range apply to all of them.</p>
          {!editing && (
            <button type="button" className="primary" disabled={!canEdit} onClick={() => edit(true)}>
              Add a widget
            </button>
          )}
        </EmptyState>
      ) : (
        <WidgetGrid widgets={widgets} scope={scope} editing={editing} onChange={change} />
      )}
    </>
  );
}

export default function DashboardPage() {
  const { dashboardId } = useParams();
  const dashboard = useDashboard(dashboardId!);
  const listSearch = useCarriedSearch();
  if (dashboard.isPending) return <Loading label="Loading the dashboard…" />;
  if (dashboard.isError) {
    return (
      <>
        <PageHeader title="Dashboard" />
        <ErrorNotice error={dashboard.error} title="The dashboard could not be loaded" />
        <p>
          <Link to={`/dashboards${listSearch}`}>See every dashboard</Link>
        </p>
      </>
    );
  }
  return <DashboardView dashboard={dashboard.data} />;
}
