import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf, type QueryOf } from '../../api/client';

export type Release = AnswerOf<'/v1/releases'>['data'][number];
export type Deployment = AnswerOf<'/v1/deployments/{deploymentID}'>;
export type Health = AnswerOf<'/v1/deployments/{deploymentID}/health'>;
export type Verdict = Health['verdict'];
export type DeploymentFilters = Pick<QueryOf<'/v1/deployments'>, 'project' | 'environment' | 'version'>;

/** A page of releases, newest activity first, narrowed to the top bar's project and environment. */
export const useReleases = (filters: Pick<QueryOf<'/v1/releases'>, 'project' | 'environment'>, cursor: string | undefined) =>
  useQuery({
    queryKey: ['releases', filters, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/releases', { params: { query: { ...filters, limit: 25, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

/** A page of deployments, newest first (every deployment time: the API reads no window without from/to). */
export const useDeployments = (filters: DeploymentFilters, cursor: string | undefined) =>
  useQuery({
    queryKey: ['deployments', filters, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/deployments', { params: { query: { ...filters, limit: 25, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

export const useDeployment = (deploymentID: string) =>
  useQuery({
    queryKey: ['deployments', 'one', deploymentID],
    queryFn: ({ signal }) => read(api().GET('/v1/deployments/{deploymentID}', { params: { path: { deploymentID } }, signal })),
  });

/** The health arithmetic over `window` minutes on each side of the deployment (the API's default is 60). */
export const useDeploymentHealth = (deploymentID: string, window: number | undefined) =>
  useQuery({
    queryKey: ['deployments', 'one', deploymentID, 'health', window],
    queryFn: ({ signal }) => read(api().GET('/v1/deployments/{deploymentID}/health', { params: { path: { deploymentID }, query: { window } }, signal })),
    placeholderData: keepPreviousData,
  });

/** Records a deployment: the release list and the deployment lists read again. */
export function useRecordDeployment() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/deployments', 'post'>) => read(api().POST('/v1/deployments', { body })),
    onSuccess: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['releases'] }), queryClient.invalidateQueries({ queryKey: ['deployments'] })]),
  });
}
