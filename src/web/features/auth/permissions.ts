import { useMe } from './api';

export type Role = 'member' | 'admin' | 'owner';

const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

/** The signed-in person's role in the organisation, once `/v1/me` has answered. */
export const useRole = (): Role | undefined => useMe().data?.role;

/**
 * Whether the signed-in person's role reaches `needed` (the route's `access` in the OpenAPI document):
 * actions a role may not take are hidden or disabled with this, and the API's refusal is still shown if one happens.
 */
export function useCan(needed: Role): boolean {
  const role = useRole();
  return role !== undefined && RANK[role] >= RANK[needed];
}

/** What each role may do, in the words the members page and disabled actions use. */
export const ROLE_ABILITIES: Record<Role, string> = {
  member: 'reads every view, changes issue status, manages cron checks, uptime monitors and dashboards',
  admin: 'also manages projects, DSNs, API keys, members, alert destinations, digests, integrations and settings',
  owner: 'also manages single sign-on and billing, watches session replays, and can transfer ownership',
};
