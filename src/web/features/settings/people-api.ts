import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, read, type AnswerOf, type BodyOf } from '../../api/client';

export type Member = AnswerOf<'/v1/members'>['data'][number];
export type ApiKey = AnswerOf<'/v1/api-keys'>['data'][number];
export type AuditEntry = AnswerOf<'/v1/audit-log'>['data'][number];
export type OrganizationSettings = AnswerOf<'/v1/settings'>;

/** The largest page the API gives: enough to name every member and key an audit entry or key list mentions. */
const DIRECTORY_LIMIT = 200;

/** A page of members and pending invites, oldest first. */
export const useMembers = (cursor: string | undefined) =>
  useQuery({
    queryKey: ['members', 'page', cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/members', { params: { query: { limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
  });

/** Members by user id and by membership id, to name the actors and targets other lists give as ids. */
export const useMemberDirectory = () =>
  useQuery({
    queryKey: ['members', 'directory'],
    queryFn: ({ signal }) => read(api().GET('/v1/members', { params: { query: { limit: DIRECTORY_LIMIT } }, signal })),
    select: (page) => new Map(page.data.flatMap((member) => [[member.id, member] as const, ...(member.user_id ? [[member.user_id, member] as const] : [])])),
  });

export function useInviteMember() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/members', 'post'>) => read(api().POST('/v1/members', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['members'] }),
  });
}

/** A role change; the signed-in person's own role may be the one changed, so `me` is read again too. */
export function useChangeMemberRole() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: ({ memberID, role }: { memberID: string } & BodyOf<'/v1/members/{memberID}', 'patch'>) =>
      read(api().PATCH('/v1/members/{memberID}', { params: { path: { memberID } }, body: { role } })),
    onSuccess: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['members'] }), queryClient.invalidateQueries({ queryKey: ['me'] })]),
  });
}

/** Removes a member (their sessions end and their API keys are revoked) or withdraws an invite. */
export function useRemoveMember() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (memberID: string) => read(api().DELETE('/v1/members/{memberID}', { params: { path: { memberID } } })),
    onSuccess: () => Promise.all([queryClient.invalidateQueries({ queryKey: ['members'] }), queryClient.invalidateQueries({ queryKey: ['api-keys'] })]),
  });
}

export const useOrganizationSettings = () =>
  useQuery({ queryKey: ['settings'], queryFn: ({ signal }) => read(api().GET('/v1/settings', { signal })) });

/** Saves the organisation's settings; its name is also in the top bar (`me`). */
export function useUpdateOrganizationSettings() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/settings', 'patch'>) => read(api().PATCH('/v1/settings', { body })),
    onSuccess: (settings) => {
      queryClient.setQueryData(['settings'], settings);
      return queryClient.invalidateQueries({ queryKey: ['me'] });
    },
  });
}

/** A page of live API keys; admin only, so the page asks only when the role may read them. */
export const useApiKeys = (cursor: string | undefined, enabled: boolean) =>
  useQuery({
    queryKey: ['api-keys', cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/api-keys', { params: { query: { limit: 50, cursor } }, signal })),
    placeholderData: keepPreviousData,
    enabled,
  });

/** Every live key by id (the audit log names the keys that acted). */
export const useApiKeyDirectory = (enabled: boolean) =>
  useQuery({
    queryKey: ['api-keys', 'directory'],
    queryFn: ({ signal }) => read(api().GET('/v1/api-keys', { params: { query: { limit: DIRECTORY_LIMIT } }, signal })),
    select: (page) => new Map(page.data.map((key) => [key.id, key])),
    enabled,
  });

export function useCreateApiKey() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: BodyOf<'/v1/api-keys', 'post'>) => read(api().POST('/v1/api-keys', { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['api-keys'] }),
  });
}

export function useRevokeApiKey() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (keyID: string) => read(api().DELETE('/v1/api-keys/{keyID}', { params: { path: { keyID } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['api-keys'] }),
  });
}

/** A page of the audit trail, newest first, narrowed to one action when given; admin only. */
export const useAuditLog = (action: string | undefined, cursor: string | undefined, enabled: boolean) =>
  useQuery({
    queryKey: ['audit-log', action, cursor],
    queryFn: ({ signal }) => read(api().GET('/v1/audit-log', { params: { query: { limit: 50, action, cursor } }, signal })),
    placeholderData: keepPreviousData,
    enabled,
  });
