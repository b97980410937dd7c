import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AnswerOf } from '../../api/client';
import { ErrorNotice, Loading } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useAcceptInvite, useLogin, useLogout, useOptionalMe, useRegister } from './api';

// The API names an invite's organisation only to whoever uses its token, so this page says "an invitation".
const TERMS = 'An invitation works once, for the address it was sent to, within 7 days of being sent.';

/** Where a person lands once they have joined: the joined organisation's home. */
const HOME = '/';

/** Not signed in: create an account as the invited address (which joins at once), or log in and come back here. */
function SignedOut({ token }: { token: string }) {
  const navigate = useNavigate();
  const register = useRegister();
  const login = useLogin();
  const [form, setForm] = useState({ email: '', name: '', password: '' });
  const set = (key: keyof typeof form) => (event: { target: { value: string } }) => setForm({ ...form, [key]: event.target.value });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    register.mutate(
      { email: form.email, password: form.password, invite_token: token, ...(form.name && { name: form.name }) },
      { onSuccess: () => login.mutate({ email: form.email, password: form.password }, { onSuccess: () => navigate(HOME, { replace: true }) }) },
    );
  };
  return (
    <AuthCard title="You are invited to Sluice" description={`This link is an invitation to join an organization on Sluice. ${TERMS}`}>
      <form onSubmit={submit} aria-labelledby="signup-heading">
        <h2 id="signup-heading">New to Sluice? Sign up and join</h2>
        <label className="field">
          <span>Email</span>
          <input type="email" name="email" autoComplete="username" required value={form.email} onChange={set('email')} aria-describedby="invited-email-hint" />
          <small id="invited-email-hint" className="muted">
            The address the invitation was sent to.
          </small>
        </label>
        <label className="field">
          <span>Your name</span>
          <input name="name" autoComplete="name" maxLength={200} value={form.name} onChange={set('name')} />
        </label>
        <label className="field">
          <span>Password</span>
          <input type="password" name="password" autoComplete="new-password" minLength={8} required value={form.password} onChange={set('password')} aria-describedby="invite-password-hint" />
          <small id="invite-password-hint" className="muted">
            At least 8 characters.
          </small>
        </label>
        {register.isError && <ErrorNotice error={register.error} title="The invitation was refused" />}
        {login.isError && <ErrorNotice error={login.error} title="You joined, but the login failed" />}
        <button type="submit" className="primary" disabled={register.isPending || login.isPending}>
          Sign up and join
        </button>
      </form>
      <p className="small">
        Already have an account? <Link to={`/login?next=${encodeURIComponent(`/invites/${token}`)}`}>Log in</Link> and you come back here to join.
      </p>
    </AuthCard>
  );
}

/** Signed in: "Join" accepts the invitation for the signed-in address and moves the session to the joined organisation. */
function SignedIn({ token, account, onLoggedOut }: { token: string; account: AnswerOf<'/v1/me'>; onLoggedOut: () => void }) {
  const navigate = useNavigate();
  const accept = useAcceptInvite(token);
  const logout = useLogout();
  return (
    <AuthCard title="Join an organization" description={`This link is an invitation to join an organization on Sluice. ${TERMS}`}>
      <p>
        You are signed in as <strong className="wrap-anywhere">{account.user.email}</strong>, in {account.organization.name}. Joining keeps that organization and moves you to the new one.
      </p>
      {accept.isError && (
        <>
          <ErrorNotice error={accept.error} title="This invitation cannot be used" />
          <p className="small">
            It may be used already, withdrawn or over 7 days old, or sent to another address than {account.user.email}. Ask whoever invited you for a new link, or log out and use
            the invited address.
          </p>
        </>
      )}
      <div className="actions">
        <button type="button" className="primary" disabled={accept.isPending} onClick={() => accept.mutate(undefined, { onSuccess: () => navigate(HOME, { replace: true }) })}>
          {accept.isPending ? 'Joining…' : 'Join'}
        </button>
        <button type="button" disabled={logout.isPending} onClick={() => logout.mutate(undefined, { onSettled: onLoggedOut })}>
          Log out to use another address
        </button>
      </div>
    </AuthCard>
  );
}

/** The page an invite link opens, signed in or not. */
export default function InvitePage() {
  const { token = '' } = useParams();
  const me = useOptionalMe();
  // once signed out (or logged out here), the page stays on sign-up and log-in: signing up signs in, and the
  // account query answering then must not swap the form away before it has moved on to the joined organisation
  const [signedOut, setSignedOut] = useState(false);
  if (!signedOut && me.data === null) setSignedOut(true);
  if (signedOut || me.data === null) return <SignedOut token={token} />;
  if (me.isPending) {
    return (
      <AuthCard title="You are invited to Sluice">
        <Loading />
      </AuthCard>
    );
  }
  if (me.isError) {
    return (
      <AuthCard title="You are invited to Sluice">
        <ErrorNotice error={me.error} title="Sluice could not tell whether you are signed in" />
      </AuthCard>
    );
  }
  return <SignedIn token={token} account={me.data} onLoggedOut={() => setSignedOut(true)} />;
}
