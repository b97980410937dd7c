import { useRef, useState, type FormEvent } from 'react';
import { runtimeConfig } from '../../api/client';
import { CodeBlock } from '../../components/CodeBlock';
import { ConfirmButton } from '../../components/ConfirmButton';
import { Pager, Table } from '../../components/Table';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { formatBytes, formatTime } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useMe } from '../auth/api';
import type { Project } from '../projects/api';
import { useArtifacts, useDeleteArtifact, useUploadArtifact, type Artifact } from './project-api';

const KIND_LABEL: Record<Artifact['kind'], string> = { source_map: 'source map', minified_source: 'minified source', file: 'file' };

function UploadArtifact({ project }: { project: Project }) {
  const upload = useUploadArtifact(project.id);
  const input = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File>();
  const [fields, setFields] = useState({ name: '', release: '', dist: '' });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!file) return;
    upload.mutate(
      { file, fields: { name: fields.name.trim() || undefined, release: fields.release.trim() || undefined, dist: fields.dist.trim() || undefined } },
      {
        onSuccess: () => {
          setFile(undefined);
          setFields({ name: '', release: '', dist: '' });
          if (input.current) input.current.value = '';
        },
      },
    );
  };
  const field = (key: keyof typeof fields, label: string, placeholder: string, maxLength: number) => (
    <label className="field">
      <span>{label}</span>
      <input name={key} value={fields[key]} maxLength={maxLength} placeholder={placeholder} onChange={(event) => setFields({ ...fields, [key]: event.target.value })} />
    </label>
  );
  return (
    <form className="settings-form upload-form" onSubmit={submit} aria-labelledby="upload-heading">
      <h3 id="upload-heading">Upload a file</h3>
      <div className="toolbar">
        <label className="field">
          <span>File</span>
          <input ref={input} type="file" name="file" required accept=".map,.js,.mjs,.cjs,application/json,text/javascript" onChange={(event) => setFile(event.target.files?.[0])} />
        </label>
        {field('name', 'Name (URL the browser loads it from)', '~/static/app.min.js.map', 2048)}
        {field('release', 'Release', 'shop@2.0.0', 256)}
        {field('dist', 'Dist', 'web', 64)}
        <button type="submit" className="primary" disabled={!file || upload.isPending}>
          {upload.isPending ? 'Uploading…' : 'Upload'}
        </button>
      </div>
      <p className="small muted">Up to 50 MiB. Without a name the file&apos;s own name is used. Source maps are matched by debug id, or by release, dist and name.</p>
      {upload.isError && <ErrorNotice error={upload.error} title="The file was not uploaded" />}
      {upload.isSuccess && (
        <p className="notice ok" role="status">
          Uploaded {upload.data.name ?? upload.data.debug_id} as a {KIND_LABEL[upload.data.kind]}.
        </p>
      )}
    </form>
  );
}

function DeleteArtifact({ project, artifact, canAdmin }: { project: Project; artifact: Artifact; canAdmin: boolean }) {
  const remove = useDeleteArtifact(project.id);
  const name = artifact.name ?? artifact.debug_id ?? artifact.id;
  return (
    <>
      <ConfirmButton
        label="Delete"
        title={`Delete ${name}?`}
        confirmLabel="Delete artifact"
        disabled={!canAdmin}
        pending={remove.isPending}
        consequence={
          <p>
            The file and its bytes are deleted. Events processed from now on no longer resolve through it
            {artifact.release ? ` (release ${artifact.release})` : ''}; events already stored keep the frames they were given.
          </p>
        }
        onConfirm={() => remove.mutate(artifact.id)}
      />
      {remove.isError && <ErrorNotice error={remove.error} title="The artifact was not deleted" />}
    </>
  );
}

/** The CI steps that upload this project's maps and record its releases with the stock sentry-cli, pointed at this API. */
function FromCi({ project }: { project: Project }) {
  const organization = useMe().data?.organization.slug ?? '<organization slug>';
  const code = [
    `export SENTRY_URL=${runtimeConfig().api_url}`,
    'export SENTRY_AUTH_TOKEN=<a Sluice API key>   # Settings → API keys',
    `export SENTRY_ORG=${organization}`,
    `export SENTRY_PROJECT=${project.slug}`,
    'VERSION=<your release>',
    'npx @sentry/cli releases new "$VERSION"',
    'npx @sentry/cli sourcemaps inject ./dist',
    'npx @sentry/cli sourcemaps upload --release "$VERSION" ./dist',
    'npx @sentry/cli releases finalize "$VERSION"',
    'npx @sentry/cli releases deploys "$VERSION" new -e production',
  ].join('\n');
  return (
    <div className="from-ci">
      <h3>From CI with sentry-cli</h3>
      <p className="small muted">
        sentry-cli and the Sentry bundler plugins (Vite, webpack, esbuild) work unchanged against Sluice: give them these values. A deploy recorded this way is a Sluice deployment, with its health verdict.
      </p>
      <CodeBlock code={code} label="sentry-cli steps" />
    </div>
  );
}

/** Source maps and minified files of the project: the list (paged by `?artifacts=` cursor), upload and delete. */
export function ProjectArtifacts({ project, canAdmin }: { project: Project; canAdmin: boolean }) {
  const { get, update } = useQueryParams();
  const cursor = get('artifacts');
  const artifacts = useArtifacts(project.id, cursor);
  return (
    <section className="panel" aria-labelledby="artifacts-heading">
      <h2 id="artifacts-heading">Source maps and artifacts</h2>
      <p className="muted small">Stack frames of minified JavaScript are resolved through these before issues are grouped. CI usually uploads them with an API key.</p>
      <QueryView
        query={artifacts}
        isEmpty={(page) => page.data.length === 0 && !cursor}
        empty={
          <EmptyState title="No artifacts yet">
            <p>Upload a release&apos;s source maps here or from CI, so minified stack frames show your own file names and lines.</p>
          </EmptyState>
        }
      >
        {(page) => (
          <>
            <Table
              caption={`Artifacts of ${project.name}`}
              captionHidden
              rows={page.data}
              rowKey={(artifact) => artifact.id}
              columns={[
                { header: 'Name', cell: (artifact) => <span className="wrap-anywhere">{artifact.name ?? '—'}</span> },
                { header: 'Kind', cell: (artifact) => <span className="badge">{KIND_LABEL[artifact.kind]}</span> },
                { header: 'Release', cell: (artifact) => <span className="wrap-anywhere">{artifact.release ?? '—'}</span> },
                { header: 'Dist', cell: (artifact) => artifact.dist ?? '—' },
                { header: 'Debug id', cell: (artifact) => (artifact.debug_id ? <code className="wrap-anywhere">{artifact.debug_id}</code> : '—') },
                { header: 'Size', numeric: true, cell: (artifact) => formatBytes(artifact.size) },
                { header: 'Uploaded', cell: (artifact) => <span className="nowrap">{formatTime(artifact.created_at)}</span> },
                { header: 'Actions', hiddenHeader: true, cell: (artifact) => <DeleteArtifact project={project} artifact={artifact} canAdmin={canAdmin} /> },
              ]}
            />
            <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ artifacts: next })} onFirst={() => update({ artifacts: undefined })} />
          </>
        )}
      </QueryView>
      {!canAdmin && <p className="small muted">Members may upload; only admins and owners can delete artifacts.</p>}
      <UploadArtifact project={project} />
      <FromCi project={project} />
    </section>
  );
}
