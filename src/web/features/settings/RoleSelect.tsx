import { useId } from 'react';
import { rolesUpTo, useRole, type Role } from '../auth/permissions';

/**
 * A role picker offering only the roles the signed-in person may grant. The label names the select by
 * `for`, so its name is the label alone, not the label and the chosen role.
 */
export function RoleSelect({ label, value, onChange, hiddenLabel = false }: { label: string; value: Role; onChange: (role: Role) => void; hiddenLabel?: boolean }) {
  const id = useId();
  const grantable = rolesUpTo(useRole());
  return (
    <div className={hiddenLabel ? undefined : 'field'}>
      <label htmlFor={id} className={hiddenLabel ? 'visually-hidden' : 'field-label'}>
        {label}
      </label>
      <select id={id} name="role" value={value} onChange={(event) => onChange(event.target.value as Role)}>
        {grantable.map((role) => (
          <option key={role} value={role}>
            {role}
          </option>
        ))}
      </select>
    </div>
  );
}
