import { useId, useMemo, useState, type FormEvent } from 'react';
import { ProjectOptions } from '../../components/pickers';
import { ErrorNotice } from '../../components/states';
import { formatTime, timeZone } from '../../lib/format';
import { useProjects } from '../projects/api';
import type { CheckChange, CronCheck, NewCheck } from './api';
import { FormField } from '../../components/FormField';
import { fieldErrors, TimeZoneOptions } from './parts';
import { INTERVAL_UNITS, nextRuns, readCrontab, type IntervalUnit, type Schedule } from './schedule';

/** What the form holds: text as typed, read into the API's body on submit. */
interface Draft {
  project_id: string;
  name: string;
  slug: string;
  type: Schedule['type'];
  crontab: string;
  every: string;
  unit: IntervalUnit;
  timezone: string;
  checkin_margin: string;
  max_runtime: string;
  paused: boolean;
}

const PREVIEW_RUNS = 5;
/** The fields an edit may change (pausing has its own button). */
const EDITABLE = ['name', 'slug', 'schedule', 'timezone', 'checkin_margin', 'max_runtime'] as const;

const draftOf = (check: CronCheck | undefined, project: string | undefined): Draft => ({
  project_id: check?.project_id ?? project ?? '',
  name: check?.name ?? '',
  slug: check?.slug ?? '',
  type: check?.schedule.type ?? 'crontab',
  crontab: check?.schedule.type === 'crontab' ? check.schedule.value : '0 * * * *',
  every: check?.schedule.type === 'interval' ? String(check.schedule.value) : '1',
  unit: check?.schedule.type === 'interval' ? check.schedule.unit : 'hour',
  // a new check runs in the browser's zone unless the person picks another
  timezone: check?.timezone ?? timeZone(),
  checkin_margin: String(check?.checkin_margin ?? 5),
  max_runtime: String(check?.max_runtime ?? 30),
  paused: false,
});

const scheduleOf = (draft: Draft): Schedule => (draft.type === 'crontab' ? { type: 'crontab', value: draft.crontab.trim() } : { type: 'interval', value: Number(draft.every), unit: draft.unit });

const zoneTime = new Map<string, Intl.DateTimeFormat>();
/** A time on the check's own clock: "Tue, 3 Mar 2026, 02:30". */
function inZone(ms: number, zone: string): string {
  let format = zoneTime.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat(undefined, { timeZone: zone, weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
    zoneTime.set(zone, format);
  }
  return format.format(ms);
}

/**
 * The next runs of the schedule being typed, in the check's zone (and the browser's, when it differs).
 * An interval counts from the last check-in, or from now for a check that has none yet.
 */
function SchedulePreview({ schedule, zone, lastCheckIn }: { schedule: Schedule; zone: string; lastCheckIn: string | null | undefined }) {
  const reading = schedule.type === 'crontab' ? readCrontab(schedule.value) : undefined;
  const intervalOk = schedule.type === 'interval' && Number.isInteger(schedule.value) && schedule.value >= 1 && schedule.value <= 10_000;
  const runs = useMemo(() => {
    if ((reading && !reading.ok) || (!reading && !intervalOk)) return [];
    const now = Date.now();
    if (schedule.type === 'crontab' || !lastCheckIn) return nextRuns(schedule, zone, now, PREVIEW_RUNS);
    // an interval steps on from the last check-in; the runs already past are not shown
    let from = Date.parse(lastCheckIn);
    const step = schedule.unit === 'minute' ? 60_000 : schedule.unit === 'hour' ? 3_600_000 : 0;
    if (step) from += Math.max(0, Math.floor((now - from) / (schedule.value * step))) * schedule.value * step;
    for (let guard = 0; guard < 10_000; guard++) {
      const [next] = nextRuns(schedule, zone, from, 1);
      if (next === undefined || next > now) break;
      from = next;
    }
    return nextRuns(schedule, zone, from, PREVIEW_RUNS);
  }, [schedule, zone, lastCheckIn, reading, intervalOk]);
  const browserZone = timeZone();
  const heading = useId();
  let note: string;
  if (reading && !reading.ok) note = reading.unsupported ? `No preview: ${reading.problem}.` : `This crontab cannot be read: ${reading.problem}.`;
  else if (!reading && !intervalOk) note = 'An interval is a whole number from 1 to 10,000.';
  else if (runs.length === 0) note = 'This crontab never runs.';
  else note = schedule.type === 'interval' ? (lastCheckIn ? 'Counted from the last check-in; each check-in starts the count again.' : 'Counted from now; the first check-in starts the count.') : `Times in ${zone}.`;
  return (
    <section className="schedule-preview" aria-labelledby={heading} aria-live="polite">
      <h3 id={heading}>Next {PREVIEW_RUNS} expected runs</h3>
      <p className="small muted">{note}</p>
      {runs.length > 0 && (
        <ol aria-labelledby={heading}>
          {runs.map((run) => (
            <li key={run}>
              <time dateTime={new Date(run).toISOString()}>{inZone(run, zone)}</time>
              {zone !== browserZone && (
                <span className="small muted">
                  {' '}
                  · {formatTime(run)} in {browserZone}
                </span>
              )}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/**
 * A cron check's fields with the schedule editor: a crontab or an interval, its time zone, the grace
 * before a missing check-in is a miss, and the longest a run may take. Creates a check, or edits one.
 */
export function CheckForm(props: { project?: string; submitLabel: string; pending: boolean; error: unknown } & ({ check?: undefined; onSubmit: (body: NewCheck) => void } | { check: CronCheck; onSubmit: (changes: CheckChange) => void })) {
  const { check, project, submitLabel, pending, error } = props;
  const projects = useProjects();
  const [draft, setDraft] = useState<Draft>(() => draftOf(check, project ?? undefined));
  const set = <F extends keyof Draft>(field: F, value: Draft[F]) => setDraft((current) => ({ ...current, [field]: value }));
  const schedule = useMemo(() => scheduleOf(draft), [draft]);
  const refused = fieldErrors(error);
  const projectId = draft.project_id || projects.data?.data[0]?.id || '';
  const body: NewCheck = {
    project_id: projectId,
    name: draft.name.trim(),
    ...(draft.slug.trim() && { slug: draft.slug.trim() }),
    schedule,
    timezone: draft.timezone,
    checkin_margin: Number(draft.checkin_margin),
    max_runtime: Number(draft.max_runtime),
    paused: draft.paused,
  };
  // an edit sends only what changed: a schedule sent again would set the deadline again from the last check-in
  const changes: CheckChange | undefined = check && Object.fromEntries(EDITABLE.filter((field) => JSON.stringify(body[field]) !== JSON.stringify(check[field])).map((field) => [field, body[field]]));
  const unchanged = changes !== undefined && Object.keys(changes).length === 0;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (props.check) {
      if (!unchanged) props.onSubmit(changes!);
    } else props.onSubmit(body);
  };
  return (
    <form className="monitor-form" onSubmit={submit} aria-label={check ? 'Edit check' : 'New check'}>
      <div className="form-grid">
        {!check && (
          <FormField label="Project" error={refused.project_id}>
            {(control) => (
              <select {...control} name="project_id" value={projectId} onChange={(event) => set('project_id', event.target.value)} required>
                <ProjectOptions />
              </select>
            )}
          </FormField>
        )}
        <FormField label="Name" error={refused.name}>
          {(control) => <input {...control} name="name" value={draft.name} onChange={(event) => set('name', event.target.value)} required maxLength={200} placeholder="Nightly backup" />}
        </FormField>
        <FormField label="Slug" help="Lower-case letters, digits, - and _. Sentry SDK check-ins find the check by it." error={refused.slug}>
          {(control) => <input {...control} name="slug" value={draft.slug} onChange={(event) => set('slug', event.target.value)} maxLength={128} placeholder={check ? undefined : 'from the name'} pattern="[a-z0-9][a-z0-9_\-]*" />}
        </FormField>
      </div>

      <fieldset className="schedule-editor">
        <legend>Schedule</legend>
        <div className="inline-field choice">
          <label>
            <input type="radio" name="schedule-type" value="crontab" checked={draft.type === 'crontab'} onChange={() => set('type', 'crontab')} /> Crontab
          </label>
          <label>
            <input type="radio" name="schedule-type" value="interval" checked={draft.type === 'interval'} onChange={() => set('type', 'interval')} /> Interval
          </label>
        </div>
        <div className="schedule-fields">
          <div className="form-grid">
            {draft.type === 'crontab' ? (
              <FormField
                label="Crontab expression"
                wide
                error={refused.schedule}
                help={
                  <>
                    minute hour day-of-month month day-of-week, e.g. <code>30 2 * * *</code>, <code>*/15 * * * 1-5</code> or <code>@daily</code>
                  </>
                }
              >
                {(control) => <input {...control} name="crontab" className="mono" value={draft.crontab} onChange={(event) => set('crontab', event.target.value)} required maxLength={200} spellCheck={false} autoComplete="off" />}
              </FormField>
            ) : (
              <>
                <FormField label="Every" error={refused.schedule}>
                  {(control) => <input {...control} name="every" type="number" min={1} max={10_000} step={1} value={draft.every} onChange={(event) => set('every', event.target.value)} required />}
                </FormField>
                <FormField label="Unit">
                  {(control) => (
                    <select {...control} name="unit" value={draft.unit} onChange={(event) => set('unit', event.target.value as IntervalUnit)}>
                      {INTERVAL_UNITS.map((unit) => (
                        <option key={unit} value={unit}>
                          {unit}s
                        </option>
                      ))}
                    </select>
                  )}
                </FormField>
              </>
            )}
            <FormField label="Time zone" error={refused.timezone}>
              {(control) => (
                <select {...control} name="timezone" value={draft.timezone} onChange={(event) => set('timezone', event.target.value)}>
                  <TimeZoneOptions value={draft.timezone} />
                </select>
              )}
            </FormField>
          </div>
          <SchedulePreview schedule={schedule} zone={draft.timezone} lastCheckIn={check?.last_checkin_at} />
        </div>
      </fieldset>

      <div className="form-grid">
        <FormField label="Grace (minutes)" help="Past the expected time the check is late; past this grace too, a missed run takes it down and raises an alert." error={refused.checkin_margin}>
          {(control) => <input {...control} name="checkin_margin" type="number" min={1} max={40_320} step={1} value={draft.checkin_margin} onChange={(event) => set('checkin_margin', event.target.value)} required />}
        </FormField>
        <FormField label="Maximum runtime (minutes)" help="A run that sent its start signal and no end within this is timed out." error={refused.max_runtime}>
          {(control) => <input {...control} name="max_runtime" type="number" min={1} max={40_320} step={1} value={draft.max_runtime} onChange={(event) => set('max_runtime', event.target.value)} required />}
        </FormField>
      </div>
      {!check && (
        <label className="inline-field">
          <input type="checkbox" name="paused" checked={draft.paused} onChange={(event) => set('paused', event.target.checked)} /> Create it paused (check-ins are recorded, nothing is judged)
        </label>
      )}
      {Boolean(error) && <ErrorNotice error={error} title={check ? 'The check was not saved' : 'The check was not created'} />}
      <div className="actions">
        <button type="submit" className="primary" disabled={pending || !projectId || unchanged}>
          {pending ? `${submitLabel}…` : submitLabel}
        </button>
        {unchanged && <span className="small muted">Nothing changed yet.</span>}
        {!projectId && projects.isSuccess && <span className="small muted">Create a project first: a check belongs to one.</span>}
      </div>
    </form>
  );
}
