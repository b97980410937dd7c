import { useState, type FormEvent } from 'react';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading, QueryView } from '../../components/states';
import { formatCount, timeZone } from '../../lib/format';
import { useCan, useRole } from '../auth/permissions';
import { useDeleteSchedule, usePreview, usePutSchedule, useSchedule, type Schedule, type ScheduleBody } from './api';
import { TimeAt } from './parts';
import './alerts.css';
import { RoleLimit } from '../auth/RoleLimit';
import { FormField } from '../../components/FormField';

const WEEKDAYS: Record<Schedule['weekday'], string> = {
  monday: 'Monday',
  tuesday: 'Tuesday',
  wednesday: 'Wednesday',
  thursday: 'Thursday',
  friday: 'Friday',
  saturday: 'Saturday',
  sunday: 'Sunday',
};
const CADENCES: Record<Schedule['cadence'], string> = { daily: 'Daily', weekly: 'Weekly' };

/** The zones the browser knows (the API checks the one sent), UTC first. */
const ZONES = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];

const twoDigits = (value: number) => String(value).padStart(2, '0');

function ScheduleForm({ schedule, save }: { schedule: Schedule | null; save: ReturnType<typeof usePutSchedule> }) {
  const [cadence, setCadence] = useState<Schedule['cadence']>(schedule?.cadence ?? 'weekly');
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const [hour = 9, minute = 0] = String(form.get('at') ?? '09:00')
      .split(':')
      .map(Number);
    const body: ScheduleBody = {
      cadence,
      weekday: (String(form.get('weekday') ?? '') || 'monday') as Schedule['weekday'],
      hour,
      minute,
      timezone: String(form.get('timezone') ?? '').trim(),
      recipients: String(form.get('recipients') ?? '')
        .split(/[\s,;]+/)
        .filter(Boolean),
    };
    save.mutate(body);
  };
  return (
    <form className="schedule-form" onSubmit={submit}>
      <fieldset className="choice-row">
        <legend>How often</legend>
        {(Object.keys(CADENCES) as Array<Schedule['cadence']>).map((choice) => (
          <label key={choice} className="inline-field">
            <input type="radio" name="cadence" value={choice} checked={cadence === choice} onChange={() => setCadence(choice)} />
            {CADENCES[choice]}
          </label>
        ))}
      </fieldset>
      <div className="schedule-when">
        {cadence === 'weekly' && (
          <FormField label="Day">
            {(control) => (
              <select {...control} name="weekday" defaultValue={schedule?.weekday ?? 'monday'}>
                {(Object.keys(WEEKDAYS) as Array<Schedule['weekday']>).map((day) => (
                  <option key={day} value={day}>
                    {WEEKDAYS[day]}
                  </option>
                ))}
              </select>
            )}
          </FormField>
        )}
        <label className="field">
          <span>Send at</span>
          <input type="time" name="at" required step={60} defaultValue={schedule ? `${twoDigits(schedule.hour)}:${twoDigits(schedule.minute)}` : '09:00'} />
        </label>
        <div className="field hinted">
          <label htmlFor="zone-field">Time zone</label>
          <input id="zone-field" type="text" name="timezone" required list="digest-zones" maxLength={64} defaultValue={schedule?.timezone ?? timeZone()} aria-describedby="zone-hint" />
          <datalist id="digest-zones">
            {ZONES.map((zone) => (
              <option key={zone} value={zone} />
            ))}
          </datalist>
          <small id="zone-hint" className="muted">
            An IANA zone, e.g. Europe/Berlin; the send time follows its daylight-saving changes.
          </small>
        </div>
      </div>
      <div className="field hinted">
        <label htmlFor="recipients-field">Recipients</label>
        <textarea id="recipients-field" name="recipients" rows={2} required defaultValue={schedule?.recipients.join(', ') ?? ''} placeholder="team@example.com" aria-describedby="recipients-hint" />
        <small id="recipients-hint" className="muted">
          One to 50 addresses, separated by commas or new lines. Each new address is mailed a confirmation link; the digest goes to confirmed addresses only.
        </small>
      </div>
      {save.isError && <ErrorNotice error={save.error} title="The schedule was not saved" />}
      {save.isSuccess && (
        <p className="notice ok" role="status">
          Schedule saved. The next digest goes out <TimeAt time={save.data.next_send_at} />.
        </p>
      )}
      <div className="actions">
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : schedule ? 'Save schedule' : 'Start the digest'}
        </button>
      </div>
    </form>
  );
}

function ScheduleState({ schedule, onStopped }: { schedule: Schedule; onStopped: () => void }) {
  const stop = useDeleteSchedule();
  return (
    <>
      <dl className="stats">
        <div>
          <dt>Next digest</dt>
          <dd>
            <TimeAt time={schedule.next_send_at} />
          </dd>
        </div>
        <div>
          <dt>Last sent</dt>
          <dd>
            <TimeAt time={schedule.last_sent_at} fallback="never" />
          </dd>
        </div>
        <div>
          <dt>Recipients</dt>
          <dd>{formatCount(schedule.recipients.length)}</dd>
        </div>
      </dl>
      {schedule.last_error && (
        <div className="notice error" role="status">
          <strong>The last digest was not sent:</strong> {schedule.last_error}
        </div>
      )}
      <ul className="addresses" aria-label="Recipients">
        {schedule.addresses.map((address) => (
          <li key={address.email}>
            <span className="wrap-anywhere">{address.email}</span> {address.verified ? <span className="badge ok">confirmed</span> : <span className="badge warning">awaiting confirmation</span>}
          </li>
        ))}
      </ul>
      <div className="actions">
        <ConfirmButton
          label="Stop the digest"
          title="Stop the digest?"
          consequence={<p>No more digests are sent to its {formatCount(schedule.recipients.length)} recipients, and the schedule is forgotten: starting again means entering it anew. Confirmed addresses stay confirmed.</p>}
          pending={stop.isPending}
          onConfirm={() => stop.mutate(undefined, { onSuccess: onStopped })}
        />
      </div>
      {stop.isError && <ErrorNotice error={stop.error} title="The digest was not stopped" />}
    </>
  );
}

/** Admins and owners set the schedule; the API shows it to nobody else. */
function SchedulePanel() {
  const schedule = useSchedule();
  const save = usePutSchedule();
  return (
    <section className="panel" aria-labelledby="digest-schedule">
      <h2 id="digest-schedule">Schedule</h2>
      <QueryView query={schedule} loadingLabel="Loading the schedule…">
        {(current) => (
          <div className="schedule">
            {current ? (
              <ScheduleState schedule={current} onStopped={() => save.reset()} />
            ) : (
              <p className="muted">No digest is sent yet. Choose when and to whom below; the preview shows what the mail will say.</p>
            )}
            {/* drawn anew when a schedule starts or stops, so it shows the defaults or what the API kept */}
            <ScheduleForm key={current ? 'saved' : 'none'} schedule={current} save={save} />
          </div>
        )}
      </QueryView>
    </section>
  );
}

function PreviewPanel() {
  const preview = usePreview();
  return (
    <section className="panel preview" aria-labelledby="digest-preview">
      <div className="preview-head">
        <h2 id="digest-preview">Preview of the next digest</h2>
        <button type="button" onClick={() => void preview.refetch()} disabled={preview.isFetching}>
          {preview.isFetching ? 'Rendering…' : 'Render again'}
        </button>
      </div>
      <QueryView query={preview} loadingLabel="Rendering the digest…">
        {(digest) => (
          <>
            <dl className="preview-facts">
              <div>
                <dt>Subject</dt>
                <dd className="wrap-anywhere">{digest.subject}</dd>
              </div>
              <div>
                <dt>Period</dt>
                <dd>
                  {CADENCES[digest.period.cadence]}: <TimeAt time={digest.period.from} /> to <TimeAt time={digest.period.to} />
                </dd>
              </div>
            </dl>
            <p className="small muted">The mail exactly as it is rendered now, with what has arrived so far in the period. Links and scripts do not run in it.</p>
            {/* the mail's own HTML, in a frame with no rights: no scripts, no same-origin access, no navigation */}
            <iframe className="digest-frame" title={`Digest preview: ${digest.subject}`} sandbox="" srcDoc={digest.html} />
            <details>
              <summary>Plain-text version</summary>
              <pre className="digest-text">{digest.text}</pre>
            </details>
          </>
        )}
      </QueryView>
    </section>
  );
}

export default function ReportsPage() {
  const role = useRole();
  const isAdmin = useCan('admin');
  return (
    <>
      <PageHeader title="Digests" description="A summary mail of each project's errors, uptime, cron checks, slow endpoints and deployments, sent daily or weekly." />
      {role === undefined ? (
        <Loading />
      ) : isAdmin ? (
        <SchedulePanel />
      ) : (
        <RoleLimit>Only admins and owners see and change the digest schedule and its recipients. The preview below is yours to read; ask an admin to add you to the recipients.</RoleLimit>
      )}
      <PreviewPanel />
    </>
  );
}
