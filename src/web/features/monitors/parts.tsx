import { useId, type ReactNode } from 'react';
import { Link } from 'react-router';
import type { UseQueryResult } from '@tanstack/react-query';
import { ApiError } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading } from '../../components/states';
import { useCarriedSearch } from '../../lib/url-state';
import { formatTime } from '../../lib/format';
import { useProjects } from '../projects/api';
import type { CheckState, CronCheck, MonitorState } from './api';
import type { Schedule } from './schedule';

const CHECK_TONE: Record<CheckState, string> = { new: 'neutral', up: 'ok', late: 'warning', down: 'error', paused: 'neutral' };
const DOWN_REASON: Record<NonNullable<CronCheck['down_reason']>, string> = { missed: 'missed a check-in', failed: 'reported a failure', timed_out: 'ran past its maximum runtime' };

/** A check's state as a badge; a down check says why. */
export function CheckStateBadge({ check }: { check: Pick<CronCheck, 'state' | 'down_reason'> }) {
  return (
    <span className="nowrap">
      <span className={`badge ${CHECK_TONE[check.state]}`}>{check.state}</span>
      {check.down_reason && <span className="small muted"> {DOWN_REASON[check.down_reason]}</span>}
    </span>
  );
}

const MONITOR_TONE: Record<MonitorState, string> = { pending: 'neutral', up: 'ok', down: 'error', paused: 'neutral' };

export const MonitorStateBadge = ({ state }: { state: MonitorState }) => <span className={`badge ${MONITOR_TONE[state]}`}>{state}</span>;

const DAY_MS = 86_400_000;

/** The days a TLS certificate has left ("expired" past its end; "—" for a plain-http target or before the first probe). */
export function TlsDays({ days, expiresAt }: { days?: number | null; expiresAt: string | null }) {
  const left = days ?? (expiresAt ? Math.floor((Date.parse(expiresAt) - Date.now()) / DAY_MS) : null);
  if (left === null) return <span className="muted">—</span>;
  return (
    <span className="nowrap" title={expiresAt ? `expires ${formatTime(expiresAt)}` : undefined}>
      {left < 0 ? <span className="badge error">expired</span> : `${left} days`}
    </span>
  );
}

/** One figure of a summary (`<dl className="stats">`): its value is named by its term, for screen readers and tests. */
export function Stat({ term, children, className, live = false }: { term: string; children: ReactNode; className?: string; live?: boolean }) {
  const id = useId();
  return (
    <div>
      <dt id={id}>{term}</dt>
      <dd aria-labelledby={id} className={className} aria-live={live ? 'polite' : undefined}>
        {children}
      </dd>
    </div>
  );
}

/** "every 2 hours", "crontab 30 2 * * *". */
export function scheduleText(schedule: Schedule): string {
  if (schedule.type === 'crontab') return `crontab ${schedule.value}`;
  return schedule.value === 1 ? `every ${schedule.unit}` : `every ${schedule.value} ${schedule.unit}s`;
}

/** The project's name as the organisation calls it (its id until the projects have loaded). */
export function ProjectName({ id }: { id: string }) {
  const projects = useProjects();
  return <>{projects.data?.data.find((project) => project.id === id)?.name ?? id}</>;
}

/** The API's messages for a refused form, by field name (`body.url` → `url`). */
export function fieldErrors(error: unknown): Record<string, string> {
  if (!(error instanceof ApiError)) return {};
  const byField: Record<string, string> = {};
  for (const detail of error.details ?? []) {
    const field = detail.path?.replace(/^body\./, '').split('.')[0];
    if (field && detail.message && !byField[field]) byField[field] = detail.message;
  }
  return byField;
}

let zones: string[] | undefined;
/** The IANA zones this browser knows, UTC first. */
function knownZones(): string[] {
  zones ??= ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];
  return zones;
}

/** The zones a check's schedule may be read in, with `value` among them. */
export function TimeZoneOptions({ value }: { value: string }) {
  const options = knownZones().includes(value) ? knownZones() : [value, ...knownZones()];
  return (
    <>
      {options.map((zone) => (
        <option key={zone} value={zone}>
          {zone}
        </option>
      ))}
    </>
  );
}

export interface StripKind<K extends string> {
  kind: K;
  label: string;
  /** The colour: ok, warning, danger, accent or neutral. */
  tone: 'ok' | 'warning' | 'danger' | 'accent' | 'neutral';
}

const STRIP_BUCKETS = 60;

/**
 * A window as a row of equal slices, each coloured by the worst mark in it (kinds are listed mildest
 * first), with each slice's counts on hover and the window's counts in the legend. A status page's bar:
 * readable at a glance at any window, where thousands of single marks would blur.
 */
export function StatusStrip<K extends string>({ label, from, to, marks, kinds }: { label: string; from: number; to: number; marks: ReadonlyArray<{ time: number; kind: K }>; kinds: ReadonlyArray<StripKind<K>> }) {
  const width = Math.max(to - from, 1);
  const rank = new Map(kinds.map((kind, index) => [kind.kind, index]));
  const buckets = Array.from({ length: STRIP_BUCKETS }, () => new Map<K, number>());
  const totals = new Map<K, number>();
  for (const mark of marks) {
    if (mark.time < from || mark.time > to) continue;
    const index = Math.min(STRIP_BUCKETS - 1, Math.floor(((mark.time - from) / width) * STRIP_BUCKETS));
    buckets[index]!.set(mark.kind, (buckets[index]!.get(mark.kind) ?? 0) + 1);
    totals.set(mark.kind, (totals.get(mark.kind) ?? 0) + 1);
  }
  const counts = (counted: Map<K, number>) =>
    kinds
      .filter((kind) => counted.get(kind.kind))
      .map((kind) => `${counted.get(kind.kind)} ${kind.label}`)
      .join(', ');
  const summary = counts(totals);
  return (
    <figure className="strip-figure">
      <div className="strip" role="img" aria-label={`${label}, ${formatTime(from)} to ${formatTime(to)}: ${summary || 'nothing recorded'}`}>
        {buckets.map((bucket, index) => {
          const worst = [...bucket.keys()].sort((a, b) => (rank.get(b) ?? 0) - (rank.get(a) ?? 0))[0];
          const tone = worst === undefined ? 'empty' : kinds[rank.get(worst)!]!.tone;
          const start = from + (width * index) / STRIP_BUCKETS;
          return <span key={index} className={`slice ${tone}`} title={`${formatTime(start)} – ${formatTime(start + width / STRIP_BUCKETS)}: ${counts(bucket) || 'nothing'}`} />;
        })}
      </div>
      <div className="strip-axis small muted" aria-hidden="true">
        <span>{formatTime(from)}</span>
        <span>{formatTime(to)}</span>
      </div>
      <figcaption>
        <ul className="strip-legend small">
          {kinds.map((kind) => (
            <li key={kind.kind}>
              <span className={`swatch ${kind.tone}`} aria-hidden="true" /> {kind.label}: {totals.get(kind.kind) ?? 0}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

/**
 * A check's or monitor's page: while it loads, or when it cannot (a missing or another organisation's id),
 * its state with the way back to the list; then the breadcrumb, its header and `children`.
 */
export function MonitorFrame<T extends { name: string }>({ query, what, list, description, children }: { query: UseQueryResult<T>; what: string; list: { path: string; label: string }; description: (data: T) => ReactNode; children: (data: T) => ReactNode }) {
  const listSearch = useCarriedSearch();
  const back = `${list.path}${listSearch}`;
  if (query.isPending) return <Loading label={`Loading the ${what.toLowerCase()}…`} />;
  if (query.isError)
    return (
      <>
        <PageHeader title={what} />
        <ErrorNotice error={query.error} title={`The ${what.toLowerCase()} could not be loaded`} />
        <p>
          <Link to={back}>Back to the {list.label.toLowerCase()}</Link>
        </p>
      </>
    );
  return (
    <>
      <nav className="small" aria-label="Breadcrumb">
        <Link to={back}>{list.label}</Link>
      </nav>
      <PageHeader title={query.data.name} description={description(query.data)} />
      {children(query.data)}
    </>
  );
}
