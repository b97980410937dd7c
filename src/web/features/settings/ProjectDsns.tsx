import { useState, type FormEvent } from 'react';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CopyButton } from '../../components/CopyButton';
import { ErrorNotice, QueryView } from '../../components/states';
import { Table } from '../../components/Table';
import { formatTime } from '../../lib/format';
import { useIssueDsn, useProjectDsns, useRevokeDsn, type Dsn, type Project } from '../projects/api';

function RevokeDsn({ project, dsn, canAdmin }: { project: Project; dsn: Dsn; canAdmin: boolean }) {
  const revoke = useRevokeDsn(project.id);
  return (
    <>
      <ConfirmButton
        label="Revoke"
        title={`Revoke the DSN “${dsn.label}”?`}
        confirmLabel="Revoke DSN"
        disabled={!canAdmin}
        pending={revoke.isPending}
        consequence={
          <p>
            Every SDK and exporter sending with <code className="wrap-anywhere">{dsn.public_key}</code> stops being accepted within seconds: its errors, traces, logs,
            metrics and replays from then on are refused. What {project.name} already stored stays. This cannot be undone; issue a new DSN instead.
          </p>
        }
        onConfirm={() => revoke.mutate(dsn.id)}
      />
      {revoke.isError && <ErrorNotice error={revoke.error} title="The DSN was not revoked" />}
    </>
  );
}

/** The project's live DSNs, each copyable and revocable, and a form to issue another with a label. */
export function ProjectDsns({ project, canAdmin }: { project: Project; canAdmin: boolean }) {
  const dsns = useProjectDsns(project.id);
  const issue = useIssueDsn(project.id);
  const [label, setLabel] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    issue.mutate(label.trim() ? { label: label.trim() } : {}, { onSuccess: () => setLabel('') });
  };
  return (
    <section className="panel" aria-labelledby="dsns-heading">
      <h2 id="dsns-heading">DSNs</h2>
      <p className="muted small">
        A DSN is the key an SDK sends with. Give each app or environment its own, so one can be revoked without stopping the others.
      </p>
      <QueryView query={dsns}>
        {(page) =>
          page.data.length === 0 ? (
            <p>This project has no live DSN: nothing can send to it until you add one.</p>
          ) : (
            <Table
              caption={`DSNs of ${project.name}`}
              captionHidden
              rows={page.data}
              rowKey={(dsn) => dsn.id}
              columns={[
                { header: 'Label', cell: (dsn) => <strong className="wrap-anywhere">{dsn.label}</strong> },
                {
                  header: 'DSN',
                  cell: (dsn) => (
                    <div className="dsn">
                      <code className="wrap-anywhere">{dsn.dsn}</code>
                      <CopyButton text={dsn.dsn} label={`Copy DSN ${dsn.label}`} />
                    </div>
                  ),
                },
                { header: 'Issued', cell: (dsn) => <span className="nowrap">{formatTime(dsn.created_at)}</span> },
                { header: 'Actions', hiddenHeader: true, cell: (dsn) => <RevokeDsn project={project} dsn={dsn} canAdmin={canAdmin} /> },
              ]}
            />
          )
        }
      </QueryView>
      <form className="toolbar settings-form" onSubmit={submit}>
        <label className="field">
          <span>New DSN label</span>
          <input name="label" maxLength={100} value={label} onChange={(event) => setLabel(event.target.value)} placeholder="staging" disabled={!canAdmin} />
        </label>
        <button type="submit" className="primary" disabled={!canAdmin || issue.isPending}>
          Add DSN
        </button>
        {!canAdmin && <p className="small muted">Only admins and owners can add or revoke DSNs.</p>}
      </form>
      {issue.isError && <ErrorNotice error={issue.error} title="The DSN was not added" />}
    </section>
  );
}
