import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type IssueFilters = Pick<QueryOf<'/v1/issues'>, 'project' | 'status' | 'environment' | 'release' | 'level' | 'q' | 'sort'>;
export type Issue = AnswerOf<'/v1/issues/{issueID}'>;
export type IssueEvent = AnswerOf<'/v1/issues/{issueID}/events'>['data'][number];
export type StackFrame = IssueEvent['exception'][number]['frames'][number];

/** How often the first page of the issue list is read again while open: new issues show within 5 s. */
const LIST_REFRESH_MS = 3000;

/**
 * One page of the issue list. The first page is read again every few seconds (a preset window ends at the
 * moment of each read) and keeps showing the previous answer meanwhile, so new rows slide in without a
 * loading state; later pages stay put while a person reads them.
 */
export const useIssues = (filters: IssueFilters, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['issues', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/issues', { params: { query: { ...filters, ...windowBounds(window), limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: cursor ? false : LIST_REFRESH_MS,
  });

export const useIssue = (issueID: string) =>
  useQuery({
    queryKey: ['issue', issueID],
    queryFn: ({ signal }) => read(api().GET('/v1/issues/{issueID}', { params: { path: { issueID } }, signal })),
  });

/** The issue's events per hour of the window, counted as the workers store them. */
export const useIssueSeries = (issueID: string, window: TimeWindow) =>
  useQuery({
    queryKey: ['issue', issueID, 'series', window],
    queryFn: ({ signal }) => read(api().GET('/v1/issues/{issueID}/series', { params: { path: { issueID }, query: windowBounds(window) }, signal })),
  });

/** A page of the issue's events, newest first (the API takes only limit and cursor). */
export const useIssueEvents = (issueID: string, limit: number, cursor?: string) =>
  useQuery({
    queryKey: ['issue', issueID, 'events', limit, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/issues/{issueID}/events', { params: { path: { issueID }, query: { limit, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

/**
 * The project's feedback since the issue began. The API cannot filter feedback by issue, so the page keeps
 * the feedback whose associated event is one of the issue's events it has read.
 */
export const useFeedbackSince = (project: string | undefined, from: string | undefined) =>
  useQuery({
    queryKey: ['feedback', project, from],
    queryFn: ({ signal }) => read(api().GET('/v1/feedback', { params: { query: { project, from, limit: 200 } }, signal })),
    enabled: Boolean(project && from),
  });

/** Resolve, ignore or reopen: the issue page shows the answer at once and every issue list reads again. */
export function useChangeIssueStatus(issueID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/issues/{issueID}', 'patch'>) => read(api().PATCH('/v1/issues/{issueID}', { params: { path: { issueID } }, body })),
    onSuccess: (issue) => {
      // the answer has no latest_event: keep the one already shown
      queryClient.setQueryData<Issue>(['issue', issueID], (current) => (current ? { ...current, ...issue } : current));
      return queryClient.invalidateQueries({ queryKey: ['issues'] });
    },
  });
}
