import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useRequestPasswordReset } from './api';

/** Asks for the reset mail. The answer is the same for every address, so it never says whether one has an account. */
export default function ForgotPasswordPage() {
  const request = useRequestPasswordReset();
  const [email, setEmail] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    request.mutate({ email });
  };
  return (
    <AuthCard title="Reset your password" description="Sluice mails a link to choose a new password. It works once, within an hour.">
      {request.isSuccess ? (
        <div className="notice ok" role="status">
          <strong>Check your inbox.</strong> If {email} has an account, a reset link is on its way. No mail after a few minutes? Check the address and ask again.
        </div>
      ) : (
        <form onSubmit={submit}>
          <label className="field">
            <span>Email</span>
            <input type="email" name="email" autoComplete="username" required value={email} onChange={(event) => setEmail(event.target.value)} />
          </label>
          {request.isError && <ErrorNotice error={request.error} title="No reset link was sent" />}
          <button type="submit" className="primary" disabled={request.isPending}>
            {request.isPending ? 'Sending…' : 'Send the reset link'}
          </button>
        </form>
      )}
      <p className="small">
        Remembered it? <Link to="/login">Log in</Link>
      </p>
    </AuthCard>
  );
}
