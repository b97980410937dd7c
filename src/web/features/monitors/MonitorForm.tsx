import { useId, useState, type FormEvent } from 'react';
import { ProjectOptions } from '../../components/pickers';
import { ErrorNotice } from '../../components/states';
import { useProjects } from '../projects/api';
import type { MonitorChange, NewMonitor, UptimeMonitor } from './api';
import { FormField } from '../../components/FormField';
import { fieldErrors } from './parts';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** What every read shows in place of a stored header value; sent back, it keeps the value. */
const FILTERED = '[Filtered]';

/** The form as typed; read into the API's body on submit. */
interface Draft {
  project_id: string;
  name: string;
  url: string;
  method: (typeof METHODS)[number];
  headers: Array<{ key: number; name: string; value: string }>;
  body: string;
  interval_seconds: string;
  timeout_ms: string;
  expected_status: string;
  keyword: string;
  keyword_absent: string;
  /** `keyword_absent: true`: the keyword must not appear. */
  keyword_inverted: boolean;
  max_redirects: string;
  failure_threshold: string;
  recovery_threshold: string;
  verify_tls: boolean;
  paused: boolean;
}

let headerKeys = 0;

const draftOf = (monitor: UptimeMonitor | undefined, project: string | undefined): Draft => ({
  project_id: monitor?.project_id ?? project ?? '',
  name: monitor?.name ?? '',
  url: monitor?.url ?? '',
  method: METHODS.find((method) => method === monitor?.method) ?? 'GET',
  headers: Object.entries(monitor?.headers ?? {}).map(([name, value]) => ({ key: headerKeys++, name, value })),
  body: monitor?.body ?? '',
  interval_seconds: String(monitor?.interval_seconds ?? 60),
  timeout_ms: String(monitor?.timeout_ms ?? 10_000),
  expected_status: (monitor?.expected_status ?? ['200-299']).join(', '),
  keyword: monitor?.keyword ?? '',
  keyword_absent: typeof monitor?.keyword_absent === 'string' ? monitor.keyword_absent : '',
  keyword_inverted: monitor?.keyword_absent === true,
  max_redirects: String(monitor?.max_redirects ?? 10),
  failure_threshold: String(monitor?.failure_threshold ?? 2),
  recovery_threshold: String(monitor?.recovery_threshold ?? 1),
  verify_tls: monitor?.verify_tls ?? true,
  paused: false,
});

/** "200-299, 301 2xx" → ["200-299", 301, "2xx"]: codes as numbers, ranges as text. */
const expectedStatusOf = (text: string) =>
  text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => (/^\d+$/.test(entry) ? Number(entry) : entry));

/** The fields an edit may change (pausing has its own button). */
const EDITABLE = ['name', 'url', 'method', 'headers', 'body', 'interval_seconds', 'timeout_ms', 'expected_status', 'keyword', 'keyword_absent', 'max_redirects', 'failure_threshold', 'recovery_threshold', 'verify_tls'] as const;

/**
 * Every field an uptime monitor takes: what to request, what counts as up, how often, and how many probes
 * in a row take it down or bring it back. Creates a monitor, or edits one. The outbound guard's refusal
 * of an address (private, loopback, metadata) is shown beside the URL.
 */
export function MonitorForm(props: { project?: string; submitLabel: string; pending: boolean; error: unknown } & ({ monitor?: undefined; onSubmit: (body: NewMonitor) => void } | { monitor: UptimeMonitor; onSubmit: (changes: MonitorChange) => void })) {
  const { monitor, project, submitLabel, pending, error } = props;
  const id = useId();
  const projects = useProjects();
  const [draft, setDraft] = useState<Draft>(() => draftOf(monitor, project));
  const set = <F extends keyof Draft>(field: F, value: Draft[F]) => setDraft((current) => ({ ...current, [field]: value }));
  const setHeader = (key: number, patch: Partial<Draft['headers'][number]>) => set('headers', draft.headers.map((header) => (header.key === key ? { ...header, ...patch } : header)));
  const refused = fieldErrors(error);
  const projectId = draft.project_id || projects.data?.data[0]?.id || '';
  const body: NewMonitor = {
    project_id: projectId,
    name: draft.name.trim(),
    url: draft.url.trim(),
    method: draft.method,
    headers: Object.fromEntries(draft.headers.filter((header) => header.name.trim()).map((header) => [header.name.trim(), header.value])),
    body: draft.body === '' ? null : draft.body,
    interval_seconds: Number(draft.interval_seconds),
    timeout_ms: Number(draft.timeout_ms),
    expected_status: expectedStatusOf(draft.expected_status),
    keyword: draft.keyword === '' ? null : draft.keyword,
    keyword_absent: draft.keyword_inverted ? true : draft.keyword_absent === '' ? null : draft.keyword_absent,
    max_redirects: Number(draft.max_redirects),
    failure_threshold: Number(draft.failure_threshold),
    recovery_threshold: Number(draft.recovery_threshold),
    verify_tls: draft.verify_tls,
    paused: draft.paused,
  };
  // an edit sends only what changed: a URL sent again is probed again at once
  const changes: MonitorChange = monitor ? Object.fromEntries(EDITABLE.filter((field) => JSON.stringify(body[field]) !== JSON.stringify(monitor[field])).map((field) => [field, body[field]])) : {};
  const unchanged = monitor !== undefined && Object.keys(changes).length === 0;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!props.monitor) props.onSubmit(body);
    else if (!unchanged) props.onSubmit(changes);
  };
  const number = (field: 'interval_seconds' | 'timeout_ms' | 'max_redirects' | 'failure_threshold' | 'recovery_threshold', label: string, min: number, max: number, help: string) => (
    <FormField label={label} help={help} error={refused[field]}>
      {(control) => <input {...control} name={field} type="number" min={min} max={max} step={1} value={draft[field]} onChange={(event) => set(field, event.target.value)} required />}
    </FormField>
  );
  return (
    <form className="monitor-form" onSubmit={submit} aria-label={monitor ? 'Edit monitor' : 'New monitor'}>
      <fieldset>
        <legend>What to probe</legend>
        <div className="form-grid">
          {!monitor && (
            <FormField label="Project" error={refused.project_id}>
              {(control) => (
                <select {...control} name="project_id" value={projectId} onChange={(event) => set('project_id', event.target.value)} required>
                  <ProjectOptions />
                </select>
              )}
            </FormField>
          )}
          <FormField label="Name" error={refused.name}>
            {(control) => <input {...control} name="name" value={draft.name} onChange={(event) => set('name', event.target.value)} required maxLength={200} placeholder="Checkout API" />}
          </FormField>
          <FormField label="URL" wide help="http or https. Private, loopback and cloud metadata addresses are refused unless the server's OUTBOUND_ALLOWLIST names them." error={refused.url && `Refused: ${refused.url}`}>
            {(control) => <input {...control} name="url" type="url" value={draft.url} onChange={(event) => set('url', event.target.value)} required placeholder="https://shop.example.com/healthz" />}
          </FormField>
          <FormField label="Method" error={refused.method}>
            {(control) => (
              <select {...control} name="method" value={draft.method} onChange={(event) => set('method', event.target.value as Draft['method'])}>
                {METHODS.map((method) => (
                  <option key={method} value={method}>
                    {method}
                  </option>
                ))}
              </select>
            )}
          </FormField>
        </div>
        <div className="field">
          <span id={`${id}-headers`} className="field-label">
            Request headers
          </span>
          {draft.headers.length > 0 && (
            <ul className="headers-list" aria-labelledby={`${id}-headers`}>
              {draft.headers.map((header, index) => (
                <li key={header.key}>
                  <FormField label={`Header ${index + 1} name`}>
                    {(control) => <input {...control} value={header.name} onChange={(event) => setHeader(header.key, { name: event.target.value })} placeholder="Authorization" autoComplete="off" spellCheck={false} />}
                  </FormField>
                  <FormField label={`Header ${index + 1} value`}>
                    {(control) => <input {...control} value={header.value} onChange={(event) => setHeader(header.key, { value: event.target.value })} autoComplete="off" spellCheck={false} />}
                  </FormField>
                  <button type="button" onClick={() => set('headers', draft.headers.filter((other) => other.key !== header.key))}>
                    Remove header {index + 1}
                  </button>
                </li>
              ))}
            </ul>
          )}
          <div className="actions">
            <button type="button" onClick={() => set('headers', [...draft.headers, { key: headerKeys++, name: '', value: '' }])}>
              Add header
            </button>
            <span className="small muted">Values are sealed at rest and never shown again: {FILTERED} keeps a stored value.</span>
          </div>
          {refused.headers && (
            <small className="field-error" role="alert">
              {refused.headers}
            </small>
          )}
        </div>
        <FormField label="Request body" error={refused.body}>
          {(control) => <textarea {...control} name="body" value={draft.body} onChange={(event) => set('body', event.target.value)} rows={3} maxLength={65_536} placeholder="Sent with each probe (optional)" spellCheck={false} />}
        </FormField>
      </fieldset>

      <fieldset>
        <legend>When it is up</legend>
        <div className="form-grid">
          <FormField label="Expected status" help="Codes and ranges, comma-separated: 200, 2xx, 200-399." error={refused.expected_status}>
            {(control) => <input {...control} name="expected_status" value={draft.expected_status} onChange={(event) => set('expected_status', event.target.value)} required />}
          </FormField>
          <FormField label="Keyword" help="Text the body must contain (the first MiB is read)." error={refused.keyword}>
            {(control) => <input {...control} name="keyword" value={draft.keyword} onChange={(event) => set('keyword', event.target.value)} maxLength={1024} placeholder="optional" />}
          </FormField>
          <FormField label="Text that must not appear" error={refused.keyword_absent}>
            {(control) => <input {...control} name="keyword_absent" value={draft.keyword_inverted ? '' : draft.keyword_absent} disabled={draft.keyword_inverted} onChange={(event) => set('keyword_absent', event.target.value)} maxLength={1024} placeholder="optional, e.g. maintenance" />}
          </FormField>
          <label className="inline-field">
            <input type="checkbox" name="keyword_inverted" checked={draft.keyword_inverted} onChange={(event) => set('keyword_inverted', event.target.checked)} /> The keyword must not appear
          </label>
          <label className="inline-field">
            <input type="checkbox" name="verify_tls" checked={draft.verify_tls} onChange={(event) => set('verify_tls', event.target.checked)} /> Verify the TLS certificate
          </label>
          {number('max_redirects', 'Maximum redirects', 0, 20, '0 judges the redirect itself.')}
        </div>
      </fieldset>

      <fieldset>
        <legend>How often</legend>
        <div className="form-grid">
          {number('interval_seconds', 'Interval (seconds)', 30, 86_400, 'From 30 s to a day.')}
          {number('timeout_ms', 'Timeout (ms)', 100, 60_000, 'The whole probe, redirects and body included.')}
          {number('failure_threshold', 'Failures before down', 1, 20, 'Failed probes in a row that take it down and raise an alert.')}
          {number('recovery_threshold', 'Successes before up', 1, 20, 'Successful probes in a row that bring it back.')}
        </div>
        {!monitor && (
          <label className="inline-field">
            <input type="checkbox" name="paused" checked={draft.paused} onChange={(event) => set('paused', event.target.checked)} /> Create it paused (no probes until resumed)
          </label>
        )}
      </fieldset>
      {Boolean(error) && <ErrorNotice error={error} title={monitor ? 'The monitor was not saved' : 'The monitor was not created'} />}
      <div className="actions">
        <button type="submit" className="primary" disabled={pending || !projectId || unchanged}>
          {pending ? `${submitLabel}…` : submitLabel}
        </button>
        {unchanged && <span className="small muted">Nothing changed yet.</span>}
        {!projectId && projects.isSuccess && <span className="small muted">Create a project first: a monitor belongs to one.</span>}
      </div>
    </form>
  );
}
