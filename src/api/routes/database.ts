import { databaseQuery, queryPatternsJson, slowQueriesJson } from '../../shared/features/database/schemas.js';
import { queryPatterns, slowQueries } from '../../shared/features/database/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute } from '../routing.js';

export const databaseRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/database/slow-queries',
    tag: 'Database',
    summary: 'Normalised statements of database client spans, slowest first: calls, p50, p95, slowest and total time, and example traces.',
    access: 'member',
    query: databaseQuery,
    response: slowQueriesJson,
    handler: async ({ principal, query }) => slowQueries(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/database/query-patterns',
    tag: 'Database',
    summary: 'Statements normalised into patterns (literals, IN lists and VALUES rows as placeholders; case and whitespace folded), ranked by total time or calls.',
    access: 'member',
    query: databaseQuery,
    response: queryPatternsJson,
    handler: async ({ principal, query }) => queryPatterns(await viewScope(principal.orgId, query), query),
  }),
];
