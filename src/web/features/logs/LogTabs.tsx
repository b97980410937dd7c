import { NavLink } from 'react-router';
import { useCarriedSearch } from '../../lib/url-state';

export function LogTabs() {
  // the project, window and service a person chose stay chosen when switching between lines and patterns
  const suffix = useCarriedSearch(['service']);
  return (
    <nav className="tabs" aria-label="Logs views">
      <NavLink to={`/logs${suffix}`} end>
        Lines
      </NavLink>
      <NavLink to={`/logs/patterns${suffix}`}>Patterns and surges</NavLink>
    </nav>
  );
}
