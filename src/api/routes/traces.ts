import { z } from 'zod';
import { listTracesQuery, traceDetailJson, traceRowJson, traceSpansQuery } from '../../shared/features/traces/schemas.js';
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
    summary: 'One trace: figures of the whole trace, a page of its spans in tree order (parents before children, siblings by start; at most `limit`, then `next_cursor`) and the issues its errors belong to.',
    access: 'member',
    params: z.object({ traceID: z.string() }),
    query: traceSpansQuery,
    response: traceDetailJson,
    handler: ({ principal, params, query }) => getTrace(principal.orgId, params.traceID, query),
  }),
];
