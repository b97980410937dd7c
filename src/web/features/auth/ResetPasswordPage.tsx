import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useResetPassword } from './api';

/** The page a mailed reset link opens: the new password twice, then log in with it. */
export default function ResetPasswordPage() {
  const { token = '' } = useParams();
  const reset = useResetPassword(token);
  const [password, setPassword] = useState('');
  const [repeated, setRepeated] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (password !== repeated) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    reset.mutate({ password });
  };
  if (reset.isSuccess) {
    return (
      <AuthCard title="Password changed">
        <div className="notice ok" role="status">
          Your new password is set. Every session of your account has ended, on every device.
        </div>
        <Link to="/login" className="button primary">
          Log in
        </Link>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Choose a new password" description="The link works once, within an hour of the mail.">
      <form onSubmit={submit}>
        <label className="field">
          <span>New password</span>
          <input type="password" name="password" autoComplete="new-password" minLength={8} maxLength={256} required value={password} onChange={(event) => setPassword(event.target.value)} aria-describedby="new-password-hint" />
          <small id="new-password-hint" className="muted">
            At least 8 characters.
          </small>
        </label>
        <label className="field">
          <span>Repeat the new password</span>
          <input type="password" name="repeated" autoComplete="new-password" minLength={8} maxLength={256} required value={repeated} onChange={(event) => setRepeated(event.target.value)} aria-invalid={mismatch} />
        </label>
        {mismatch && (
          <div className="notice error" role="alert">
            The two passwords differ: type the same one twice.
          </div>
        )}
        {reset.isError && (
          <>
            <ErrorNotice error={reset.error} title="The password was not changed" />
            <p className="small">
              A link that was used or is over an hour old no longer works: <Link to="/forgot-password">ask for a new one</Link>.
            </p>
          </>
        )}
        <button type="submit" className="primary" disabled={reset.isPending}>
          {reset.isPending ? 'Saving…' : 'Set the new password'}
        </button>
      </form>
    </AuthCard>
  );
}
