import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { useRole } from './permissions';

/** Why an action is missing from the page: what the signed-in role may not do, and where the roles are explained. */
export function RoleLimit({ children }: { children: ReactNode }) {
  const role = useRole();
  return (
    <div className="notice info role-limit" role="note">
      <p>{children}</p>
      <p className="small">
        Your role is <strong>{role}</strong>. <Link to="/settings/members#roles">What each role may do</Link>
      </p>
    </div>
  );
}
