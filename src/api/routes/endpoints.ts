import { endpointSurgesJson, endpointSurgesQuery } from '../../shared/features/endpoints/schemas.js';
import { endpointSurges } from '../../shared/features/endpoints/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute } from '../routing.js';

export const endpointRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/endpoints/surges',
    tag: 'Services',
    summary: 'Endpoints whose request volume, or share of 4xx, 401, 403 or 429 answers, surged against the previous window. Counts only: no caller identity is stored or answered.',
    access: 'member',
    query: endpointSurgesQuery,
    response: endpointSurgesJson,
    handler: async ({ principal, query }) => endpointSurges(await viewScope(principal.orgId, query), query),
  }),
];
