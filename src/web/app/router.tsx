import { createBrowserRouter, Link, Navigate, type RouteObject } from 'react-router';
import { PageHeader } from '../components/PageHeader';
import { ErrorNotice, Loading } from '../components/states';
import { LoginPage } from '../features/auth/LoginPage';
import { SignupPage } from '../features/auth/SignupPage';
import { useProjects } from '../features/projects/api';
import { Layout, type RouteHandle } from './Layout';

/** Each page is its own chunk, loaded when first opened. */
const page = (load: () => Promise<{ default: React.ComponentType }>, handle: RouteHandle = {}): Pick<RouteObject, 'lazy' | 'handle'> => ({
  handle,
  lazy: async () => ({ Component: (await load()).default }),
});

const VIEW: RouteHandle = { pickers: ['project', 'range'] };

/** `/`: onboarding until the organization has a project, then the issue list. */
function Home() {
  const projects = useProjects();
  if (projects.isPending) return <Loading />;
  if (projects.isError) return <ErrorNotice error={projects.error} />;
  return <Navigate to={projects.data.data.length ? '/issues' : '/onboarding'} replace />;
}

function NotFound() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no page at this address. <Link to="/issues">Go to the issues</Link>.
      </p>
    </>
  );
}

export const routes: RouteObject[] = [
  { path: '/login', element: <LoginPage /> },
  { path: '/signup', element: <SignupPage /> },
  // pages a mailed link opens: they work signed in or not
  { path: '/forgot-password', ...page(() => import('../features/auth/ForgotPasswordPage')) },
  { path: '/reset-password/:token', ...page(() => import('../features/auth/ResetPasswordPage')) },
  { path: '/invites/:token', ...page(() => import('../features/auth/InvitePage')) },
  { path: '/confirm-email/:token', ...page(() => import('../features/alerts/ConfirmEmailPage')) },
  {
    element: <Layout />,
    children: [
      { index: true, element: <Home /> },
      { path: 'onboarding', ...page(() => import('../features/onboarding/OnboardingPage')) },
      { path: 'issues', ...page(() => import('../features/issues/IssueListPage'), { pickers: ['project', 'environment', 'range'] }) },
      { path: 'issues/:issueId', ...page(() => import('../features/issues/IssuePage'), { pickers: ['range'] }) },
      { path: 'traces', ...page(() => import('../features/traces/TraceListPage'), VIEW) },
      { path: 'traces/:traceId', ...page(() => import('../features/traces/TracePage')) },
      { path: 'services', ...page(() => import('../features/services/ServiceListPage'), VIEW) },
      { path: 'services/map', ...page(() => import('../features/services/ServiceMapPage'), VIEW) },
      { path: 'services/:name', ...page(() => import('../features/services/ServicePage'), VIEW) },
      { path: 'performance', ...page(() => import('../features/performance/PerformancePage'), VIEW) },
      { path: 'logs', ...page(() => import('../features/logs/LogsPage'), VIEW) },
      { path: 'logs/patterns', ...page(() => import('../features/logs/LogPatternsPage'), VIEW) },
      { path: 'metrics', ...page(() => import('../features/metrics/MetricsPage'), VIEW) },
      { path: 'anomalies', ...page(() => import('../features/metrics/AnomaliesPage'), VIEW) },
      { path: 'releases', ...page(() => import('../features/releases/ReleasesPage'), { pickers: ['project', 'environment'] }) },
      { path: 'deployments/:deploymentId', ...page(() => import('../features/releases/DeploymentPage')) },
      { path: 'replays', ...page(() => import('../features/replays/ReplayListPage'), { pickers: ['project'] }) },
      { path: 'replays/:projectId/:sessionId', ...page(() => import('../features/replays/ReplayPage')) },
      { path: 'monitors/cron', ...page(() => import('../features/monitors/CronListPage'), { pickers: ['project'] }) },
      { path: 'monitors/cron/:checkId', ...page(() => import('../features/monitors/CronCheckPage'), { pickers: ['range'] }) },
      { path: 'monitors/uptime', ...page(() => import('../features/monitors/UptimeListPage'), { pickers: ['project'] }) },
      { path: 'monitors/uptime/:monitorId', ...page(() => import('../features/monitors/UptimeMonitorPage'), { pickers: ['range'] }) },
      { path: 'alerts', ...page(() => import('../features/alerts/AlertsPage'), VIEW) },
      { path: 'alerts/destinations', ...page(() => import('../features/alerts/DestinationsPage')) },
      { path: 'reports', ...page(() => import('../features/alerts/ReportsPage')) },
      { path: 'dashboards', ...page(() => import('../features/dashboards/DashboardListPage')) },
      { path: 'dashboards/:dashboardId', ...page(() => import('../features/dashboards/DashboardPage'), VIEW) },
      {
        path: 'settings',
        ...page(() => import('../features/settings/SettingsLayout')),
        children: [
          { index: true, element: <Navigate to="organization" replace /> },
          { path: 'account', ...page(() => import('../features/auth/AccountPage')) },
          { path: 'organization', ...page(() => import('../features/settings/OrganizationPage')) },
          { path: 'members', ...page(() => import('../features/settings/MembersPage')) },
          { path: 'api-keys', ...page(() => import('../features/settings/ApiKeysPage')) },
          { path: 'projects', ...page(() => import('../features/settings/ProjectsPage')) },
          { path: 'integrations', ...page(() => import('../features/settings/IntegrationsPage')) },
          { path: 'sso', ...page(() => import('../features/settings/SsoPage')) },
          { path: 'usage', ...page(() => import('../features/settings/UsagePage')) },
          { path: 'billing', ...page(() => import('../features/settings/BillingReturnPage')) },
          { path: 'audit-log', ...page(() => import('../features/settings/AuditLogPage')) },
        ],
      },
      { path: '*', element: <NotFound /> },
    ],
  },
];

/** Pages that work signed out (sign-in itself and the pages a mailed link opens): a 401 there is not a reason to go to the login page. */
export const isPublicPath = (pathname: string) => /^\/(login|signup|forgot-password|reset-password\/|invites\/|confirm-email\/)/.test(pathname);

export const createRouter = () => createBrowserRouter(routes);
