import { useEffect, useRef, useState } from 'react';
import { Link, Navigate, NavLink, Outlet, useLocation, useMatches, useNavigate } from 'react-router';
import { ApiError } from '../api/client';
import { EnvironmentPicker, ProjectPicker, TimeRangePicker } from '../components/pickers';
import { ErrorNotice, Loading } from '../components/states';
import { useCarriedSearch } from '../lib/url-state';
import { useLogout, useMe } from '../features/auth/api';

/** What a route shows in the top bar: `handle: { pickers: ['project', 'range', 'environment'] }`. */
export interface RouteHandle {
  pickers?: Array<'project' | 'range' | 'environment'>;
}

const NAV: Array<{ group: string; links: Array<{ to: string; label: string; end?: boolean }> }> = [
  {
    group: 'Errors',
    links: [
      { to: '/issues', label: 'Issues' },
      { to: '/releases', label: 'Releases' },
      { to: '/replays', label: 'Replays' },
    ],
  },
  {
    group: 'Tracing',
    links: [
      { to: '/traces', label: 'Traces' },
      { to: '/services', label: 'Services', end: true },
      { to: '/services/map', label: 'Service map' },
      { to: '/performance', label: 'Performance' },
    ],
  },
  {
    group: 'Telemetry',
    links: [
      { to: '/logs', label: 'Logs' },
      { to: '/metrics', label: 'Metrics' },
      { to: '/anomalies', label: 'Anomalies' },
      { to: '/dashboards', label: 'Dashboards' },
    ],
  },
  {
    group: 'Monitors',
    links: [
      { to: '/monitors/cron', label: 'Cron checks' },
      { to: '/monitors/uptime', label: 'Uptime' },
    ],
  },
  {
    group: 'Alerting',
    links: [
      { to: '/alerts', label: 'Alerts', end: true },
      { to: '/alerts/destinations', label: 'Destinations' },
      { to: '/reports', label: 'Digests' },
    ],
  },
  {
    group: 'Setup',
    links: [
      { to: '/onboarding', label: 'Set up a project' },
      { to: '/settings', label: 'Settings' },
    ],
  },
];

function UserMenu() {
  const me = useMe();
  const logout = useLogout();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const menu = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!open) return;
    const close = (event: MouseEvent | KeyboardEvent) => {
      if (event instanceof KeyboardEvent ? event.key === 'Escape' : !menu.current?.contains(event.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', close);
    document.addEventListener('keydown', close);
    return () => {
      document.removeEventListener('mousedown', close);
      document.removeEventListener('keydown', close);
    };
  }, [open]);
  if (!me.data) return null;
  return (
    <div className="user-menu inline-field" ref={menu}>
      <span className="org-name ellipsis" title="Organization">
        {me.data.organization.name}
      </span>
      <button type="button" aria-expanded={open} aria-haspopup="true" onClick={() => setOpen(!open)}>
        Account
      </button>
      {open && (
        <div className="menu">
          <div className="small">
            Signed in as <strong className="wrap-anywhere">{me.data.user.email}</strong>
          </div>
          <div className="small muted">
            {me.data.organization.name} · {me.data.role}
          </div>
          <Link to="/settings/account" onClick={() => setOpen(false)}>
            Your account
          </Link>
          <button
            type="button"
            onClick={() =>
              logout.mutate(undefined, {
                onSettled: () => navigate('/login', { replace: true }),
              })
            }
          >
            Log out
          </button>
        </div>
      )}
    </div>
  );
}

/** The signed-in frame: navigation, the pickers the page takes, the user menu, then the page. */
export function Layout() {
  const me = useMe();
  const location = useLocation();
  const matches = useMatches();
  const [navOpen, setNavOpen] = useState(false);
  // the chosen project, range and environment stay chosen when moving between views
  const suffix = useCarriedSearch();
  useEffect(() => setNavOpen(false), [location.pathname]);
  if (me.isPending) return <Loading label="Signing in…" />;
  if (me.isError) {
    if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
    return (
      <main className="content">
        <ErrorNotice error={me.error} title="Sluice could not load your account" />
      </main>
    );
  }
  const pickers = new Set(matches.flatMap((match) => (match.handle as RouteHandle | undefined)?.pickers ?? []));
  return (
    <div className="shell">
      <aside className={`sidebar${navOpen ? ' open' : ''}`}>
        <NavLink to={`/issues${suffix}`} className="brand">
          <img src="/favicon.svg" alt="" width="24" height="24" /> Sluice
        </NavLink>
        <button type="button" className="menu-toggle" aria-expanded={navOpen} aria-controls="main-nav" onClick={() => setNavOpen(!navOpen)}>
          Menu
        </button>
        <nav id="main-nav" aria-label="Main">
          {NAV.map((group) => (
            <div key={group.group}>
              <div className="nav-group" aria-hidden="true">
                {group.group}
              </div>
              <ul>
                {group.links.map((link) => (
                  <li key={link.to}>
                    <NavLink to={`${link.to}${suffix}`} end={link.end}>
                      {link.label}
                    </NavLink>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </nav>
      </aside>
      <div className="main">
        <div className="topbar">
          <div className="pickers" role="group" aria-label="Filters for every view">
            {pickers.has('project') && <ProjectPicker />}
            {pickers.has('environment') && <EnvironmentPicker />}
            {pickers.has('range') && <TimeRangePicker />}
          </div>
          <UserMenu />
        </div>
        <main className="content" id="content">
          <Outlet />
        </main>
      </div>
    </div>
  );
}
