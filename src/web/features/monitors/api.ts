import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';
import { windowBounds, type TimeWindow } from '../../lib/url-state';

export type CronCheck = AnswerOf<'/v1/cron/checks/{checkID}'>;
export type CronPing = AnswerOf<'/v1/cron/checks/{checkID}/pings'>['data'][number];
export type CheckState = CronCheck['state'];
export type CheckFilters = Pick<QueryOf<'/v1/cron/checks'>, 'project' | 'state'>;
export type NewCheck = BodyOf<'/v1/cron/checks', 'post'>;
export type CheckChange = BodyOf<'/v1/cron/checks/{checkID}', 'patch'>;

export type UptimeMonitor = AnswerOf<'/v1/uptime/monitors/{monitorID}'>;
export type ProbeResult = AnswerOf<'/v1/uptime/monitors/{monitorID}/checks'>['data'][number];
export type MonitorState = UptimeMonitor['state'];
export type MonitorFilters = Pick<QueryOf<'/v1/uptime/monitors'>, 'project' | 'state'>;
export type NewMonitor = BodyOf<'/v1/uptime/monitors', 'post'>;
export type MonitorChange = BodyOf<'/v1/uptime/monitors/{monitorID}', 'patch'>;

/** Lists and one check or monitor are read again this often while open: a ping or probe shows within seconds. */
const LIST_REFRESH_MS = 10_000;
const ONE_REFRESH_MS = 5_000;
/** History is read back to the window's start a page at a time, up to this many entries. */
const HISTORY_PAGE = 200;
export const HISTORY_LIMIT = 2_000;

/** A window's history slides on at least this often, even when nothing moves. */
const HISTORY_REFRESH_MS = 60_000;

/**
 * A history the API pages newest first without a time filter (check-ins, probe results): read back to
 * the window's start (its bounds taken at the moment of reading), or to HISTORY_LIMIT entries.
 * `complete` says whether the window's start was reached.
 */
async function historyOf<T>(window: TimeWindow, page: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor: string | null }>, timeOf: (item: T) => string) {
  const bounds = windowBounds(window);
  const [from, to] = [Date.parse(bounds.from), Date.parse(bounds.to)];
  const items: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const answer = await page(cursor);
    items.push(...answer.data.filter((item) => Date.parse(timeOf(item)) >= from && Date.parse(timeOf(item)) <= to));
    const last = answer.data.at(-1);
    if (!answer.next_cursor || (last && Date.parse(timeOf(last)) < from)) return { items, from, to, complete: true };
    if (items.length >= HISTORY_LIMIT) return { items, from, to, complete: false };
    cursor = answer.next_cursor;
  }
}

// ---------------------------------------------------------------------------------------------------
// Cron checks

export const useCronChecks = (filters: CheckFilters, cursor: string | undefined) =>
  useQuery({
    queryKey: ['cron-checks', filters, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/cron/checks', { params: { query: { ...filters, limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: LIST_REFRESH_MS,
  });

export const useCronCheck = (checkID: string) =>
  useQuery({
    queryKey: ['cron-checks', 'one', checkID],
    queryFn: ({ signal }) => read(api().GET('/v1/cron/checks/{checkID}', { params: { path: { checkID } }, signal })),
    refetchInterval: ONE_REFRESH_MS,
  });

/**
 * The check's pings over the window. `version` (its last check-in, deadline and state) is part of the
 * key, so the history is read again when the check moves, not on every refresh of the check.
 */
export const useCronPings = (checkID: string, window: TimeWindow, version: string) =>
  useQuery({
    queryKey: ['cron-checks', 'one', checkID, 'pings', window, version],
    queryFn: ({ signal }) =>
      historyOf(
        window,
        (cursor) => read(api().GET('/v1/cron/checks/{checkID}/pings', { params: { path: { checkID }, query: { limit: HISTORY_PAGE, cursor } }, signal })),
        (ping) => ping.received_at,
      ),
    placeholderData: keepPreviousData,
    refetchInterval: HISTORY_REFRESH_MS,
  });

export function useCreateCronCheck() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: NewCheck) => read(api().POST('/v1/cron/checks', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['cron-checks'] }),
  });
}

/** Edit, pause or resume: the answer is the check as it now is. */
export function useUpdateCronCheck(checkID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: CheckChange) => read(api().PATCH('/v1/cron/checks/{checkID}', { params: { path: { checkID } }, body })),
    onSuccess: (check) => {
      queryClient.setQueryData(['cron-checks', 'one', checkID], check);
      return queryClient.invalidateQueries({ queryKey: ['cron-checks'] });
    },
  });
}

/** A new check-in token: the answer carries the new ping URL; the old one answers 404 from now on. */
export function useRotateCronToken(checkID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().POST('/v1/cron/checks/{checkID}/rotate', { params: { path: { checkID } } })),
    onSuccess: (check) => {
      queryClient.setQueryData(['cron-checks', 'one', checkID], check);
      return queryClient.invalidateQueries({ queryKey: ['cron-checks'] });
    },
  });
}

export function useDeleteCronCheck(checkID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().DELETE('/v1/cron/checks/{checkID}', { params: { path: { checkID } } })),
    // the lists read again when next shown; the deleted check's own page is left, not read again
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['cron-checks'], refetchType: 'none' }),
  });
}

// ---------------------------------------------------------------------------------------------------
// Uptime monitors

export const useUptimeMonitors = (filters: MonitorFilters, cursor: string | undefined) =>
  useQuery({
    queryKey: ['uptime-monitors', filters, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/uptime/monitors', { params: { query: { ...filters, limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    refetchInterval: LIST_REFRESH_MS,
  });

export const useUptimeMonitor = (monitorID: string) =>
  useQuery({
    queryKey: ['uptime-monitors', 'one', monitorID],
    queryFn: ({ signal }) => read(api().GET('/v1/uptime/monitors/{monitorID}', { params: { path: { monitorID } }, signal })),
    refetchInterval: ONE_REFRESH_MS,
  });

/** The monitor's probe results over the window, read again when `version` (its last probe and state) changes; not before the monitor has loaded (`version` empty). */
export const useProbeResults = (monitorID: string, window: TimeWindow, version: string) =>
  useQuery({
    queryKey: ['uptime-monitors', 'one', monitorID, 'checks', window, version],
    queryFn: ({ signal }) =>
      historyOf(
        window,
        (cursor) => read(api().GET('/v1/uptime/monitors/{monitorID}/checks', { params: { path: { monitorID }, query: { limit: HISTORY_PAGE, cursor } }, signal })),
        (probe) => probe.checked_at,
      ),
    enabled: version !== '',
    placeholderData: keepPreviousData,
    refetchInterval: HISTORY_REFRESH_MS,
  });

export function useCreateMonitor() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: NewMonitor) => read(api().POST('/v1/uptime/monitors', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['uptime-monitors'] }),
  });
}

/** Edit, pause or resume: the answer is the monitor as it now is. */
export function useUpdateMonitor(monitorID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: MonitorChange) => read(api().PATCH('/v1/uptime/monitors/{monitorID}', { params: { path: { monitorID } }, body })),
    onSuccess: (monitor) => {
      queryClient.setQueryData(['uptime-monitors', 'one', monitorID], monitor);
      return queryClient.invalidateQueries({ queryKey: ['uptime-monitors'] });
    },
  });
}

export function useDeleteMonitor(monitorID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().DELETE('/v1/uptime/monitors/{monitorID}', { params: { path: { monitorID } } })),
    // the lists read again when next shown; the deleted monitor's own page is left, not read again
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['uptime-monitors'], refetchType: 'none' }),
  });
}
