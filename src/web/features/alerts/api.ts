import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, read, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type AlertFilters = Pick<QueryOf<'/v1/alerts'>, 'project' | 'kind' | 'status'>;
export type Alert = AnswerOf<'/v1/alerts'>['data'][number];
export type Delivery = Alert['deliveries'][number];
export type Destination = AnswerOf<'/v1/alert-destinations'>['data'][number];
export type NewDestination = BodyOf<'/v1/alert-destinations', 'post'>;
export type TestOutcome = AnswerOf<'/v1/alert-destinations/{destinationID}/test', 'post'>;
export type Schedule = AnswerOf<'/v1/reports/schedule'>;
export type ScheduleBody = BodyOf<'/v1/reports/schedule', 'put'>;

/** How often the first page of the alert history is read again while open: a new alert shows within seconds. */
const HISTORY_REFRESH_MS = 5000;

/** One page of the alerts opened in the window, newest first; the first page keeps itself current. */
export const useAlerts = (filters: AlertFilters, window: TimeWindow, cursor: string | undefined) =>
  useQuery({
    queryKey: ['alerts', filters, window, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/alerts', { params: { query: { ...filters, ...windowBounds(window), limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: cursor ? false : HISTORY_REFRESH_MS,
  });

/** The organisation's destinations (admins only: the API refuses members), oldest first. */
export const useDestinations = (cursor: string | undefined, enabled = true) =>
  useQuery({
    queryKey: ['alert-destinations', cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/alert-destinations', { params: { query: { limit: 100, cursor } }, signal })),
    placeholderData: keepPreviousData,
    enabled,
  });

export function useCreateDestination() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: NewDestination) => read(api().POST('/v1/alert-destinations', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['alert-destinations'] }),
  });
}

export function useDeleteDestination() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (destinationID: string) => read(api().DELETE('/v1/alert-destinations/{destinationID}', { params: { path: { destinationID } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['alert-destinations'] }),
  });
}

/** "Send a test": the API delivers a test alert now and answers the outcome; nothing it stores changes. */
export const useSendTest = () =>
  useMutation({
    mutationFn: (destinationID: string) => read(api().POST('/v1/alert-destinations/{destinationID}/test', { params: { path: { destinationID } } })),
  });

/** The digest schedule, or null when the organisation has none (the API answers 404). */
export const useSchedule = (enabled = true) =>
  useQuery({
    queryKey: ['report-schedule'],
    queryFn: async ({ signal }) => {
      try {
        return await read(api().GET('/v1/reports/schedule', { signal }));
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }
    },
    enabled,
  });

/** How often the preview is rendered again while it is open, so it shows what has arrived since. */
const PREVIEW_REFRESH_MS = 60_000;

/** The next digest rendered without sending: its period follows the saved schedule. */
export const usePreview = () =>
  useQuery({
    queryKey: ['report-preview'],
    queryFn: ({ signal }) => read(api().GET('/v1/reports/preview', { signal })),
    refetchInterval: PREVIEW_REFRESH_MS,
  });

export function usePutSchedule() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: ScheduleBody) => read(api().PUT('/v1/reports/schedule', { body })),
    onSuccess: (schedule) => {
      queryClient.setQueryData(['report-schedule'], schedule);
      return queryClient.invalidateQueries({ queryKey: ['report-preview'] });
    },
  });
}

export function useDeleteSchedule() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().DELETE('/v1/reports/schedule')),
    onSuccess: () => {
      queryClient.setQueryData(['report-schedule'], null);
      return queryClient.invalidateQueries({ queryKey: ['report-preview'] });
    },
  });
}

/** Confirms a mailed address with the token of its link; no sign-in needed. */
export const useConfirmAddress = (token: string) =>
  useMutation({
    mutationFn: () => read(api().POST('/v1/email-confirmations/{token}', { params: { path: { token } } })),
  });
