import type { FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useResetPassword } from './api';
import { useNewPassword } from './NewPasswordFields';

/** The page a mailed reset link opens: the new password twice, then log in with it. */
export default function ResetPasswordPage() {
  const { token = '' } = useParams();
  const reset = useResetPassword(token);
  const newPassword = useNewPassword();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const password = newPassword.agreed();
    if (password !== undefined) reset.mutate({ password });
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
        {newPassword.fields}
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
