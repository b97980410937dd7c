import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { Table } from '../../components/Table';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { formatTime } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useCreateProject, useProjects } from '../projects/api';
import { ProjectArtifacts } from './ProjectArtifacts';
import { ProjectDsns } from './ProjectDsns';
import { ReplaySwitch } from './ReplaySwitch';
import './projects.css';

function CreateProject({ canAdmin, onCreated }: { canAdmin: boolean; onCreated: (id: string) => void }) {
  const create = useCreateProject();
  const [name, setName] = useState('');
  const [platform, setPlatform] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(
      { name: name.trim(), ...(platform.trim() && { platform: platform.trim() }) },
      {
        onSuccess: (project) => {
          setName('');
          setPlatform('');
          onCreated(project.id);
        },
      },
    );
  };
  return (
    <section className="panel" aria-labelledby="create-heading">
      <h2 id="create-heading">Create a project</h2>
      <form className="toolbar settings-form" onSubmit={submit}>
        <label className="field">
          <span>Project name</span>
          <input name="name" required maxLength={100} value={name} onChange={(event) => setName(event.target.value)} placeholder="checkout-api" disabled={!canAdmin} />
        </label>
        <label className="field">
          <span>Platform (optional)</span>
          <input name="platform" maxLength={64} value={platform} onChange={(event) => setPlatform(event.target.value)} placeholder="node" disabled={!canAdmin} />
        </label>
        <button type="submit" className="primary" disabled={!canAdmin || create.isPending}>
          Create project
        </button>
        {!canAdmin && <p className="small muted">Only admins and owners can create projects.</p>}
      </form>
      <p className="small muted">A new project gets a numeric ingest number and a first DSN, labelled “Default”.</p>
      {create.isError && <ErrorNotice error={create.error} title="The project was not created" />}
    </section>
  );
}

/** `/settings/projects`: every project, and the chosen one's (`?project=`) DSNs, replay switch and artifacts. */
export default function ProjectsPage() {
  const { get, update } = useQueryParams();
  const canAdmin = useCan('admin');
  const projects = useProjects();
  return (
    <>
      <PageHeader title="Projects" description="Each project's DSNs, session replay and source maps." />
      <QueryView
        query={projects}
        isEmpty={(page) => page.data.length === 0}
        empty={
          <EmptyState title="No projects yet">
            <p>Create the first project below, or follow the <Link to="/onboarding">set-up guide</Link> to send its first event.</p>
          </EmptyState>
        }
      >
        {(page) => {
          const chosen = page.data.find((project) => project.id === get('project')) ?? page.data[0]!;
          return (
            <>
              <Table
                caption="Projects"
                rows={page.data}
                rowKey={(project) => project.id}
                columns={[
                  {
                    header: 'Project',
                    cell: (project) => (
                      <Link to={`?project=${project.id}`} aria-current={project.id === chosen.id ? 'true' : undefined} className="project-link">
                        {project.name}
                      </Link>
                    ),
                  },
                  { header: 'Ingest number', numeric: true, cell: (project) => project.number },
                  { header: 'Platform', cell: (project) => project.platform ?? '—' },
                  { header: 'Session replay', cell: (project) => (project.session_replay.enabled ? 'on' : 'off') },
                  { header: 'Created', cell: (project) => <span className="nowrap">{formatTime(project.created_at)}</span> },
                ]}
              />
              <h2 className="chosen-project">{chosen.name}</h2>
              <ProjectDsns key={`dsns-${chosen.id}`} project={chosen} canAdmin={canAdmin} />
              <ReplaySwitch key={`replay-${chosen.id}`} project={chosen} canAdmin={canAdmin} />
              <ProjectArtifacts key={`artifacts-${chosen.id}`} project={chosen} canAdmin={canAdmin} />
            </>
          );
        }}
      </QueryView>
      <CreateProject canAdmin={canAdmin} onCreated={(id) => update({ project: id })} />
    </>
  );
}
