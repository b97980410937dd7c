import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, read, type AnswerOf, type BodyOf } from '../../api/client';

export type SsoDomain = AnswerOf<'/v1/settings/sso/domains'>['data'][number];

/**
 * The organisation's OpenID Connect connection; 404 while none is set up (its message names the redirect URI),
 * 501 sso_unavailable while the server has no API_PUBLIC_URL, which asking again does not change.
 */
export const useSsoConnection = () =>
  useQuery({
    queryKey: ['sso', 'connection'],
    queryFn: ({ signal }) => read(api().GET('/v1/settings/sso', { signal })),
    retry: (failures, error) => !(error instanceof ApiError && ((error.status >= 400 && error.status < 500) || error.code === 'sso_unavailable')) && failures < 2,
  });

export function usePutSsoConnection() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/settings/sso', 'put'>) => read(api().PUT('/v1/settings/sso', { body })),
    onSuccess: (connection) => queryClient.setQueryData(['sso', 'connection'], connection),
  });
}

export function useDeleteSsoConnection() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().DELETE('/v1/settings/sso')),
    onSuccess: () => queryClient.resetQueries({ queryKey: ['sso', 'connection'] }),
  });
}

export const useSsoDomains = () =>
  useQuery({ queryKey: ['sso', 'domains'], queryFn: ({ signal }) => read(api().GET('/v1/settings/sso/domains', { signal })) });

/** Claims a domain: the answer is the TXT record to publish. */
export function useClaimDomain() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (domain: string) => read(api().POST('/v1/settings/sso/domains', { body: { domain } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['sso', 'domains'] }),
  });
}

/** Asks the API to look the TXT record up now. */
export function useVerifyDomain() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (domain: string) => read(api().POST('/v1/settings/sso/domains/verify', { body: { domain } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['sso', 'domains'] }),
  });
}

export function useWithdrawDomain() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (domain: string) => read(api().DELETE('/v1/settings/sso/domains/{domain}', { params: { path: { domain } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['sso', 'domains'] }),
  });
}
