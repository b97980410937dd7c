import { logLineJson, logPatternJson, logPatternsQuery, logSurgesJson, logSurgesQuery, searchLogsQuery } from '../../shared/features/logs/schemas.js';
import { listLogPatterns, logSurges, searchLogs } from '../../shared/features/logs/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute, listOf } from '../routing.js';

export const logRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/logs',
    tag: 'Logs',
    summary: 'Log lines in the window matching every filter (service, level, trace, attributes, and all words of q), newest first.',
    access: 'member',
    query: searchLogsQuery,
    response: listOf(logLineJson),
    handler: async ({ principal, query }) => searchLogs(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/logs/patterns',
    tag: 'Logs',
    summary: 'Recurring log shapes in the window, most frequent first: template, count, levels, services, an example, first and last seen.',
    access: 'member',
    query: logPatternsQuery,
    response: listOf(logPatternJson),
    handler: async ({ principal, query }) => listLogPatterns(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/logs/surges',
    tag: 'Logs',
    summary: 'Log volume surges per service and per pattern against the previous window of the same length, and patterns first seen inside the window.',
    access: 'member',
    query: logSurgesQuery,
    response: logSurgesJson,
    handler: async ({ principal, query }) => logSurges(await viewScope(principal.orgId, query), query),
  }),
];
