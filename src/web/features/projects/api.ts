import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type BodyOf } from '../../api/client';

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
