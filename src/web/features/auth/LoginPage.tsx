import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { runtimeConfig } from '../../api/client';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useLogin, useSsoStart } from './api';

/** Where the provider's refusal codes send the browser back (`/login?sso_error=…&sso_reason=…`). */
const SSO_ERRORS: Record<string, string> = {
  not_invited: 'This address has no account here and no invitation. Ask an owner of the organization to invite you.',
  exchange_failed: 'The identity provider could not be reached or did not confirm the sign-in.',
};

export function LoginPage() {
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const login = useLogin();
  const sso = useSsoStart();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [ssoMode, setSsoMode] = useState(false);
  const next = params.get('next');
  const destination = next?.startsWith('/') && !next.startsWith('//') ? next : '/';
  const ssoError = params.get('sso_error');
  const ssoReason = params.get('sso_reason');

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (ssoMode) {
      sso.mutate({ email }, { onSuccess: ({ authorization_url }) => window.location.assign(authorization_url) });
    } else {
      login.mutate({ email, password }, { onSuccess: () => navigate(destination, { replace: true }) });
    }
  };

  return (
    <AuthCard title="Log in">
      {ssoError && (
        <div className="notice error" role="alert">
          <strong>Single sign-on was refused</strong> ({ssoError}): {ssoReason ?? SSO_ERRORS[ssoError] ?? 'the identity provider sent you back without a session.'}
        </div>
      )}
      <form onSubmit={submit}>
        <label className="field">
          <span>Email</span>
          <input type="email" name="email" autoComplete="username" required value={email} onChange={(event) => setEmail(event.target.value)} />
        </label>
        {!ssoMode && (
          <label className="field">
            <span>Password</span>
            <input type="password" name="password" autoComplete="current-password" required value={password} onChange={(event) => setPassword(event.target.value)} />
          </label>
        )}
        {login.isError && <ErrorNotice error={login.error} title="Login failed" />}
        {sso.isError && <ErrorNotice error={sso.error} title="Single sign-on failed" />}
        <button type="submit" className="primary" disabled={login.isPending || sso.isPending}>
          {ssoMode ? 'Continue with SSO' : 'Log in'}
        </button>
      </form>
      {runtimeConfig().sso && (
        <button type="button" onClick={() => setSsoMode(!ssoMode)}>
          {ssoMode ? 'Log in with a password' : 'Sign in with SSO'}
        </button>
      )}
      <p className="small">
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
      <p className="small">
        No account yet? <Link to="/signup">Sign up</Link>
      </p>
    </AuthCard>
  );
}
