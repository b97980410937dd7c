import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';

export type Artifact = AnswerOf<'/v1/projects/{projectID}/artifacts'>['data'][number];
export type Integration = AnswerOf<'/v1/projects/{projectID}/integrations'>['data'][number];
export type Provider = Integration['provider'];
export type ArtifactFields = Pick<QueryOf<'/v1/projects/{projectID}/artifacts', 'post'>, 'name' | 'release' | 'dist'>;

/** A page of the project's source maps and other artifacts, newest first. */
export const useArtifacts = (projectID: string, cursor: string | undefined) =>
  useQuery({
    queryKey: ['projects', projectID, 'artifacts', cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/projects/{projectID}/artifacts', { params: { path: { projectID }, query: { limit: 20, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

/**
 * Uploads one file as multipart/form-data: its `file` part and the fields the API finds it by. The route
 * reads the body itself (the OpenAPI document describes no JSON body for it); openapi-fetch sends a FormData as it is.
 */
export function useUploadArtifact(projectID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ file, fields }: { file: File; fields: ArtifactFields }) => {
      const form = new FormData();
      for (const [key, value] of Object.entries(fields)) if (value) form.set(key, value);
      form.set('file', file, file.name);
      return read(api().POST('/v1/projects/{projectID}/artifacts', { params: { path: { projectID } }, body: form as never }));
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'artifacts'] }),
  });
}

export function useDeleteArtifact(projectID: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (artifactID: string) => read(api().DELETE('/v1/projects/{projectID}/artifacts/{artifactID}', { params: { path: { projectID, artifactID } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'artifacts'] }),
  });
}

/** The project's code-host connections (admin): token status only, never the token. */
export const useIntegrations = (projectID: string, enabled = true) =>
  useQuery({
    queryKey: ['projects', projectID, 'integrations'],
    queryFn: ({ signal }) => read(api().GET('/v1/projects/{projectID}/integrations', { params: { path: { projectID } }, signal })),
    enabled,
  });

/** Connects (or reconnects) a provider; the API checks the token and repository with the host first. */
export function usePutIntegration(projectID: string, provider: Provider) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/projects/{projectID}/integrations/{provider}', 'put'>) =>
      read(api().PUT('/v1/projects/{projectID}/integrations/{provider}', { params: { path: { projectID, provider } }, body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'integrations'] }),
  });
}

export function useDeleteIntegration(projectID: string, provider: Provider) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().DELETE('/v1/projects/{projectID}/integrations/{provider}', { params: { path: { projectID, provider } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['projects', projectID, 'integrations'] }),
  });
}
