import type { Request, Response } from 'express';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { toAppError } from '../../shared/http/errors.js';
import {
  asQueryValues,
  dashboardBodies,
  dashboardJson,
  getDashboardQuery,
  listDashboardsQuery,
  MAX_RESOLVED_WIDGETS,
  updateDashboardBody,
  type ViewCatalog,
} from '../../shared/features/dashboards/schemas.js';
import { createDashboard, deleteDashboard, getDashboard, listDashboards, replaceWidgets, updateDashboard, type ViewResolver } from '../../shared/features/dashboards/service.js';
import type { MemberPrincipal } from '../../shared/principal.js';
import { authorize, defineRoute, listOf, safeParseQuery, type AnyRoute } from '../routing.js';

/**
 * The read views a widget may show: its name → the GET route serving it, and the label a widget without
 * a title is named after. A widget's params are that route's query parameters and its data is that
 * route's answer, so nothing here repeats a view's schema or logic.
 */
export const dashboardViews = {
  issues: { path: '/v1/issues', label: 'Issues' },
  traces: { path: '/v1/traces', label: 'Traces' },
  services: { path: '/v1/services', label: 'Services' },
  'services.map': { path: '/v1/services/map', label: 'Service map' },
  'services.approaching': { path: '/v1/services/approaching', label: 'Approaching thresholds' },
  traffic: { path: '/v1/traffic', label: 'Traffic' },
  queues: { path: '/v1/queues', label: 'Queues' },
  anomalies: { path: '/v1/anomalies', label: 'Anomalies' },
  'endpoints.surges': { path: '/v1/endpoints/surges', label: 'Endpoint surges' },
  'database.slow_queries': { path: '/v1/database/slow-queries', label: 'Slow queries' },
  'database.query_patterns': { path: '/v1/database/query-patterns', label: 'Query patterns' },
  logs: { path: '/v1/logs', label: 'Logs' },
  'logs.patterns': { path: '/v1/logs/patterns', label: 'Log patterns' },
  'logs.surges': { path: '/v1/logs/surges', label: 'Log surges' },
  'metrics.names': { path: '/v1/metrics/names', label: 'Metric names' },
  'metrics.series': { path: '/v1/metrics/series', label: 'Metric' },
  alerts: { path: '/v1/alerts', label: 'Alerts' },
  'uptime.monitors': { path: '/v1/uptime/monitors', label: 'Uptime monitors' },
  'cron.checks': { path: '/v1/cron/checks', label: 'Cron checks' },
} as const satisfies Record<string, { path: string; label: string }>;

const viewNames = Object.keys(dashboardViews) as [keyof typeof dashboardViews, ...(keyof typeof dashboardViews)[]];

/** Each view's route, looked up once the app's route list is complete; a view without its route is a bug. */
function viewRegistry(routes: () => readonly AnyRoute[]) {
  let registry: Map<string, AnyRoute> | undefined;
  return () =>
    (registry ??= new Map(
      Object.entries(dashboardViews).map(([name, { path }]) => {
        const route = routes().find((candidate) => candidate.method === 'get' && candidate.path === path);
        if (!route || route.params || path.includes('{')) throw new Error(`dashboard view ${name}: no GET ${path} route without path parameters`);
        return [name, route];
      }),
    ));
}

/** A view's answer for the caller, as its own route gives it: the same access check, query rules and handler. */
const resolverFor =
  (views: () => Map<string, AnyRoute>, principal: MemberPrincipal, req: Request, res: Response): ViewResolver =>
  async (view, params) => {
    try {
      const route = views().get(view);
      if (!route) throw new AppError('validation_failed', `unknown view ${view}`);
      authorize(route.access, principal, undefined);
      // parameters saved under an older version of the view's rules may no longer pass them
      const query = safeParseQuery(route, asQueryValues(params));
      if (!query.success) throw new AppError('validation_failed', `parameters no longer valid for ${view}: ${query.error.issues.map((issue) => issue.message).join('; ')}`);
      return { data: await route.handler({ params: {}, query: query.data, body: undefined, principal, req, res }) };
    } catch (error) {
      const appError = toAppError(error);
      // out of budget or past the deadline: the whole request is, not just this widget
      if (appError.code === 'rate_limited' || appError.code === 'deadline_exceeded') throw appError;
      if (appError.code === 'internal_error') req.log.error({ err: error, view }, 'dashboard widget view failed');
      return { error: { code: appError.code, message: appError.message } };
    }
  };

const dashboardParams = z.object({ dashboardID: z.string() });

/** `routes` gives the app's full route list (as for the OpenAPI document), read on first use. */
export const dashboardRoutes = (routes: () => readonly AnyRoute[]) => {
  const views = viewRegistry(routes);
  const catalog: ViewCatalog = {
    names: viewNames,
    label: (view) => dashboardViews[view as keyof typeof dashboardViews].label,
    paramsProblems: (view, params) => {
      const route = views().get(view);
      if (!route) return [{ path: [], message: `unknown view ${view}` }];
      const result = safeParseQuery(route, params);
      if (result.success) return [];
      return result.error.issues.flatMap((issue) =>
        issue.code === 'unrecognized_keys' ? issue.keys.map((key) => ({ path: [key], message: `unknown parameter of ${view}` })) : [{ path: issue.path, message: issue.message }],
      );
    },
  };
  const { createDashboardBody, replaceWidgetsBody } = dashboardBodies(catalog);
  return [
    defineRoute({
      method: 'post',
      path: '/v1/dashboards',
      tag: 'Dashboards',
      summary: "Create a dashboard, optionally with widgets: each shows one read view (its `query.view`) with that view's query parameters, placed on a 12-column grid.",
      access: 'member',
      body: createDashboardBody,
      status: 201,
      response: dashboardJson,
      handler: ({ principal, body, req }) => createDashboard(principal, body, req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/dashboards',
      tag: 'Dashboards',
      summary: "The organisation's dashboards, oldest first, with their widgets (unresolved).",
      access: 'member',
      query: listDashboardsQuery,
      response: listOf(dashboardJson),
      handler: ({ principal, query }) => listDashboards(principal.orgId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/dashboards/{dashboardID}',
      tag: 'Dashboards',
      summary: `One dashboard; with resolve=true each widget resolved (the first ${MAX_RESOLVED_WIDGETS}, or those named by \`widget\`) also carries \`data\`, its view's answer for the caller exactly as the view's own route gives it, or \`error\` when the view refused. Each widget resolved costs one rate-limit point more.`,
      access: 'member',
      params: dashboardParams,
      query: getDashboardQuery,
      response: dashboardJson,
      handler: ({ principal, params, query, req, res }) =>
        getDashboard(principal.orgId, params.dashboardID, query.resolve === 'true' ? resolverFor(views, principal, req, res) : undefined, query.widget),
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/dashboards/{dashboardID}',
      tag: 'Dashboards',
      summary: 'Rename a dashboard or change its description (null clears it).',
      access: 'member',
      params: dashboardParams,
      body: updateDashboardBody,
      response: dashboardJson,
      handler: ({ principal, params, body, req }) => updateDashboard(principal, params.dashboardID, body, req.ip),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/dashboards/{dashboardID}/widgets',
      tag: 'Dashboards',
      summary: 'Replace the whole widget set. Widgets keep the ids given; those without one get a new id. One invalid widget refuses the whole set.',
      access: 'member',
      params: dashboardParams,
      body: replaceWidgetsBody,
      response: dashboardJson,
      handler: ({ principal, params, body, req }) => replaceWidgets(principal, params.dashboardID, body.widgets, req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/dashboards/{dashboardID}',
      tag: 'Dashboards',
      summary: 'Delete a dashboard.',
      access: 'member',
      params: dashboardParams,
      status: 204,
      handler: ({ principal, params, req }) => deleteDashboard(principal, params.dashboardID, req.ip),
    }),
  ];
};
