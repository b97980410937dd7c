import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, api, read, type BodyOf } from '../../api/client';

/** The signed-in user, organisation and role; a 401 means nobody is signed in. */
export const useMe = () => useQuery({ queryKey: ['me'], queryFn: ({ signal }) => read(api().GET('/v1/me', { signal })), retry: false, staleTime: 60_000 });

/**
 * The signed-in account, or null when nobody is signed in: for the pages a mailed link opens, which work
 * either way. The 401 is an answer here, not an error, so it does not send the browser to the login page.
 */
export const useOptionalMe = () =>
  useQuery({
    queryKey: ['me', 'optional'],
    queryFn: async ({ signal }) => {
      try {
        return await read(api().GET('/v1/me', { signal }));
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return null;
        throw error;
      }
    },
    retry: false,
  });

export function useLogin() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/auth/login', 'post'>) => read(api().POST('/v1/auth/login', { body })),
    onSuccess: () => queryClient.invalidateQueries(),
  });
}

export const useRegister = () => useMutation({ mutationFn: (body: BodyOf<'/v1/auth/register', 'post'>) => read(api().POST('/v1/auth/register', { body })) });

export const useSsoStart = () => useMutation({ mutationFn: (body: BodyOf<'/v1/auth/sso/start', 'post'>) => read(api().POST('/v1/auth/sso/start', { body })) });

export function useLogout() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().POST('/v1/auth/logout')),
    onSettled: () => queryClient.clear(),
  });
}

/** Changes the signed-in person's password; every other session of theirs ends, this one stays. */
export const useChangePassword = () => useMutation({ mutationFn: (body: BodyOf<'/v1/auth/password', 'post'>) => read(api().POST('/v1/auth/password', { body })) });

/** Ends every session of the signed-in person, this one included. */
export function useLogoutEverywhere() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().POST('/v1/auth/logout-all')),
    onSuccess: () => queryClient.clear(),
  });
}

/** Asks for the reset mail; the API answers the same whether or not the address has an account. */
export const useRequestPasswordReset = () =>
  useMutation({ mutationFn: (body: BodyOf<'/v1/auth/password-reset', 'post'>) => read(api().POST('/v1/auth/password-reset', { body })) });

/** Sets a new password with a mailed link's token; every session of the account ends, so nothing cached stays. */
export function useResetPassword(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/auth/password-reset/{token}', 'post'>) => read(api().POST('/v1/auth/password-reset/{token}', { params: { path: { token } }, body })),
    onSuccess: () => queryClient.clear(),
  });
}

/** Accepts an invite as the signed-in user; the session moves to the joined organisation, so every read is stale. */
export function useAcceptInvite(token: string) {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: () => read(api().POST('/v1/invites/{token}/accept', { params: { path: { token } } })),
    onSuccess: () => queryClient.invalidateQueries(),
  });
}
