import { useQuery } from '@tanstack/react-query';
import { api, read, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

/** Lines per page of the log search. */
export const LOG_PAGE_SIZE = 50;

/** An empty answer is read again every 5 s, so lines sent while the page is open show up without a reload. */
const whileEmpty = (query: { state: { data?: { data: readonly unknown[] } } }) => (query.state.data?.data.length === 0 ? 5000 : false);

export type LogFilters = Pick<QueryOf<'/v1/logs'>, 'project' | 'service' | 'level' | 'trace_id' | 'attribute' | 'q'>;

/**
 * One page of log lines, newest first. While following, the newest page is read again every 2 s: a preset
 * window ends at the moment of each read, so lines that arrived since appear at the top.
 */
export const useLogLines = (filters: LogFilters, window: TimeWindow, cursor: string | undefined, follow: boolean) =>
  useQuery({
    queryKey: ['logs', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/logs', { params: { query: { ...filters, ...windowBounds(window), limit: LOG_PAGE_SIZE, cursor } }, signal })),
    refetchInterval: (query) => (follow ? 2000 : cursor ? false : whileEmpty(query)),
  });

export type LogPatternFilters = Pick<QueryOf<'/v1/logs/patterns'>, 'project' | 'service'>;

export const useLogPatterns = (filters: LogPatternFilters, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['logs', 'patterns', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/logs/patterns', { params: { query: { ...filters, ...windowBounds(window), limit: 50, cursor } }, signal })),
    refetchInterval: whileEmpty,
  });

export const useLogSurges = (filters: LogPatternFilters, window: TimeWindow) =>
  useQuery({
    queryKey: ['logs', 'surges', filters, window],
    queryFn: ({ signal }) => read(api().GET('/v1/logs/surges', { params: { query: { ...filters, ...windowBounds(window) } }, signal })),
    refetchInterval: whileEmpty,
  });
