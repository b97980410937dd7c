import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { SecretOnce } from '../../components/SecretOnce';
import { ErrorNotice, QueryView } from '../../components/states';
import { Pager, Table, type Column } from '../../components/Table';
import { formatTime, timeZone } from '../../lib/format';
import { useQueryParams } from '../../lib/url-state';
import { useMe } from '../auth/api';
import { ROLE_ABILITIES, ROLES, rolesUpTo, useCan, type Role } from '../auth/permissions';
import { useChangeMemberRole, useInviteMember, useMembers, useRemoveMember, type Member } from './people-api';
import { RoleLimit } from '../auth/RoleLimit';
import { RoleSelect } from './RoleSelect';
import './people.css';

function InviteForm() {
  const invite = useInviteMember();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    invite.mutate({ email, role }, { onSuccess: () => setEmail('') });
  };
  const sent = invite.data;
  return (
    <section className="panel" aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite a member</h2>
      <form className="toolbar" onSubmit={submit}>
        <label className="field">
          <span>Email</span>
          <input type="email" name="email" required maxLength={254} value={email} onChange={(event) => setEmail(event.target.value)} placeholder="ada@example.com" />
        </label>
        <RoleSelect label="Role" value={role} onChange={setRole} />
        <button type="submit" className="primary" disabled={invite.isPending}>
          {invite.isPending ? 'Inviting…' : 'Invite'}
        </button>
      </form>
      {invite.isError && <ErrorNotice error={invite.error} title="The invite was not sent" />}
      {sent && (
        <SecretOnce
          label="Invite link"
          secret={sent.invite_url}
          warning={`${sent.invite_mailed ? `Mailed to ${sent.email}. ` : `Send it to ${sent.email} yourself: no mail was sent. `}Sluice shows this link only once. It works once, for that address, within 7 days; withdraw the invite below to stop it.`}
        />
      )}
    </section>
  );
}

/** A member's role, changeable when the signed-in person may grant both the current and the new role; the refusal shows in the row. */
function RoleCell({ member, manageable, reason }: { member: Member; manageable: boolean; reason?: string }) {
  const change = useChangeMemberRole();
  const [role, setRole] = useState<Role>(member.role);
  // the list read again (after this change or another's) shows the role the API holds
  useEffect(() => setRole(member.role), [member.role]);
  if (!manageable) {
    return (
      <>
        {member.role}
        {reason && <div className="small muted">{reason}</div>}
      </>
    );
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    change.mutate({ memberID: member.id, role });
  };
  return (
    <>
      <form className="role-form" onSubmit={submit}>
        <RoleSelect label={`Role of ${member.email}`} value={role} onChange={setRole} hiddenLabel />
        <button type="submit" disabled={role === member.role || change.isPending}>
          Change role
        </button>
      </form>
      {change.isSuccess && change.data.role === member.role && (
        <p className="small muted role-changed" role="status">
          Now {member.role}.
        </p>
      )}
      {change.isError && <ErrorNotice error={change.error} title="The role was not changed" />}
    </>
  );
}

/** Removing a member ends their sessions and revokes their keys; withdrawing an invite kills its link. */
function RemoveCell({ member, isMe, organization }: { member: Member; isMe: boolean; organization: string }) {
  const remove = useRemoveMember();
  const navigate = useNavigate();
  const invited = member.status === 'invited';
  const label = invited ? 'Withdraw invite' : isMe ? 'Leave' : 'Remove';
  const consequence = invited ? (
    <p>The invite link sent to {member.email} stops working at once. You can invite the address again later.</p>
  ) : isMe ? (
    <p>You leave {organization} at once: your sessions in it end and the API keys you created are revoked. Only a new invite brings you back.</p>
  ) : (
    <p>
      {member.email} loses access to {organization} at once: their sessions in it end and the API keys they created are revoked. Only a new invite brings them back.
    </p>
  );
  return (
    <>
      <ConfirmButton
        label={label}
        title={invited ? `Withdraw the invite of ${member.email}?` : isMe ? `Leave ${organization}?` : `Remove ${member.email}?`}
        consequence={consequence}
        pending={remove.isPending}
        onConfirm={() => remove.mutate(member.id, { onSuccess: () => isMe && navigate('/login', { replace: true }) })}
      />
      {remove.isError && <ErrorNotice error={remove.error} title={invited ? 'The invite was not withdrawn' : 'The member was not removed'} />}
    </>
  );
}

function MemberTable({ page, cursor }: { page: { data: Member[]; next_cursor: string | null }; cursor: string | undefined }) {
  const { update } = useQueryParams();
  const me = useMe().data;
  const canManage = useCan('admin');
  const grantable = rolesUpTo(me?.role);
  const organization = me?.organization.name ?? 'the organization';
  // the API lets an admin act on members and admins only; an owner on everyone
  const manageable = (member: Member) => canManage && grantable.includes(member.role);
  const columns: Column<Member>[] = [
    {
      header: 'Member',
      cell: (member) => (
        <div className="member-name">
          <strong>
            {member.name || member.email}
            {member.user_id && member.user_id === me?.user.id && ' (you)'}
          </strong>
          {member.name && <span className="small muted">{member.email}</span>}
        </div>
      ),
    },
    { header: 'Role', cell: (member) => <RoleCell member={member} manageable={manageable(member)} reason={canManage && !manageable(member) ? 'Only an owner can change or remove an owner.' : undefined} /> },
    { header: 'Status', cell: (member) => <span className={`badge${member.status === 'active' ? ' ok' : ''}`}>{member.status}</span> },
    { header: `Since (${timeZone()})`, cell: (member) => <time dateTime={member.created_at}>{formatTime(member.created_at)}</time> },
  ];
  if (canManage) {
    columns.push({
      header: 'Actions',
      hiddenHeader: true,
      cell: (member) => (manageable(member) ? <RemoveCell member={member} isMe={member.user_id === me?.user.id} organization={organization} /> : null),
    });
  }
  return (
    <>
      <Table caption="Members and pending invites" columns={columns} rows={page.data} rowKey={(member) => member.id} />
      <Pager nextCursor={page.next_cursor} hasPrevious={Boolean(cursor)} onNext={(next) => update({ cursor: next })} onFirst={() => update({ cursor: undefined })} />
    </>
  );
}

function RoleTable() {
  return (
    <section aria-labelledby="roles">
      <h2 id="roles">What each role may do</h2>
      <Table
        caption="Roles, each with everything the roles above it in this table may do"
        captionHidden
        columns={[
          { header: 'Role', cell: (role: Role) => <strong>{role}</strong> },
          { header: 'May', cell: (role: Role) => ROLE_ABILITIES[role] },
        ]}
        rows={ROLES}
        rowKey={(role) => role}
      />
    </section>
  );
}

export default function MembersPage() {
  const { get } = useQueryParams();
  const cursor = get('cursor');
  const members = useMembers(cursor);
  const canManage = useCan('admin');
  return (
    <>
      <PageHeader title="Members" description="Who belongs to the organization, with which role, and the invites not yet accepted." />
      {canManage ? <InviteForm /> : <RoleLimit>Only owners and admins can invite members, change roles or remove members.</RoleLimit>}
      <QueryView query={members} loadingLabel="Loading the members…">
        {(page) => <MemberTable page={page} cursor={cursor} />}
      </QueryView>
      <RoleTable />
    </>
  );
}
