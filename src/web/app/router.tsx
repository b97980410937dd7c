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
      { path: '*', element: <NotFound /> },
    ],
  },
];

export const createRouter = () => createBrowserRouter(routes);
