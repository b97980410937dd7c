import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, read, type AnswerOf } from '../../api/client';

export type ReplaySummary = AnswerOf<'/v1/projects/{projectID}/replay'>['data'][number];
export type ReplayRecording = AnswerOf<'/v1/projects/{projectID}/replay/{sessionID}'>;
export type ReplaySegment = ReplayRecording['segments'][number];

/** Who was recorded, as the SDK named them. */
export const userOf = (replay: ReplaySummary) => replay.user?.email ?? replay.user?.username ?? replay.user?.id ?? replay.user?.ip_address ?? 'anonymous';

/** A page of the project's recorded sessions, newest first (metadata: members may list them). */
export const useReplays = (projectID: string | undefined, cursor: string | undefined) =>
  useQuery({
    queryKey: ['replays', projectID, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/projects/{projectID}/replay', { params: { path: { projectID: projectID! }, query: { limit: 50, cursor } }, signal })),
    enabled: Boolean(projectID),
    placeholderData: keepPreviousData,
  });

/**
 * The whole recording: its summary and every segment, read a page at a time. Each page is a viewing the API
 * writes to the audit log, so the recording is read once per visit, never again in the background.
 */
export const useRecording = (projectID: string, sessionID: string, enabled: boolean) =>
  useQuery({
    queryKey: ['replay', projectID, sessionID],
    queryFn: async ({ signal }) => {
      const path = { projectID, sessionID };
      const first = await read(api().GET('/v1/projects/{projectID}/replay/{sessionID}', { params: { path, query: { limit: 100 } }, signal }));
      const segments = [...first.segments];
      for (let cursor = first.next_cursor; cursor; ) {
        const page = await read(api().GET('/v1/projects/{projectID}/replay/{sessionID}', { params: { path, query: { limit: 100, cursor } }, signal }));
        segments.push(...page.segments);
        cursor = page.next_cursor;
      }
      return { ...first, segments, next_cursor: null };
    },
    enabled,
    staleTime: Infinity,
    gcTime: 0,
    refetchOnWindowFocus: false,
    refetchOnReconnect: false,
  });
