import { useState } from 'react';
import { FormField } from '../../components/FormField';

/**
 * The new password typed twice, as the reset and account pages ask for it: `agreed()` answers the password
 * when both fields match, and otherwise shows the mismatch and answers undefined.
 */
export function useNewPassword() {
  const [password, setPassword] = useState('');
  const [repeated, setRepeated] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const agreed = () => {
    const same = password === repeated;
    setMismatch(!same);
    return same ? password : undefined;
  };
  const clear = () => {
    setPassword('');
    setRepeated('');
  };
  const fields = (
    <>
      <FormField label="New password" help="At least 8 characters.">
        {(control) => <input {...control} type="password" name="new-password" autoComplete="new-password" minLength={8} maxLength={256} required value={password} onChange={(event) => setPassword(event.target.value)} />}
      </FormField>
      <label className="field">
        <span>Repeat the new password</span>
        <input type="password" name="repeated" autoComplete="new-password" minLength={8} maxLength={256} required value={repeated} onChange={(event) => setRepeated(event.target.value)} aria-invalid={mismatch} />
      </label>
      {mismatch && (
        <div className="notice error" role="alert">
          The two passwords differ: type the same one twice.
        </div>
      )}
    </>
  );
  return { fields, agreed, clear };
}
