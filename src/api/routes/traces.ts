import { z } from 'zod';
import { traceDetailJson } from '../../shared/features/traces/schemas.js';
import { getTrace } from '../../shared/features/traces/service.js';
import { defineRoute } from '../routing.js';

export const traceRoutes = () => [
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
