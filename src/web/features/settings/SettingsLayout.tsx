import { NavLink, Outlet } from 'react-router';

export const SETTINGS_PAGES = [
  { to: 'account', label: 'Your account' },
  { to: 'organization', label: 'Organization' },
  { to: 'members', label: 'Members' },
  { to: 'api-keys', label: 'API keys' },
  { to: 'projects', label: 'Projects' },
  { to: 'integrations', label: 'Integrations' },
  { to: 'sso', label: 'Single sign-on' },
  { to: 'usage', label: 'Usage' },
  { to: 'audit-log', label: 'Audit log' },
] as const;

/** The settings pages share a row of tabs above the page. */
export default function SettingsLayout() {
  return (
    <>
      <nav className="tabs" aria-label="Settings">
        {SETTINGS_PAGES.map((page) => (
          <NavLink key={page.to} to={`/settings/${page.to}`}>
            {page.label}
          </NavLink>
        ))}
      </nav>
      <Outlet />
    </>
  );
}
