import { useQuery } from '@tanstack/react-query';
import { api, read, type QueryOf } from '../../api/client';
import { trafficQuery, windowBounds, type TimeWindow } from '../../lib/url-state';

/** An empty section is read again every 5 s, so telemetry sent while the page is open shows up without a reload. */
const WAITING_MS = 5000;
const whileEmpty = (query: { state: { data?: { data: readonly unknown[] } } }) => (query.state.data?.data.length === 0 ? WAITING_MS : false);

/** Requests and errors over time: by project, or by service when one project is picked. */
export const useTraffic = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['traffic', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/traffic', { params: { query: { project, ...trafficQuery(window) } }, signal })),
    refetchInterval: (query) => (query.state.data?.series.every((series) => series.requests === 0) ? WAITING_MS : false),
  });

export const useEndpointSurges = (filters: Pick<QueryOf<'/v1/endpoints/surges'>, 'project' | 'service'>, window: TimeWindow) =>
  useQuery({
    queryKey: ['endpoints', 'surges', filters, window],
    queryFn: ({ signal }) => read(api().GET('/v1/endpoints/surges', { params: { query: { ...filters, ...windowBounds(window) } }, signal })),
    refetchInterval: whileEmpty,
  });

export type DatabaseFilters = Pick<QueryOf<'/v1/database/slow-queries'>, 'project' | 'service' | 'system'>;

export const useSlowQueries = (filters: DatabaseFilters, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['database', 'slow-queries', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/database/slow-queries', { params: { query: { ...filters, ...windowBounds(window), limit: 20, cursor } }, signal })),
    refetchInterval: whileEmpty,
  });

export const useQueryPatterns = (filters: DatabaseFilters & Pick<QueryOf<'/v1/database/query-patterns'>, 'sort'>, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['database', 'query-patterns', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/database/query-patterns', { params: { query: { ...filters, ...windowBounds(window), limit: 20, cursor } }, signal })),
    refetchInterval: whileEmpty,
  });

export const useQueues = (project: string | undefined, window: TimeWindow) =>
  useQuery({
    queryKey: ['queues', project, window],
    queryFn: ({ signal }) => read(api().GET('/v1/queues', { params: { query: { project, ...windowBounds(window) } }, signal })),
    refetchInterval: whileEmpty,
  });
