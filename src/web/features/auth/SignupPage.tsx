import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { ErrorNotice } from '../../components/states';
import { AuthCard } from './AuthCard';
import { useLogin, useRegister } from './api';

/** Creates an account and its organization, signs in, and starts onboarding. */
export function SignupPage() {
  const navigate = useNavigate();
  const register = useRegister();
  const login = useLogin();
  const [form, setForm] = useState({ name: '', organization: '', email: '', password: '' });
  const set = (key: keyof typeof form) => (event: { target: { value: string } }) => setForm({ ...form, [key]: event.target.value });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    register.mutate(
      { email: form.email, password: form.password, ...(form.name && { name: form.name }), ...(form.organization && { organization: form.organization }) },
      { onSuccess: () => login.mutate({ email: form.email, password: form.password }, { onSuccess: () => navigate('/onboarding', { replace: true }) }) },
    );
  };
  const error = register.error ?? login.error;
  return (
    <AuthCard title="Create your account" description="An organization is created with you as its owner.">
      <form onSubmit={submit}>
        <label className="field">
          <span>Your name</span>
          <input name="name" autoComplete="name" value={form.name} onChange={set('name')} />
        </label>
        <label className="field">
          <span>Organization name</span>
          <input name="organization" autoComplete="organization" value={form.organization} onChange={set('organization')} />
        </label>
        <label className="field">
          <span>Email</span>
          <input type="email" name="email" autoComplete="username" required value={form.email} onChange={set('email')} />
        </label>
        <label className="field">
          <span>Password</span>
          <input type="password" name="password" autoComplete="new-password" minLength={8} required value={form.password} onChange={set('password')} aria-describedby="password-hint" />
          <small id="password-hint" className="muted">
            At least 8 characters.
          </small>
        </label>
        {error && <ErrorNotice error={error} title="Sign-up failed" />}
        <button type="submit" className="primary" disabled={register.isPending || login.isPending}>
          Create account
        </button>
      </form>
      <p className="small">
        Already have an account? <Link to="/login">Log in</Link>
      </p>
    </AuthCard>
  );
}
