import { z } from 'zod';
import { listTracesQuery, traceDetailJson, traceRowJson } from '../../shared/features/traces/schemas.js';
import { getTrace, listTraces } from '../../shared/features/traces/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute, listOf } from '../routing.js';

export const traceRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/traces',
    tag: 'Traces',
    summary: 'Whole traces that have at least one span matching every filter (service, name or route, kind, status, minimum duration, HTTP status, attributes), newest first.',
    access: 'member',
    query: listTracesQuery,
    response: listOf(traceRowJson),
    handler: async ({ principal, query }) => listTraces(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/traces/{traceID}',
    tag: 'Traces',
    summary: 'One trace: its spans in tree order (parents before children, siblings by start) and the issues its errors belong to.',
    access: 'member',
    params: z.object({ traceID: z.string() }),
    response: traceDetailJson,
    handler: ({ principal, params }) => getTrace(principal.orgId, params.traceID),
  }),
];
