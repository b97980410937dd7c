import { useEffect, useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api, read } from '../api/client';
import { useProjects } from '../features/projects/api';
import { timeZone } from '../lib/format';
import { PRESET_RANGES, useQueryParams, useTimeWindow } from '../lib/url-state';
import { FormField } from './FormField';

/** `?project=`: every view narrows to one project, or shows them all. */
export function ProjectPicker() {
  const { get, update } = useQueryParams();
  const projects = useProjects();
  return (
    <FormField label="Project">
      {(control) => (
        <select {...control} value={get('project') ?? ''} onChange={(event) => update({ project: event.target.value })} disabled={projects.isPending}>
          <option value="">All projects</option>
          <ProjectOptions />
        </select>
      )}
    </FormField>
  );
}

/** The environments the organisation's issues were seen in, for the environment picker. */
const useEnvironments = (project: string | undefined) =>
  useQuery({
    queryKey: ['environments', project],
    queryFn: async ({ signal }) => {
      const page = await read(api().GET('/v1/issues', { params: { query: { limit: 100, ...(project && { project }), from: new Date(Date.now() - 30 * 86_400_000).toISOString() } }, signal }));
      return [...new Set(page.data.flatMap((issue) => issue.environments))].sort();
    },
    staleTime: 60_000,
  });

/** `?environment=`: on the views that take one. */
export function EnvironmentPicker() {
  const { get, update } = useQueryParams();
  const current = get('environment');
  const environments = useEnvironments(get('project'));
  const options = [...new Set([...(environments.data ?? []), ...(current ? [current] : [])])];
  return (
    <FormField label="Environment">
      {(control) => (
        <select {...control} value={current ?? ''} onChange={(event) => update({ environment: event.target.value })}>
          <option value="">All environments</option>
          {options.map((environment) => (
            <option key={environment} value={environment}>
              {environment}
            </option>
          ))}
        </select>
      )}
    </FormField>
  );
}

/** A datetime-local input's value (the browser's zone) for an ISO time, and back. */
const toLocalInput = (iso: string) => {
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocalInput = (value: string) => new Date(value).toISOString();

/** `?range=15m|1h|24h|7d`, or a custom `?from=&to=`; times are entered and shown in the browser's zone. */
export function TimeRangePicker() {
  const window = useTimeWindow();
  const { update } = useQueryParams();
  const [custom, setCustom] = useState(window.kind === 'custom');
  const [from, setFrom] = useState(() => toLocalInput(window.kind === 'custom' ? window.from : new Date(Date.now() - 86_400_000).toISOString()));
  const [to, setTo] = useState(() => toLocalInput(window.kind === 'custom' ? window.to : new Date().toISOString()));
  useEffect(() => setCustom(window.kind === 'custom'), [window.kind]);
  const apply = (event: FormEvent) => {
    event.preventDefault();
    if (!from || !to) return;
    update({ from: fromLocalInput(from), to: fromLocalInput(to), range: undefined });
  };
  return (
    <div className="inline-field time-range">
      <FormField label="Time range">
        {(control) => (
          <select
            {...control}
            value={custom ? 'custom' : window.kind === 'preset' ? window.range : 'custom'}
            onChange={(event) => {
              if (event.target.value === 'custom') setCustom(true);
              else {
                setCustom(false);
                update({ range: event.target.value, from: undefined, to: undefined });
              }
            }}
          >
            {PRESET_RANGES.map((preset) => (
              <option key={preset.value} value={preset.value}>
                {preset.label}
              </option>
            ))}
            <option value="custom">Custom…</option>
          </select>
        )}
      </FormField>
      {custom && (
        <form className="inline-field" onSubmit={apply} aria-label="Custom time range">
          <label className="field">
            <span>From</span>
            <input type="datetime-local" value={from} onChange={(event) => setFrom(event.target.value)} required />
          </label>
          <label className="field">
            <span>To</span>
            <input type="datetime-local" value={to} onChange={(event) => setTo(event.target.value)} required />
          </label>
          <button type="submit">Apply</button>
        </form>
      )}
      <span className="small muted nowrap" title="Times on every page are shown in this zone">
        Times in {timeZone()}
      </span>
    </div>
  );
}

/** The organisation's projects as the options of a select (each form adds its own first option, if any). */
export function ProjectOptions() {
  const projects = useProjects();
  return (
    <>
      {projects.data?.data.map((project) => (
        <option key={project.id} value={project.id}>
          {project.name}
        </option>
      ))}
    </>
  );
}
