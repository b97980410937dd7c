import { useCallback, useEffect, useLayoutEffect, useRef, type FormEvent } from 'react';
import { Link } from 'react-router';
import type { QueryOf } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatCount } from '../../lib/format';
import { useQueryParams, useScope, useTimeWindow } from '../../lib/url-state';
import { useIssues, type IssueFilters } from './api';
import { LevelBadge, SeenAt, StatusBadge } from './parts';
import './issues.css';
import { FormField } from '../../components/FormField';

type IssueQuery = QueryOf<'/v1/issues'>;
type IssuePage = NonNullable<ReturnType<typeof useIssues>['data']>;
type ListedIssue = IssuePage['data'][number];

const STATUSES: Array<NonNullable<IssueQuery['status']>> = ['unresolved', 'resolved', 'ignored'];
const LEVELS: Array<NonNullable<IssueQuery['level']>> = ['fatal', 'error', 'warning', 'info', 'debug'];
const SORTS: Array<{ value: NonNullable<IssueQuery['sort']>; label: string }> = [
  { value: 'last_seen', label: 'Last seen' },
  { value: 'first_seen', label: 'First seen' },
  { value: 'events', label: 'Most events' },
  { value: 'users', label: 'Most users' },
];

/** A URL value the API accepts for an enumerated parameter, or nothing (a hand-edited URL may hold anything). */
const oneOf = <T extends string>(allowed: readonly T[], value: string | undefined): T | undefined => allowed.find((item) => item === value);

const columns: Column<ListedIssue>[] = [
  {
    header: 'Issue',
    cell: (issue) => (
      <div className="title-cell">
        <Link to={`/issues/${issue.id}`} className="issue-title">
          {issue.title}
        </Link>
        {issue.culprit && <div className="small muted wrap-anywhere">{issue.culprit}</div>}
      </div>
    ),
  },
  { header: 'Level', cell: (issue) => <LevelBadge level={issue.level} /> },
  { header: 'Status', cell: (issue) => <StatusBadge status={issue.status} /> },
  { header: 'Events', numeric: true, cell: (issue) => formatCount(issue.count) },
  { header: 'Users', numeric: true, cell: (issue) => formatCount(issue.user_count) },
  { header: 'First seen', cell: (issue) => <SeenAt time={issue.first_seen} /> },
  { header: 'Last seen', cell: (issue) => <SeenAt time={issue.last_seen} /> },
];

/** Search and release are typed, so they apply on submit; the lists apply as soon as one is picked. */
function IssueFiltersBar() {
  const { get, update } = useQueryParams();
  const search = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    update({ q: String(form.get('q') ?? '').trim(), release: String(form.get('release') ?? '').trim() });
  };
  return (
    <div className="toolbar issue-filters">
      {/* keyed by the URL's values so the back button puts them back in the inputs */}
      <form key={`${get('q')}|${get('release')}`} className="issue-search" role="search" aria-label="Issues" onSubmit={search}>
        <label className="field">
          <span>Search</span>
          <input type="search" name="q" defaultValue={get('q') ?? ''} placeholder="Title or culprit" maxLength={200} />
        </label>
        <label className="field">
          <span>Release</span>
          <input type="text" name="release" defaultValue={get('release') ?? ''} placeholder="e.g. shop@1.4.0" />
        </label>
        <button type="submit">Search</button>
      </form>
      <FormField label="Status">
        {(control) => (
          <select {...control} value={get('status') ?? ''} onChange={(event) => update({ status: event.target.value })}>
            <option value="">Any status</option>
            {STATUSES.map((status) => (
              <option key={status} value={status}>
                {status[0]!.toUpperCase() + status.slice(1)}
              </option>
            ))}
          </select>
        )}
      </FormField>
      <FormField label="Level">
        {(control) => (
          <select {...control} value={get('level') ?? ''} onChange={(event) => update({ level: event.target.value })}>
            <option value="">Any level</option>
            {LEVELS.map((level) => (
              <option key={level} value={level}>
                {level[0]!.toUpperCase() + level.slice(1)}
              </option>
            ))}
          </select>
        )}
      </FormField>
      <FormField label="Sort by">
        {(control) => (
          <select {...control} value={get('sort') ?? 'last_seen'} onChange={(event) => update({ sort: event.target.value === 'last_seen' ? undefined : event.target.value })}>
            {SORTS.map((sort) => (
              <option key={sort.value} value={sort.value}>
                {sort.label}
              </option>
            ))}
          </select>
        )}
      </FormField>
    </div>
  );
}

/**
 * Keeps the row at the top of the window where it was when the list refreshes and new issues land above it,
 * so a reader's place never moves. Done here because Chromium does not anchor scrolling on table rows and
 * Safari does not anchor at all.
 */
function useKeepReaderInPlace(rows: readonly ListedIssue[]) {
  const list = useRef<HTMLDivElement>(null);
  const anchor = useRef<{ href: string; top: number } | undefined>(undefined);
  const remember = useCallback(() => {
    anchor.current = undefined;
    for (const row of list.current?.querySelectorAll('tbody tr') ?? []) {
      const { top, bottom } = row.getBoundingClientRect();
      const href = row.querySelector('a')?.getAttribute('href');
      if (bottom > 0 && href) {
        anchor.current = { href, top };
        return;
      }
    }
  }, []);
  useLayoutEffect(() => {
    const kept = anchor.current;
    if (kept && window.scrollY > 0) {
      const row = [...(list.current?.querySelectorAll('tbody tr a') ?? [])].find((link) => link.getAttribute('href') === kept.href)?.closest('tr');
      const moved = row ? row.getBoundingClientRect().top - kept.top : 0;
      if (moved) window.scrollBy(0, moved);
    }
    remember();
  }, [rows, remember]);
  useEffect(() => {
    window.addEventListener('scroll', remember, { passive: true });
    window.addEventListener('resize', remember);
    return () => {
      window.removeEventListener('scroll', remember);
      window.removeEventListener('resize', remember);
    };
  }, [remember]);
  return list;
}

function IssueTable({ page, cursor, refreshing }: { page: IssuePage; cursor: string | undefined; refreshing: boolean }) {
  const { update } = useQueryParams();
  const list = useKeepReaderInPlace(page.data);
  return (
    <div ref={list} className={refreshing ? 'issue-list stale' : 'issue-list'} aria-busy={refreshing}>
      <Table caption={`Issues (${formatCount(page.data.length)}${page.next_cursor ? ' on this page' : ''})`} captionHidden columns={columns} rows={page.data} rowKey={(issue) => issue.id} />
      <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
    </div>
  );
}

export default function IssueListPage() {
  const { get, update } = useQueryParams();
  const { project, environment } = useScope();
  const window = useTimeWindow();
  const filters: IssueFilters = {
    project,
    environment,
    q: get('q'),
    release: get('release'),
    status: oneOf(STATUSES, get('status')),
    level: oneOf(LEVELS, get('level')),
    sort: oneOf(
      SORTS.map((sort) => sort.value),
      get('sort'),
    ),
  };
  const cursor = get('cursor');
  const issues = useIssues(filters, window, cursor);
  const narrowed = Boolean(filters.q || filters.release || filters.status || filters.level || environment);
  const onboarding = project ? `/onboarding?project=${encodeURIComponent(project)}` : '/onboarding';
  return (
    <>
      <PageHeader title="Issues" description="Errors grouped into issues, newest activity first. The list updates while it is open." />
      <IssueFiltersBar />
      <QueryView
        query={issues}
        loadingLabel="Loading issues…"
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          narrowed ? (
            <EmptyState title="No issue matches these filters">
              <p>Widen the time range or clear the filters to see more.</p>
              <button type="button" onClick={() => update({ q: undefined, release: undefined, status: undefined, level: undefined, environment: undefined })}>
                Clear filters
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No issues yet">
              <p>Sluice shows an issue as soon as an SDK sends its first error in this time range.</p>
              <p>
                <Link to={onboarding}>Get the DSN and an SDK snippet</Link> to send your first error.
              </p>
            </EmptyState>
          )
        }
      >
        {(page) => <IssueTable page={page} cursor={cursor} refreshing={issues.isPlaceholderData} />}
      </QueryView>
    </>
  );
}
