import { useState, type FormEvent } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, read } from '../../api/client';
import { CodeBlock } from '../../components/CodeBlock';
import { CopyButton } from '../../components/CopyButton';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, Loading } from '../../components/states';
import { useQueryParams } from '../../lib/url-state';
import { useCreateProject, useProjectDsns, useProjects } from '../projects/api';
import { snippetsFor } from './snippets';
import { FormField } from '../../components/FormField';

/** Polls for the project's first issue (every 2 s) until one arrives. */
const useFirstIssue = (project: string) =>
  useQuery({
    queryKey: ['issues', 'first', project],
    queryFn: async ({ signal }) => {
      const page = await read(api().GET('/v1/issues', { params: { query: { project, limit: 1, sort: 'first_seen', from: new Date(Date.now() - 7 * 86_400_000).toISOString() } }, signal }));
      return page.data[0] ?? null;
    },
    refetchInterval: (query) => (query.state.data ? false : 2000),
  });

function CreateProject({ onCreated }: { onCreated: (id: string) => void }) {
  const create = useCreateProject();
  const [name, setName] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ name }, { onSuccess: (project) => onCreated(project.id) });
  };
  return (
    <section className="panel" aria-labelledby="create-project">
      <h2 id="create-project">Create a project</h2>
      <p className="muted">A project holds one application's errors, traces, logs and metrics. Each gets its own DSN.</p>
      <form className="toolbar" onSubmit={submit}>
        <label className="field">
          <span>Project name</span>
          <input name="project" required maxLength={100} value={name} onChange={(event) => setName(event.target.value)} placeholder="checkout-api" />
        </label>
        <button type="submit" className="primary" disabled={create.isPending}>
          Create project
        </button>
      </form>
      {create.isError && <ErrorNotice error={create.error} title="The project was not created" />}
    </section>
  );
}

function SendTelemetry({ projectId }: { projectId: string }) {
  const dsns = useProjectDsns(projectId);
  const firstIssue = useFirstIssue(projectId);
  const [snippet, setSnippet] = useState('node');
  if (dsns.isPending) return <Loading label="Loading the project's DSN…" />;
  if (dsns.isError) return <ErrorNotice error={dsns.error} />;
  const key = dsns.data.data[0];
  if (!key) return <ErrorNotice error={new Error('This project has no DSN: issue one in its settings.')} />;
  const snippets = snippetsFor(key.dsn, key.otlp);
  const shown = snippets.find((item) => item.id === snippet) ?? snippets[0]!;
  return (
    <>
      <section className="panel" aria-labelledby="dsn-heading">
        <h2 id="dsn-heading">Your DSN</h2>
        <p className="muted">Point any Sentry SDK at this DSN. An OpenTelemetry exporter takes the endpoint and header in its snippet below.</p>
        <div className="dsn">
          <code aria-label="DSN">{key.dsn}</code>
          <CopyButton text={key.dsn} label="Copy DSN" />
        </div>
      </section>
      <section className="panel" aria-labelledby="snippet-heading">
        <h2 id="snippet-heading">Send your first event</h2>
        <FormField label="SDK">
          {(control) => (
            <select {...control} value={shown.id} onChange={(event) => setSnippet(event.target.value)}>
              {snippets.map((item) => (
                <option key={item.id} value={item.id}>
                  {item.label}
                </option>
              ))}
            </select>
          )}
        </FormField>
        <CodeBlock code={shown.code} label={`${shown.label} snippet`} />
      </section>
      <section className="panel" aria-labelledby="waiting-heading" aria-live="polite">
        <h2 id="waiting-heading">First event</h2>
        {firstIssue.data ? (
          <div className="notice ok">
            Your first error arrived: <Link to={`/issues/${firstIssue.data.id}`}>{firstIssue.data.title}</Link>
          </div>
        ) : firstIssue.isError ? (
          <ErrorNotice error={firstIssue.error} />
        ) : (
          <p role="status">Waiting for the first event… This page updates by itself when it arrives.</p>
        )}
        <p className="small">
          Sending traces or logs instead? They show up under <Link to={`/traces?project=${projectId}`}>Traces</Link> and <Link to={`/logs?project=${projectId}`}>Logs</Link>.
        </p>
      </section>
    </>
  );
}

/** First run: create a project, copy its DSN and a snippet, and wait for the first event. */
export default function OnboardingPage() {
  const { get, update } = useQueryParams();
  const projects = useProjects();
  const chosen = get('project');
  const step = chosen ? 2 : 1;
  return (
    <>
      <PageHeader title="Set up a project" description="Three steps from here to your first error in the browser." />
      <ol className="steps" aria-label="Steps">
        <li aria-current={step === 1 ? 'step' : undefined}>1. Create a project</li>
        <li aria-current={step === 2 ? 'step' : undefined}>2. Send telemetry</li>
        <li>3. See it here</li>
      </ol>
      {chosen ? (
        <SendTelemetry projectId={chosen} />
      ) : (
        <>
          <CreateProject onCreated={(id) => update({ project: id })} />
          {projects.data && projects.data.data.length > 0 && (
            <section className="panel" aria-labelledby="existing">
              <h2 id="existing">Or pick an existing project</h2>
              <ul>
                {projects.data.data.map((project) => (
                  <li key={project.id}>
                    <Link to={`/onboarding?project=${project.id}`}>{project.name}</Link>
                  </li>
                ))}
              </ul>
            </section>
          )}
        </>
      )}
    </>
  );
}
