import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { PageHeader } from '../../components/PageHeader';
import { EmptyState, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatTime, timeZone } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useCan } from '../auth/permissions';
import { useApiKeyDirectory, useAuditLog, useMemberDirectory, type ApiKey, type AuditEntry, type Member } from './people-api';
import { RoleLimit } from '../auth/RoleLimit';
import './people.css';

interface Directory {
  members: Map<string, Member> | undefined;
  keys: Map<string, ApiKey> | undefined;
  /** Names the page's own entries recorded for members and keys since removed (an invite's or removal's `email`, a key's `name`). */
  recorded: Map<string, string>;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A recorded value as a person reads it: `none` for nothing, lists and records without JSON's quotes. */
function text(value: unknown): string {
  if (value == null || (Array.isArray(value) && value.length === 0)) return 'none';
  if (Array.isArray(value)) return value.map(text).join('; ');
  if (isRecord(value)) return Object.entries(value).map(([key, item]) => `${key} ${text(item)}`).join(', ');
  return String(value);
}

/** The entry's details as lines; a change of a record (e.g. thresholds) lists only the parts that changed. */
function detailLines(details: Record<string, unknown>): Array<{ label: string; value: string }> {
  return Object.entries(details).flatMap(([key, value]) => {
    const label = key.replaceAll('_', ' ');
    if (!isRecord(value) || !('from' in value) || !('to' in value)) return [{ label, value: text(value) }];
    const { from, to } = value;
    if (!isRecord(from) || !isRecord(to)) return [{ label, value: `${text(from)} → ${text(to)}` }];
    const parts = [...new Set([...Object.keys(from), ...Object.keys(to)])].filter((part) => JSON.stringify(from[part]) !== JSON.stringify(to[part]));
    return parts.map((part) => ({ label: `${label} ${part.replaceAll('_', ' ')}`, value: `${text(from[part])} → ${text(to[part])}` }));
  });
}

/** The names the entries themselves carry, by target id: what a removed member or revoked key was called. */
function recordedNames(entries: AuditEntry[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const { target, details } of entries) {
    const name = details?.email ?? details?.name;
    if ((target.type === 'member' || target.type === 'api_key') && typeof name === 'string') names.set(target.id, name);
  }
  return names;
}

/** Who acted, by the name a person knows: a member's address, a key's name; ids only for those gone since. */
function actorName({ type, id }: AuditEntry['actor'], { members, keys, recorded }: Directory): string {
  if (type === 'system') return 'Sluice';
  // "gone" only once the directory has answered: until then an id is just not named yet
  if (type === 'user') return (id && members?.get(id)?.email) || `user ${id}${members ? ' (no longer a member)' : ''}`;
  if (type === 'api_key') {
    const name = id ? (keys?.get(id)?.name ?? recorded.get(id)) : undefined;
    return name ? `API key "${name}"` : `API key ${id}${keys ? ' (revoked)' : ''}`;
  }
  return `${type} ${id ?? ''}`;
}

/** What was acted on; members and keys that are gone are named from what the entries recorded, when they did. */
function targetName({ target }: AuditEntry, { members, keys, recorded }: Directory): string {
  switch (target.type) {
    case 'organization':
      return 'the organization';
    case 'user':
      return `user ${members?.get(target.id)?.email ?? target.id}`;
    case 'member': {
      const current = members?.get(target.id)?.email;
      if (current) return `member ${current}`;
      if (!members) return `member ${target.id}`;
      return `member ${recorded.get(target.id) ?? target.id} (removed)`;
    }
    case 'api_key': {
      const name = keys?.get(target.id)?.name ?? recorded.get(target.id);
      return name ? `API key "${name}"` : `API key ${target.id}`;
    }
    default:
      return `${target.type.replaceAll('_', ' ')} ${target.id}`;
  }
}

/** The entry's details, one line each; a change reads "from → to". */
function Details({ details }: { details: AuditEntry['details'] }) {
  const lines = details ? detailLines(details) : [];
  if (lines.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="audit-details small">
      {lines.map(({ label, value }) => (
        <li key={label}>
          <span className="muted">{label}:</span> {value}
        </li>
      ))}
    </ul>
  );
}

/** `?action=`: the one filter the API takes, typed or picked by following an action in the list. */
function ActionFilter({ action, seen }: { action: string | undefined; seen: string[] }) {
  const { update } = useQueryParams();
  const [typed, setTyped] = useState(action ?? '');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    update({ action: typed.trim() });
  };
  return (
    <form className="toolbar" role="search" aria-label="Audit log filter" onSubmit={submit}>
      <label className="field">
        <span>Action</span>
        <input name="action" list="audit-actions" maxLength={100} value={typed} onChange={(event) => setTyped(event.target.value)} placeholder="member.invite" />
        <datalist id="audit-actions">
          {seen.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
      </label>
      <div className="actions">
        <button type="submit" className="primary">
          Filter
        </button>
        {action && (
          <button
            type="button"
            onClick={() => {
              setTyped('');
              update({ action: undefined });
            }}
          >
            Show every action
          </button>
        )}
      </div>
    </form>
  );
}

function AuditTable({ page, action, cursor, directory: known }: { page: { data: AuditEntry[]; next_cursor: string | null }; action: string | undefined; cursor: string | undefined; directory: Omit<Directory, 'recorded'> }) {
  const { params, update } = useQueryParams();
  const directory: Directory = { ...known, recorded: recordedNames(page.data) };
  /** The same view narrowed to one action, from its first page. */
  const only = (name: string) => {
    const next = new URLSearchParams(params);
    next.set('action', name);
    next.delete('cursor');
    return `?${next}`;
  };
  if (page.data.length === 0 && !cursor) {
    return (
      <EmptyState title={action ? `No "${action}" entries` : 'Nothing recorded yet'}>
        <p>{action ? 'Check the action’s spelling (e.g. member.invite, api_key.create), or show every action.' : 'Sign-ins, invites, role changes, keys and settings changes are recorded here as they happen.'}</p>
      </EmptyState>
    );
  }
  const columns: Column<AuditEntry>[] = [
    { header: `Time (${timeZone()})`, cell: (entry) => <time dateTime={entry.at} className="nowrap">{formatTime(entry.at)}</time> },
    { header: 'Actor', cell: (entry) => <span className="audit-name">{actorName(entry.actor, directory)}</span> },
    {
      header: 'Action',
      cell: (entry) => (
        <Link to={only(entry.action)} className="audit-action" title={`Only ${entry.action} entries`}>
          <code>{entry.action}</code>
        </Link>
      ),
    },
    { header: 'Target', cell: (entry) => <span className="audit-name">{targetName(entry, directory)}</span> },
    { header: 'Details', cell: (entry) => <Details details={entry.details} /> },
    {
      header: 'From',
      cell: (entry) => (
        <div className="small">
          {entry.ip ?? '—'}
          {entry.request_id && <div className="muted mono wrap-anywhere">request {entry.request_id}</div>}
        </div>
      ),
    },
  ];
  return (
    <>
      <Table caption={action ? `Audit entries for ${action}` : 'Audit entries, newest first'} columns={columns} rows={page.data} rowKey={(entry) => entry.id} />
      <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
    </>
  );
}

export default function AuditLogPage() {
  const { get } = useQueryParams();
  const action = get('action');
  const cursor = get('cursor');
  const canRead = useCan('admin');
  const log = useAuditLog(action, cursor, canRead);
  const members = useMemberDirectory();
  const keys = useApiKeyDirectory(canRead);
  const seen = [...new Set(log.data?.data.map((entry) => entry.action))].sort();
  return (
    <>
      <PageHeader title="Audit log" description="Who did what in the organization, and when: sign-ins, members, keys, projects and settings, newest first." />
      {canRead ? (
        <>
          <ActionFilter key={action ?? ''} action={action} seen={seen} />
          <QueryView query={log} loadingLabel="Loading the audit log…">
            {(page) => <AuditTable page={page} action={action} cursor={cursor} directory={{ members: members.data, keys: keys.data }} />}
          </QueryView>
        </>
      ) : (
        <RoleLimit>Only owners and admins can read the audit log.</RoleLimit>
      )}
    </>
  );
}
