import { queuesJson, queuesQuery } from '../../shared/features/queues/schemas.js';
import { listQueues } from '../../shared/features/queues/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute } from '../routing.js';

export const queueRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/queues',
    tag: 'Services',
    summary: 'Queues seen in messaging spans: published, processed and failed messages, processing and wait p95, and backlog growth.',
    access: 'member',
    query: queuesQuery,
    response: queuesJson,
    handler: async ({ principal, query }) => listQueues(await viewScope(principal.orgId, query), query),
  }),
];
