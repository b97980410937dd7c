import { keepPreviousData, useInfiniteQuery, useQueries, useQuery } from '@tanstack/react-query';
import { api, read, type AnswerOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type TraceFilters = Pick<QueryOf<'/v1/traces'>, 'project' | 'service' | 'name' | 'kind' | 'status' | 'min_duration_ms' | 'http_status' | 'attribute'>;
export type TraceSummary = AnswerOf<'/v1/traces'>['data'][number];
export type Trace = AnswerOf<'/v1/traces/{traceID}'>;
export type Span = Trace['spans'][number];

/** How often the open list's first page is read again, so that traces sent meanwhile show up. */
const LIST_REFRESH_MS = 5000;

/**
 * One page of the trace list, newest first. The previous answer stays on screen while the next loads, so
 * the first page refreshes without a loading state; later pages stay put while a person reads them.
 */
export const useTraces = (filters: TraceFilters, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['traces', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/traces', { params: { query: { ...filters, ...windowBounds(window), limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: cursor ? false : LIST_REFRESH_MS,
  });

/** A trace that ended less than this long ago may still be receiving spans; it is read every few seconds. */
const RECENT_TRACE_MS = 2 * 60_000;
const RECENT_REFRESH_MS = 5000;

/** Spans per answer: the API's largest page, so a trace of up to 2,000 spans is one request. */
const SPANS_PER_PAGE = 2000;

/**
 * A trace, page by page: the figures of the whole trace come with every page; "Load more spans" follows
 * `next_cursor`, which is null on the page holding the last spans.
 */
export const useTrace = (traceID: string) =>
  useInfiniteQuery({
    queryKey: ['trace', traceID],
    queryFn: ({ signal, pageParam }) => read(api().GET('/v1/traces/{traceID}', { params: { path: { traceID }, query: { limit: SPANS_PER_PAGE, cursor: pageParam } }, signal })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.next_cursor ?? undefined,
    // spans of a trace that just ended may still be on their way: read it again while it is recent
    refetchInterval: (query) => {
      const pages = query.state.data?.pages;
      if (pages?.length !== 1) return false;
      const end = Date.parse(pages[0]!.start) + pages[0]!.duration_ms;
      return Date.now() - end < RECENT_TRACE_MS ? RECENT_REFRESH_MS : false;
    },
  });

/** The titles of the issues a trace's errors belong to, one read per issue (the caller bounds how many). */
export const useIssueTitles = (issueIDs: readonly string[]) =>
  useQueries({
    queries: issueIDs.map((issueID) => ({
      queryKey: ['issue', issueID],
      queryFn: ({ signal }: { signal: AbortSignal }) => read(api().GET('/v1/issues/{issueID}', { params: { path: { issueID } }, signal })),
      staleTime: 60_000,
    })),
  });
