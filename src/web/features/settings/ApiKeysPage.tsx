import { useState, type FormEvent } from 'react';
import { runtimeConfig } from '../../api/client';
import { CodeBlock } from '../../components/CodeBlock';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { SecretOnce } from '../../components/SecretOnce';
import { EmptyState, ErrorNotice, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatAgo, formatTime, timeZone } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan, useRole, type Role } from '../auth/permissions';
import { useApiKeys, useCreateApiKey, useMemberDirectory, useRevokeApiKey, type ApiKey } from './people-api';
import { RoleLimit } from '../auth/RoleLimit';
import { RoleSelect } from './RoleSelect';
import './people.css';

function CreateKeyForm() {
  const create = useCreateApiKey();
  const myRole = useRole();
  const [name, setName] = useState('');
  // a key defaults to its creator's role, as the API does
  const [role, setRole] = useState<Role>(myRole ?? 'member');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ name, role }, { onSuccess: () => setName('') });
  };
  const created = create.data;
  return (
    <section className="panel" aria-labelledby="create-key">
      <h2 id="create-key">Create an API key</h2>
      <p className="small muted">A key acts for the organization with its role (never higher than yours, and lowered with yours), for scripts, CI and the API.</p>
      <form className="toolbar" onSubmit={submit}>
        <label className="field">
          <span>Key name</span>
          <input name="name" required maxLength={100} value={name} onChange={(event) => setName(event.target.value)} placeholder="deploy pipeline" />
        </label>
        <RoleSelect label="Role" value={role} onChange={setRole} />
        <button type="submit" className="primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create key'}
        </button>
      </form>
      {create.isError && <ErrorNotice error={create.error} title="The key was not created" />}
      {created && (
        <>
          <SecretOnce
            label="API key"
            secret={created.secret}
            warning={`Copy the key "${created.name}" now: Sluice keeps only its hash and cannot show it again. Anyone holding it acts as ${created.role} in this organization until it is revoked.`}
          />
          <CodeBlock label="request with the key" code={`curl -H "Authorization: Bearer ${created.secret}" ${runtimeConfig().api_url}/v1/me`} />
        </>
      )}
    </section>
  );
}

function RevokeCell({ apiKey }: { apiKey: ApiKey }) {
  const revoke = useRevokeApiKey();
  return (
    <>
      <ConfirmButton
        label="Revoke"
        title={`Revoke the key "${apiKey.name}"?`}
        consequence={<p>Every client using the key {apiKey.prefix}… is refused from its next request, at once. A revoked key cannot be restored: clients need a new key.</p>}
        pending={revoke.isPending}
        onConfirm={() => revoke.mutate(apiKey.id)}
      />
      {revoke.isError && <ErrorNotice error={revoke.error} title="The key was not revoked" />}
    </>
  );
}

function KeyTable({ page, cursor }: { page: { data: ApiKey[]; next_cursor: string | null }; cursor: string | undefined }) {
  const { update } = useQueryParams();
  const members = useMemberDirectory();
  const zone = timeZone();
  if (page.data.length === 0 && !cursor) {
    return (
      <EmptyState title="No API keys yet">
        <p>Create a key above for a script or a CI job, then send it as a Bearer token.</p>
      </EmptyState>
    );
  }
  const columns: Column<ApiKey>[] = [
    { header: 'Name', cell: (key) => <strong className="wrap-anywhere">{key.name}</strong> },
    { header: 'Role', cell: (key) => key.role },
    { header: 'Key', cell: (key) => <code>{key.prefix}…</code> },
    { header: 'Created by', cell: (key) => <span className="wrap-anywhere">{members.data?.get(key.created_by)?.email ?? key.created_by}</span> },
    { header: `Created (${zone})`, cell: (key) => <time dateTime={key.created_at}>{formatTime(key.created_at)}</time> },
    {
      header: 'Last used',
      cell: (key) =>
        key.last_used_at ? (
          <time dateTime={key.last_used_at} title={`${formatTime(key.last_used_at)} (${zone})`}>
            {formatAgo(key.last_used_at)}
          </time>
        ) : (
          'never'
        ),
    },
    { header: 'Actions', hiddenHeader: true, cell: (key) => <RevokeCell apiKey={key} /> },
  ];
  return (
    <>
      <Table caption="Live API keys" columns={columns} rows={page.data} rowKey={(key) => key.id} />
      <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
    </>
  );
}

export default function ApiKeysPage() {
  const { get } = useQueryParams();
  const cursor = get('cursor');
  const canManage = useCan('admin');
  const keys = useApiKeys(cursor, canManage);
  return (
    <>
      <PageHeader title="API keys" description="Keys for scripts and CI to call the API with a role. Each secret is shown once, when it is created." />
      {canManage ? (
        <>
          <CreateKeyForm />
          <QueryView query={keys} loadingLabel="Loading the API keys…">
            {(page) => <KeyTable page={page} cursor={cursor} />}
          </QueryView>
        </>
      ) : (
        <RoleLimit>Only owners and admins can see, create or revoke API keys, since a key can act for the organization.</RoleLimit>
      )}
    </>
  );
}
