import { anomaliesQuery, anomalyJson } from '../../shared/features/anomalies/schemas.js';
import { listAnomalies } from '../../shared/features/anomalies/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute, listOf } from '../routing.js';

export const anomalyRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/anomalies',
    tag: 'Services',
    summary: 'Anomalies the detector found in throughput, error rate, p95 latency and log volume per service, overlapping the window, newest first: observed value, baseline, band, score and a plain-language reason.',
    access: 'member',
    query: anomaliesQuery,
    response: listOf(anomalyJson),
    handler: async ({ principal, query }) => listAnomalies(await viewScope(principal.orgId, query), query),
  }),
];
