import { useState, type FormEvent } from 'react';
import type { BodyOf } from '../../api/client';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, QueryView } from '../../components/states';
import { useCan } from '../auth/permissions';
import { useOrganizationSettings, useUpdateOrganizationSettings, type OrganizationSettings } from './people-api';
import { RoleLimit } from '../auth/RoleLimit';
import './people.css';

type Gauge = OrganizationSettings['thresholds']['gauges'][number];
/** A gauge row as typed: its threshold is text until saved. */
type GaugeDraft = { key: number; name: string; threshold: string };

const MAX_GAUGES = 50;
let nextGaugeKey = 0;
const draftOf = (gauge: Gauge): GaugeDraft => ({ key: nextGaugeKey++, name: gauge.name, threshold: String(gauge.threshold) });

/** The form's fields as the API takes them; the error rate is typed in percent and stored as a ratio. */
function bodyOf(form: { name: string; slug: string; retention: string; errorRatePercent: string; p95: string; gauges: GaugeDraft[] }) {
  return {
    name: form.name.trim(),
    slug: form.slug.trim(),
    retention_days: Number(form.retention),
    thresholds: {
      error_rate: Number(form.errorRatePercent) / 100,
      p95_ms: Number(form.p95),
      gauges: form.gauges.map((gauge) => ({ name: gauge.name.trim(), threshold: Number(gauge.threshold) })),
    },
  };
}

/** Only what differs from the saved settings, so the audit trail records the change made and nothing else. */
function changesOf(saved: OrganizationSettings, edited: ReturnType<typeof bodyOf>): BodyOf<'/v1/settings', 'patch'> {
  const thresholds = {
    ...(edited.thresholds.error_rate !== saved.thresholds.error_rate && { error_rate: edited.thresholds.error_rate }),
    ...(edited.thresholds.p95_ms !== saved.thresholds.p95_ms && { p95_ms: edited.thresholds.p95_ms }),
    ...(JSON.stringify(edited.thresholds.gauges) !== JSON.stringify(saved.thresholds.gauges) && { gauges: edited.thresholds.gauges }),
  };
  return {
    ...(edited.name !== saved.organization.name && { name: edited.name }),
    ...(edited.slug !== saved.organization.slug && { slug: edited.slug }),
    ...(edited.retention_days !== saved.retention_days && { retention_days: edited.retention_days }),
    ...(Object.keys(thresholds).length > 0 && { thresholds }),
  };
}

function SettingsForm({ settings, canEdit }: { settings: OrganizationSettings; canEdit: boolean }) {
  const update = useUpdateOrganizationSettings();
  const [name, setName] = useState(settings.organization.name);
  const [slug, setSlug] = useState(settings.organization.slug);
  const [retention, setRetention] = useState(String(settings.retention_days));
  const [errorRatePercent, setErrorRatePercent] = useState(String(Number((settings.thresholds.error_rate * 100).toFixed(4))));
  const [p95, setP95] = useState(String(settings.thresholds.p95_ms));
  const [gauges, setGauges] = useState(() => settings.thresholds.gauges.map(draftOf));
  const changes = changesOf(settings, bodyOf({ name, slug, retention, errorRatePercent, p95, gauges }));
  const changed = Object.keys(changes).length > 0;
  const editGauge = (key: number, patch: Partial<GaugeDraft>) => setGauges(gauges.map((gauge) => (gauge.key === key ? { ...gauge, ...patch } : gauge)));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (canEdit && changed) update.mutate(changes);
  };
  return (
    <form className="settings-form panel" onSubmit={submit} aria-label="Organization settings">
      <label className="field">
        <span>Organization name</span>
        <input name="name" required maxLength={200} readOnly={!canEdit} value={name} onChange={(event) => setName(event.target.value)} />
      </label>
      <label className="field">
        <span>Organization slug</span>
        <input
          name="slug"
          required
          maxLength={50}
          pattern="(?!\d+$)[a-z0-9][a-z0-9_\-]*"
          readOnly={!canEdit}
          value={slug}
          onChange={(event) => setSlug(event.target.value)}
          aria-describedby="slug-hint"
        />
        <small id="slug-hint" className="muted">
          What sentry-cli and the Sentry bundler plugins call the organization (<code>SENTRY_ORG</code>): lower-case letters, digits, - and _. Changing it breaks CI jobs that use the old one.
        </small>
      </label>
      <label className="field">
        <span>Retention (days)</span>
        <input type="number" name="retention_days" required min={1} max={365} step={1} readOnly={!canEdit} value={retention} onChange={(event) => setRetention(event.target.value)} aria-describedby="retention-hint" />
        <small id="retention-hint" className="muted">
          Telemetry older than this is deleted by the daily cleanup: 1 to 365 days.
        </small>
      </label>
      <fieldset>
        <legend>Approaching-limit thresholds</legend>
        <p className="small muted">The services view warns when a service or gauge nears these values.</p>
        <div className="field-row">
          <label className="field">
            <span>Error rate (%)</span>
            <input type="number" name="error_rate" required min={0.01} max={100} step="any" readOnly={!canEdit} value={errorRatePercent} onChange={(event) => setErrorRatePercent(event.target.value)} />
          </label>
          <label className="field">
            <span>p95 latency (ms)</span>
            <input type="number" name="p95_ms" required min={0.001} step="any" readOnly={!canEdit} value={p95} onChange={(event) => setP95(event.target.value)} />
          </label>
        </div>
        <h3>Gauges</h3>
        {gauges.length === 0 && <p className="small muted">No OTLP gauge is watched.{canEdit && ' Add one by its metric name and the value it must not reach.'}</p>}
        <ul className="gauge-list">
          {gauges.map((gauge, index) => (
            <li key={gauge.key}>
              <label className="field">
                <span>Gauge {index + 1}: metric name</span>
                <input required maxLength={512} readOnly={!canEdit} value={gauge.name} onChange={(event) => editGauge(gauge.key, { name: event.target.value })} placeholder="disk.used_ratio" />
              </label>
              <label className="field">
                <span>Gauge {index + 1}: threshold</span>
                <input type="number" required step="any" readOnly={!canEdit} value={gauge.threshold} onChange={(event) => editGauge(gauge.key, { threshold: event.target.value })} />
              </label>
              {canEdit && (
                <button type="button" onClick={() => setGauges(gauges.filter((other) => other.key !== gauge.key))}>
                  Remove gauge {index + 1}
                </button>
              )}
            </li>
          ))}
        </ul>
        {canEdit && gauges.length < MAX_GAUGES && (
          <div>
            <button type="button" onClick={() => setGauges([...gauges, { key: nextGaugeKey++, name: '', threshold: '' }])}>
              Add a gauge
            </button>
          </div>
        )}
      </fieldset>
      {update.isError && <ErrorNotice error={update.error} title="The settings were not saved" />}
      {update.isSuccess && !changed && (
        <div className="notice ok" role="status">
          Saved.
        </div>
      )}
      {canEdit && (
        <div className="actions">
          <button type="submit" className="primary" disabled={!changed || update.isPending}>
            {update.isPending ? 'Saving…' : 'Save changes'}
          </button>
        </div>
      )}
    </form>
  );
}

export default function OrganizationPage() {
  const settings = useOrganizationSettings();
  const canEdit = useCan('admin');
  return (
    <>
      <PageHeader title="Organization" description="Its name, the slug release tooling uses, how long its telemetry is kept, and the thresholds the services view watches." />
      {!canEdit && <RoleLimit>Only owners and admins can change these settings; you can read them.</RoleLimit>}
      <QueryView query={settings} loadingLabel="Loading the settings…">
        {(data) => <SettingsForm settings={data} canEdit={canEdit} />}
      </QueryView>
    </>
  );
}
