import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, read, runtimeConfig, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type IssueFilters = Pick<QueryOf<'/v1/issues'>, 'project' | 'status' | 'environment' | 'release' | 'level' | 'q' | 'sort'>;
export type Issue = AnswerOf<'/v1/issues/{issueID}'>;
export type IssueEvent = AnswerOf<'/v1/issues/{issueID}/events'>['data'][number];
export type StackFrame = IssueEvent['exception'][number]['frames'][number];
export type Investigation = AnswerOf<'/v1/issues/{issueID}/investigation'>;

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

/** The newest deployments of one of the issue's releases in its project, for the link to their health. */
export const useReleaseDeployments = (project: string, version: string) =>
  useQuery({
    queryKey: ['deployments', { project, version }, 'newest'],
    queryFn: ({ signal }) => read(api().GET('/v1/deployments', { params: { query: { project, version, limit: 5 } }, signal })),
  });

/** AI investigations are off, or on with the issue's latest investigation (null before the first). */
export type InvestigationState = { on: false } | { on: true; investigation: Investigation | null };

const INVESTIGATION_POLL_MS = 1000;
const isUnderWay = (state: InvestigationState | undefined) => Boolean(state?.on && state.investigation && ['queued', 'running'].includes(state.investigation.status));

/**
 * The issue's latest investigation, read again every second while it is queued or running. The
 * dashboard's configuration says whether AI is on; where it does not, the API's 501 `ai_unavailable` does.
 */
export const useIssueInvestigation = (issueID: string) =>
  useQuery({
    queryKey: ['issue', issueID, 'investigation'],
    queryFn: async ({ signal }): Promise<InvestigationState> => {
      try {
        return { on: true, investigation: await read(api().GET('/v1/issues/{issueID}/investigation', { params: { path: { issueID } }, signal })) };
      } catch (error) {
        if (error instanceof ApiError && error.code === 'ai_unavailable') return { on: false };
        if (error instanceof ApiError && error.status === 404) return { on: true, investigation: null };
        throw error;
      }
    },
    enabled: runtimeConfig().ai !== false,
    refetchInterval: (query) => (isUnderWay(query.state.data) ? INVESTIGATION_POLL_MS : false),
  });

/** Starts an investigation (or answers the one under way); the page then polls it until it ends. */
export function useInvestigateIssue(issueID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().POST('/v1/issues/{issueID}/investigate', { params: { path: { issueID } } })),
    onSuccess: (investigation) => {
      const started: InvestigationState = { on: true, investigation };
      queryClient.setQueryData(['issue', issueID, 'investigation'], started);
    },
  });
}
