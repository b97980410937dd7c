import type { FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageHeader } from '../../components/PageHeader';
import { ErrorNotice, QueryView } from '../../components/states';
import { useChangePassword, useLogoutEverywhere, useMe } from './api';
import { useNewPassword } from './NewPasswordFields';

function ChangePassword() {
  const change = useChangePassword();
  const newPassword = useNewPassword();
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const password = newPassword.agreed();
    if (password === undefined) return;
    const current = (form.elements.namedItem('current-password') as HTMLInputElement).value;
    change.mutate(
      { current_password: current, new_password: password },
      {
        onSuccess: () => {
          form.reset();
          newPassword.clear();
        },
      },
    );
  };
  return (
    <section className="panel" aria-labelledby="change-password">
      <h2 id="change-password">Change your password</h2>
      <form className="form-stack" onSubmit={submit}>
        <label className="field">
          <span>Current password</span>
          <input type="password" name="current-password" autoComplete="current-password" required maxLength={256} />
        </label>
        {newPassword.fields}
        {change.isError && <ErrorNotice error={change.error} title="The password was not changed" />}
        {change.isSuccess && (
          <div className="notice ok" role="status">
            Your password is changed. Every other session of your account has ended; this one stays.
          </div>
        )}
        <button type="submit" className="primary" disabled={change.isPending}>
          {change.isPending ? 'Changing…' : 'Change password'}
        </button>
      </form>
    </section>
  );
}

function LogoutEverywhere() {
  const logout = useLogoutEverywhere();
  const navigate = useNavigate();
  return (
    <section className="panel" aria-labelledby="sessions">
      <h2 id="sessions">Sessions</h2>
      <p>Lost a laptop, or logged in on a shared computer? End every session of your account at once, this one included.</p>
      <ConfirmButton
        label="Log out everywhere"
        title="Log out everywhere?"
        consequence="Every browser signed in to your account is logged out now, this one included; you will log in again. API keys are not affected: revoke them on the API keys page."
        pending={logout.isPending}
        onConfirm={() => logout.mutate(undefined, { onSuccess: () => navigate('/login', { replace: true }) })}
      />
      {logout.isError && <ErrorNotice error={logout.error} title="The sessions were not ended" />}
    </section>
  );
}

/** The signed-in person's own account: who they are here, their password and their sessions. */
export default function AccountPage() {
  const me = useMe();
  return (
    <>
      <PageHeader title="Your account" description="Your sign-in, your role in this organization, your password and your sessions." />
      <QueryView query={me}>
        {({ user, organization, role }) => (
          <section className="panel" aria-labelledby="who">
            <h2 id="who">Signed in</h2>
            <dl className="stats">
              <div>
                <dt>Email</dt>
                <dd className="wrap-anywhere">{user.email}</dd>
              </div>
              <div>
                <dt>Organization</dt>
                <dd>{organization.name}</dd>
              </div>
              <div>
                <dt>Role</dt>
                <dd>{role}</dd>
              </div>
            </dl>
            <p className="small muted">
              <Link to="/settings/members#roles">What each role may do</Link>
            </p>
          </section>
        )}
      </QueryView>
      <ChangePassword />
      <LogoutEverywhere />
    </>
  );
}
