import { metricNameJson, metricNamesQuery, metricSeriesJson, metricSeriesQuery } from '../../shared/features/metrics/schemas.js';
import { listMetricNames, metricSeries } from '../../shared/features/metrics/service.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute, listOf } from '../routing.js';

export const metricRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/metrics/names',
    tag: 'Metrics',
    summary: 'Metric names reported in the window, with their type, unit and attribute keys.',
    access: 'member',
    query: metricNamesQuery,
    response: listOf(metricNameJson),
    handler: async ({ principal, query }) => listMetricNames(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/metrics/series',
    tag: 'Metrics',
    summary: 'Points of a named metric, the series matching the filters combined, one per step: sum, avg, min, max, count, rate, or p50/p95/p99 of histograms.',
    access: 'member',
    query: metricSeriesQuery,
    response: metricSeriesJson,
    handler: async ({ principal, query }) => metricSeries(await viewScope(principal.orgId, query), query),
  }),
];
