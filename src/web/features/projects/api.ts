import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf } from '../../api/client';

export const useProjects = () => useQuery({ queryKey: ['projects'], queryFn: ({ signal }) => read(api().GET('/v1/projects', { signal })) });

export const useProjectDsns = (projectID: string | undefined) =>
  useQuery({
    queryKey: ['projects', projectID, 'dsns'],
    queryFn: ({ signal }) => read(api().GET('/v1/projects/{projectID}/dsns', { params: { path: { projectID: projectID! } }, signal })),
    enabled: Boolean(projectID),
  });

export function useCreateProject() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/projects', 'post'>) => read(api().POST('/v1/projects', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects'] }),
  });
}

export type Project = AnswerOf<'/v1/projects/{projectID}'>;
export type Dsn = AnswerOf<'/v1/projects/{projectID}/dsns'>['data'][number];

/** Issues another DSN for the project, with an optional label ("staging", "mobile app"). */
export function useIssueDsn(projectID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/projects/{projectID}/dsns', 'post'>) => read(api().POST('/v1/projects/{projectID}/dsns', { params: { path: { projectID } }, body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'dsns'] }),
  });
}

/** Revokes a DSN: ingest refuses it within seconds. */
export function useRevokeDsn(projectID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (keyID: string) => read(api().DELETE('/v1/projects/{projectID}/dsns/{keyID}', { params: { path: { projectID, keyID } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'dsns'] }),
  });
}

/** Turns session-replay capture on or off; the project list shows the new switch at once. */
export function useSetReplayCapture(projectID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (enabled: boolean) => read(api().PUT('/v1/projects/{projectID}/session-replay', { params: { path: { projectID } }, body: { enabled } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects'] }),
  });
}
