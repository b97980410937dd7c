import { useEffect, useRef } from 'react';
import { runtimeConfig } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { Table } from '../../components/Table';
import { ErrorNotice, QueryView } from '../../components/states';
import { formatCount, formatNumber } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useStartCheckout, useUsage, type Usage } from './usage-api';
import './projects.css';

const CATEGORY_LABEL: Record<string, string> = {
  errors: 'Errors',
  spans: 'Spans',
  logs: 'Log lines',
  metrics: 'Metric points',
  replays: 'Replay segments',
  checkins: 'Check-ins',
  feedback: 'Feedback',
  sessions: 'Sessions',
};
const REASON_LABEL: Record<string, string> = {
  invalid: 'not valid for its type',
  too_large: 'over its size limit',
  spool_expired: 'kept in the ingest spool too long while Redis was down',
};

const monthOf = (period: Usage['period']) => new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' }).format(new Date(period.start));
const dayOf = (iso: string) => new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' }).format(new Date(iso));

/** A bar the width of the share used, drawn through the DOM (the CSP allows no inline style attribute). */
function UsageBar({ percent }: { percent: number }) {
  const fill = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (fill.current) fill.current.style.width = `${Math.min(100, percent)}%`;
  }, [percent]);
  return (
    <span className={`usage-bar${percent > 100 ? ' over' : ''}`} aria-hidden="true">
      <span ref={fill} />
    </span>
  );
}

function Upgrade() {
  const checkout = useStartCheckout();
  return (
    <div className="actions">
      <button
        type="button"
        className="primary"
        disabled={checkout.isPending || checkout.isSuccess}
        onClick={() => checkout.mutate(1, { onSuccess: (session) => window.location.assign(session.url) })}
      >
        {checkout.isPending || checkout.isSuccess ? 'Opening the checkout…' : 'Upgrade'}
      </button>
      {checkout.isError && <ErrorNotice error={checkout.error} title="The checkout did not open" />}
    </div>
  );
}

function Dropped({ dropped, caption }: { dropped: Usage['dropped']; caption: string }) {
  return (
    <Table
      caption={caption}
      rows={dropped}
      rowKey={(item) => `${item.category}-${item.reason}`}
      columns={[
        { header: 'Would have counted as', cell: (item) => CATEGORY_LABEL[item.category] ?? item.category },
        { header: 'Reason', cell: (item) => `${item.reason}: ${REASON_LABEL[item.reason] ?? ''}` },
        { header: 'Items', numeric: true, cell: (item) => formatCount(item.quantity) },
      ]}
    />
  );
}

function UsageReport({ usage }: { usage: Usage }) {
  const categories = usage.categories.map((item) => item.category);
  return (
    <>
      <p className="notice info">{usage.caveat}</p>
      <Table
        caption={`${monthOf(usage.period)}: ${dayOf(usage.period.start)} to ${dayOf(new Date(Date.parse(usage.period.end) - 1).toISOString())} (UTC), by category`}
        rows={usage.categories}
        rowKey={(item) => item.category}
        columns={[
          { header: 'Category', cell: (item) => CATEGORY_LABEL[item.category] ?? item.category },
          { header: 'Used', numeric: true, cell: (item) => formatCount(item.used) },
          { header: 'Included in the plan', numeric: true, cell: (item) => (item.included == null ? 'no figure' : formatCount(item.included)) },
          { header: 'Of the plan', numeric: true, cell: (item) => (item.percent_used == null ? '—' : `${formatNumber(item.percent_used)} %`) },
          { header: 'Share', hiddenHeader: true, cell: (item) => (item.percent_used == null ? null : <UsageBar percent={item.percent_used} />) },
        ]}
      />
      <Table
        caption="By project"
        rows={usage.projects}
        rowKey={(project) => project.project_id}
        columns={[
          { header: 'Project', cell: (project) => project.name ?? <span className="muted">deleted project</span> },
          ...categories.map((category) => ({
            header: CATEGORY_LABEL[category] ?? category,
            numeric: true,
            cell: (project: Usage['projects'][number]) => formatCount(project.categories.find((item) => item.category === category)?.used ?? 0),
          })),
          { header: 'Dropped', numeric: true, cell: (project) => formatCount(project.dropped.reduce((sum, item) => sum + item.quantity, 0)) },
        ]}
      />
      <section className="panel" aria-labelledby="dropped-heading">
        <h2 id="dropped-heading">Dropped this month</h2>
        <p className="small muted">Items of requests ingest accepted but could not store. They are not counted in “Used”.</p>
        {usage.dropped.length === 0 ? <p>Nothing was dropped this month.</p> : <Dropped dropped={usage.dropped} caption="Dropped items by reason" />}
      </section>
    </>
  );
}

/** `/settings/usage`: this month against the plan, the API's caveat, what was dropped, and "Upgrade" where checkout is configured. */
export default function UsagePage() {
  const { get } = useQueryParams();
  const usage = useUsage();
  const canAdmin = useCan('admin');
  const returned = get('checkout');
  return (
    <>
      <PageHeader title="Usage" description="What this organization sent this month, per category, against the plan's figures." actions={canAdmin && runtimeConfig().checkout ? <Upgrade /> : undefined} />
      {returned === 'success' && (
        <p className="notice ok" role="status">
          The checkout is complete.
        </p>
      )}
      {returned === 'cancelled' && (
        <p className="notice info" role="status">
          The checkout was cancelled; nothing was charged.
        </p>
      )}
      <QueryView query={usage}>{(data) => <UsageReport usage={data} />}</QueryView>
    </>
  );
}
