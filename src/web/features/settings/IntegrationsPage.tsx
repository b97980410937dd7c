import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, ErrorNotice, Loading, QueryView } from '../../components/states';
import { formatTime } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan, useRole } from '../auth/permissions';
import { useProjects, type Project } from '../projects/api';
import { useDeleteIntegration, useIntegrations, usePutIntegration, type Integration, type Provider } from './project-api';
import './projects.css';
import { RoleLimit } from '../auth/RoleLimit';
import { FormField } from '../../components/FormField';

const PROVIDERS: Array<{ id: Provider; name: string; repository: string; token: string }> = [
  { id: 'github', name: 'GitHub', repository: 'owner/name, e.g. acme/shop', token: 'a fine-grained token with read access to the repository’s contents and metadata' },
  { id: 'gitlab', name: 'GitLab', repository: 'the project path, e.g. acme/platform/shop', token: 'a project or personal access token with the read_api scope' },
];

function ProviderPanel({ project, provider, integration }: { project: Project; provider: (typeof PROVIDERS)[number]; integration: Integration | undefined }) {
  const put = usePutIntegration(project.id, provider.id);
  const remove = useDeleteIntegration(project.id, provider.id);
  const [repository, setRepository] = useState(integration?.repository ?? '');
  const [branch, setBranch] = useState('');
  const [token, setToken] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    put.mutate({ repository: repository.trim(), access_token: token.trim(), ...(branch.trim() && { default_branch: branch.trim() }) }, { onSuccess: () => setToken('') });
  };
  const id = `${provider.id}-heading`;
  return (
    <section className="panel" aria-labelledby={id}>
      <h2 id={id}>{provider.name}</h2>
      {integration ? (
        <dl className="integration-status">
          <dt>Repository</dt>
          <dd>
            <a href={integration.repository_url} target="_blank" rel="noreferrer noopener">
              {integration.repository}
            </a>{' '}
            (default branch <code>{integration.default_branch}</code>)
          </dd>
          <dt>Token</dt>
          <dd>
            <span className="badge ok">set</span> ending in <code>…{integration.token_last4}</code>, verified with {provider.name} {formatTime(integration.verified_at)}
          </dd>
          <dt>Last changed</dt>
          <dd>{formatTime(integration.updated_at)}</dd>
        </dl>
      ) : (
        <p className="integration-status">
          <span className="badge">not connected</span> Connect it to link deployments to their commits and stack frames to their source lines.
        </p>
      )}
      <form className="settings-form" onSubmit={submit}>
        <div className="toolbar">
          <label className="field">
            <span>Repository</span>
            <input name="repository" required value={repository} onChange={(event) => setRepository(event.target.value)} placeholder={provider.id === 'github' ? 'acme/shop' : 'acme/platform/shop'} />
          </label>
          <label className="field">
            <span>Default branch (optional)</span>
            <input name="default_branch" maxLength={255} value={branch} onChange={(event) => setBranch(event.target.value)} placeholder={integration?.default_branch ?? 'the repository’s own'} />
          </label>
          <label className="field">
            <span>{integration ? 'New access token' : 'Access token'}</span>
            <input name="access_token" type="password" autoComplete="off" required minLength={8} maxLength={1024} value={token} onChange={(event) => setToken(event.target.value)} />
          </label>
          <button type="submit" className="primary" disabled={put.isPending}>
            {put.isPending ? 'Checking…' : integration ? `Update ${provider.name}` : `Connect ${provider.name}`}
          </button>
        </div>
        <p className="small muted">
          Repository: {provider.repository}. Token: {provider.token}. Sluice checks both with {provider.name} before saving, keeps the token encrypted and never shows it
          again.
        </p>
      </form>
      {put.isError && <ErrorNotice error={put.error} title={`${provider.name} was not connected`} />}
      {integration && (
        <div className="actions">
          <ConfirmButton
            label={`Remove ${provider.name}`}
            title={`Disconnect ${project.name} from ${provider.name}?`}
            confirmLabel={`Remove ${provider.name}`}
            pending={remove.isPending}
            consequence={<p>The token is deleted. Deployments and stack frames of {project.name} stop linking to {integration.repository} until it is connected again.</p>}
            onConfirm={() => remove.mutate()}
          />
          {remove.isError && <ErrorNotice error={remove.error} title={`${provider.name} was not removed`} />}
        </div>
      )}
    </section>
  );
}

function ProjectIntegrations({ project }: { project: Project }) {
  const integrations = useIntegrations(project.id);
  return (
    <QueryView query={integrations}>
      {(page) => (
        <div className="grid-2">
          {PROVIDERS.map((provider) => {
            const integration = page.data.find((item) => item.provider === provider.id);
            // a new form when the stored connection changes, so it starts from what is stored
            return <ProviderPanel key={`${provider.id}-${integration?.updated_at ?? 'none'}`} project={project} provider={provider} integration={integration} />;
          })}
        </div>
      )}
    </QueryView>
  );
}

/** `/settings/integrations`: per project (`?project=`), its GitHub and GitLab connections. */
export default function IntegrationsPage() {
  const { get, update } = useQueryParams();
  const canAdmin = useCan('admin');
  const role = useRole();
  const projects = useProjects();
  const header = <PageHeader title="Integrations" description="Connect a project to its repository on GitHub or GitLab: commit links on deployments, source links on stack frames." />;
  if (!role) return <Loading />;
  if (!canAdmin) {
    return (
      <>
        {header}
        <RoleLimit>Only admins and owners can see and change integrations, because they hold access tokens.</RoleLimit>
      </>
    );
  }
  return (
    <>
      {header}
      <QueryView
        query={projects}
        isEmpty={(page) => page.data.length === 0}
        empty={
          <EmptyState title="No projects yet">
            <p>
              <Link to="/settings/projects">Create a project</Link> first; then connect it to its repository here.
            </p>
          </EmptyState>
        }
      >
        {(page) => {
          const chosen = page.data.find((project) => project.id === get('project')) ?? page.data[0]!;
          return (
            <>
              <FormField label="Project">
                {(control) => (
                  <select {...control} value={chosen.id} onChange={(event) => update({ project: event.target.value })}>
                    {page.data.map((project) => (
                      <option key={project.id} value={project.id}>
                        {project.name}
                      </option>
                    ))}
                  </select>
                )}
              </FormField>
              <ProjectIntegrations key={chosen.id} project={chosen} />
            </>
          );
        }}
      </QueryView>
    </>
  );
}
