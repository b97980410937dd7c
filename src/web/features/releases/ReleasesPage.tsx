import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { runtimeConfig } from '../../api/client';
import { ProjectOptions } from '../../components/pickers';
import { CodeBlock } from '../../components/CodeBlock';
import { FormField } from '../../components/FormField';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { Pager, Table } from '../../components/Table';
import { formatCount, formatPercent, formatTime, timeZone } from '../../lib/format';
import { useCarriedSearch, useQueryParams, useScope } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useProjects } from '../projects/api';
import { useDeployments, useRecordDeployment, useReleases, type Deployment } from './api';
import { CommitLink, useProjectNames, VerdictBadge } from './parts';
import './releases.css';

/** `?cursor=` pages the releases and `?deployments_cursor=` the deployments: turning one keeps the other. */
function usePaging() {
  const { get, update } = useQueryParams();
  return {
    releases: get('cursor'),
    deployments: get('deployments_cursor'),
    pageReleases: (cursor: string | undefined) => update({ cursor, deployments_cursor: get('deployments_cursor') }),
    pageDeployments: (cursor: string | undefined) => update({ deployments_cursor: cursor, cursor: get('cursor') }),
  };
}

function Releases() {
  const { project, environment } = useScope();
  const paging = usePaging();
  const releases = useReleases({ project, environment }, paging.releases);
  const projectName = useProjectNames();
  const { params } = useQueryParams();
  /** The page's own URL with `?version=` chosen: the deployments below narrow to that release. */
  const withVersion = (version: string) => {
    const next = new URLSearchParams(params);
    next.set('version', version);
    next.delete('deployments_cursor');
    return `/releases?${next}`;
  };
  return (
    <section className="panel release-list" aria-labelledby="releases-heading">
      <h2 id="releases-heading">Releases</h2>
      <QueryView
        query={releases}
        loadingLabel="Loading releases…"
        isEmpty={(page) => page.data.length === 0 && !paging.releases}
        empty={
          <EmptyState title="No release yet">
            <p>
              A release appears when your SDKs send one (Sentry's <code>release</code> option, OpenTelemetry's <code>service.version</code>) or when a deployment of it is recorded: below, or from your CI.
            </p>
          </EmptyState>
        }
      >
        {(page) => (
          <>
            <Table
              caption="Releases, newest activity first"
              captionHidden
              rows={page.data}
              rowKey={(release) => release.version}
              columns={[
                {
                  header: 'Release',
                  cell: (release) => (
                    <>
                      <Link to={withVersion(release.version)} className="mono version" title={`Show the deployments of ${release.version}`}>
                        {release.version}
                      </Link>
                      <div className="small muted wrap-anywhere">{[release.projects.map(projectName).join(', '), release.environments.join(', ')].filter(Boolean).join(' · ')}</div>
                      {release.finalized_at && <div className="small muted nowrap">finalized {formatTime(release.finalized_at)}</div>}
                    </>
                  ),
                },
                {
                  header: 'Deployed',
                  cell: (release) =>
                    release.last_deployed_at ? (
                      <>
                        <span className="nowrap">{formatTime(release.last_deployed_at)}</span>
                        {release.first_deployed_at !== release.last_deployed_at && <div className="small muted nowrap">first {formatTime(release.first_deployed_at)}</div>}
                      </>
                    ) : (
                      <span className="muted">never</span>
                    ),
                },
                { header: 'Deployments', numeric: true, cell: (release) => formatCount(release.deployment_count) },
                { header: 'New issues', numeric: true, cell: (release) => formatCount(release.new_issues) },
                { header: 'Error events', numeric: true, cell: (release) => formatCount(release.events) },
                { header: 'Crash-free sessions', numeric: true, cell: (release) => formatPercent(release.crash_free_rate) },
                { header: 'Latest verdict', cell: (release) => <VerdictBadge verdict={release.latest_verdict} pendingLabel={release.deployment_count ? 'not judged yet' : 'no deployment'} /> },
                {
                  header: 'Commit',
                  cell: (release) =>
                    release.latest_commit_url || !release.commits[0] ? <CommitLink sha={null} url={release.latest_commit_url} /> : <CommitLink sha={release.commits[0].commit} url={null} repository={release.commits[0].repository} />,
                },
              ]}
            />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(paging.releases)} onNext={paging.pageReleases} onFirst={() => paging.pageReleases(undefined)} />
            <p className="small muted">
              Times in {timeZone()}. A release's name shows its deployments below. New issues: issues first seen in the release. Crash-free sessions: the share of its sessions that did not crash. The latest verdict is its newest deployment's, once that deployment's hour has passed.
            </p>
          </>
        )}
      </QueryView>
    </section>
  );
}

function Deployments() {
  const { project, environment } = useScope();
  const { get, update } = useQueryParams();
  const version = get('version');
  const paging = usePaging();
  const deployments = useDeployments({ project, environment, version }, paging.deployments);
  const projectName = useProjectNames();
  const carried = useCarriedSearch();
  return (
    <section className="panel release-list" aria-labelledby="deployments-heading">
      <div className="panel-head">
        <h2 id="deployments-heading">{version ? <>Deployments of {version}</> : 'Deployments'}</h2>
        {version && (
          <button type="button" onClick={() => update({ version: undefined, deployments_cursor: undefined, cursor: get('cursor') })}>
            Show every release's deployments
          </button>
        )}
      </div>
      <QueryView
        query={deployments}
        loadingLabel="Loading deployments…"
        isEmpty={(page) => page.data.length === 0 && !paging.deployments}
        empty={<p className="muted">{version ? `No deployment of ${version} was recorded in this scope.` : 'No deployment was recorded yet: record one below, or from your CI.'}</p>}
      >
        {(page) => (
          <>
            <Table<Deployment>
              caption="Deployments, newest first, each with a link to its health"
              captionHidden
              rows={page.data}
              rowKey={(deployment) => deployment.id}
              columns={[
                { header: 'Deployed', cell: (deployment) => <span className="nowrap">{formatTime(deployment.deployed_at)}</span> },
                { header: 'Release', cell: (deployment) => <span className="mono version">{deployment.version}</span> },
                { header: 'Environment', cell: (deployment) => deployment.environment },
                { header: 'Project', cell: (deployment) => <span className="wrap-anywhere">{projectName(deployment.project_id)}</span> },
                { header: 'Commit', cell: (deployment) => <CommitLink sha={deployment.commit_sha} url={deployment.commit_url} repository={deployment.repository} /> },
                { header: 'Verdict', cell: (deployment) => <VerdictBadge verdict={deployment.verdict} /> },
                {
                  header: 'Health',
                  cell: (deployment) => (
                    <Link to={`/deployments/${deployment.id}${carried}`} className="nowrap">
                      Check health
                      <span className="visually-hidden">
                        {' '}
                        of {deployment.version} in {deployment.environment}, deployed {formatTime(deployment.deployed_at)}
                      </span>
                    </Link>
                  ),
                },
              ]}
            />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(paging.deployments)} onNext={paging.pageDeployments} onFirst={() => paging.pageDeployments(undefined)} />
          </>
        )}
      </QueryView>
    </section>
  );
}

/** A datetime-local value (the browser's zone) as ISO-8601 UTC; blank means now. */
const fromLocalInput = (value: string) => (value ? new Date(value).toISOString() : undefined);

function RecordDeployment() {
  const { project: scoped } = useScope();
  const projects = useProjects();
  const record = useRecordDeployment();
  const [fields, setFields] = useState({ project_id: '', version: '', environment: '', commit_sha: '', repository: '', url: '', deployed_at: '' });
  const set = (name: keyof typeof fields) => (event: { target: { value: string } }) => setFields((current) => ({ ...current, [name]: event.target.value }));
  const projectId = fields.project_id || scoped || projects.data?.data[0]?.id || '';
  const submit = (event: FormEvent) => {
    event.preventDefault();
    record.mutate(
      {
        project_id: projectId,
        version: fields.version.trim(),
        environment: fields.environment.trim() || undefined,
        commit_sha: fields.commit_sha.trim() || undefined,
        repository: fields.repository.trim() || undefined,
        url: fields.url.trim() || undefined,
        deployed_at: fromLocalInput(fields.deployed_at),
      },
      { onSuccess: () => setFields((current) => ({ ...current, version: '', commit_sha: '', url: '', deployed_at: '' })) },
    );
  };
  const recorded = record.data;
  const curl = [
    `curl -s -H "Authorization: Bearer $SLUICE_API_KEY" -H 'Content-Type: application/json' \\`,
    `  -d "{\\"project_id\\":\\"${projectId || '<project id>'}\\",\\"version\\":\\"$RELEASE\\",\\"environment\\":\\"production\\",\\"commit_sha\\":\\"$GIT_SHA\\"}" \\`,
    `  ${runtimeConfig().api_url}/v1/deployments`,
  ].join('\n');
  return (
    <section className="panel" aria-labelledby="record-deployment">
      <h2 id="record-deployment">Record a deployment</h2>
      <p className="muted small">Sluice compares the hour after a deployment with the hour before it, in the same project and environment. Name the release exactly as your SDKs send it.</p>
      <form className="deploy-form" onSubmit={submit} aria-labelledby="record-deployment">
        <FormField label="Project">
          {(ids) => (
            <select {...ids} required value={projectId} onChange={set('project_id')} disabled={projects.isPending}>
              <ProjectOptions />
            </select>
          )}
        </FormField>
        <FormField label="Release version" help="The release your SDKs send, e.g. shop@2.4.1.">
          {(ids) => <input {...ids} required maxLength={200} value={fields.version} onChange={set('version')} placeholder="shop@2.4.1" />}
        </FormField>
        <FormField label="Environment" help="Blank: production.">
          {(ids) => <input {...ids} maxLength={64} value={fields.environment} onChange={set('environment')} placeholder="production" />}
        </FormField>
        <FormField label="Commit" help="7 to 64 hex digits; linked when the project has a code-host integration.">
          {(ids) => <input {...ids} className="mono" pattern="[0-9a-fA-F]{7,64}" value={fields.commit_sha} onChange={set('commit_sha')} placeholder="4f9c2e1" />}
        </FormField>
        <FormField label="Repository" help="owner/name on the code host.">
          {(ids) => <input {...ids} maxLength={300} value={fields.repository} onChange={set('repository')} placeholder="acme/shop" />}
        </FormField>
        <FormField label="Link" help="The CI run or release page.">
          {(ids) => <input {...ids} type="url" value={fields.url} onChange={set('url')} placeholder="https://ci.example.com/runs/42" />}
        </FormField>
        <FormField label="Deployed at" help={`In ${timeZone()}; blank: now.`}>
          {(ids) => <input {...ids} type="datetime-local" step={1} value={fields.deployed_at} onChange={set('deployed_at')} />}
        </FormField>
        <div className="deploy-form-actions">
          <button type="submit" className="primary" disabled={record.isPending || !projectId}>
            Record deployment
          </button>
        </div>
      </form>
      {record.isError && <ErrorNotice error={record.error} title="The deployment was not recorded" />}
      {recorded && !record.isError && (
        <p className="notice ok" role="status">
          Recorded {recorded.version} in {recorded.environment}, deployed {formatTime(recorded.deployed_at)}. <Link to={`/deployments/${recorded.id}`}>See its health</Link>
        </p>
      )}
      <details className="ci-snippet">
        <summary>Record deployments from CI instead</summary>
        <p className="small muted">After each deploy, with an API key in SLUICE_API_KEY (any role may record):</p>
        <CodeBlock code={curl} label="CI command" />
      </details>
    </section>
  );
}

/** Releases (derived from deployments and telemetry), their deployments with links to each one's health, and a form to record one. */
export default function ReleasesPage() {
  const canRecord = useCan('member');
  return (
    <>
      <PageHeader title="Releases" description="Each release's deployments, and whether a deployment made things worse." />
      <Releases />
      <Deployments />
      {canRecord && <RecordDeployment />}
    </>
  );
}
