import { NavLink, useLocation } from 'react-router';

/** The project and window a person chose stay chosen when switching between lines and patterns. */
const CARRIED = ['project', 'range', 'from', 'to', 'service'];

export function LogTabs() {
  const location = useLocation();
  const carried = new URLSearchParams([...new URLSearchParams(location.search)].filter(([key]) => CARRIED.includes(key)));
  const suffix = carried.size ? `?${carried}` : '';
  return (
    <nav className="tabs" aria-label="Logs views">
      <NavLink to={`/logs${suffix}`} end>
        Lines
      </NavLink>
      <NavLink to={`/logs/patterns${suffix}`}>Patterns and surges</NavLink>
    </nav>
  );
}
