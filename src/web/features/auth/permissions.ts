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

/** The roles from lowest to highest. */
export const ROLES: readonly Role[] = ['member', 'admin', 'owner'];

/** The roles a person with `role` may grant (to an invite, a member or an API key): none above their own. */
export const rolesUpTo = (role: Role | undefined): Role[] => (role === undefined ? [] : ROLES.filter((candidate) => RANK[candidate] <= RANK[role]));

/**
 * What each role may do, as the API's routes allow it (their `access` and the members rules), in the words
 * the members page and disabled actions use.
 */
export const ROLE_ABILITIES: Record<Role, string> = {
  member:
    'reads every view, the members and the settings (not the API keys, audit log, alert destinations, digest schedule, integrations or single sign-on); resolves, ignores and reopens issues; manages cron checks, uptime monitors, dashboards and deployments; uploads source maps; starts AI investigations',
  admin:
    'also manages projects, DSNs, the session-replay switch, source maps, API keys, alert destinations, the digest schedule, integrations, single sign-on, checkout and the organization settings; invites, changes and removes admins and members; reads the API keys and the audit log',
  owner: 'also watches session replays, and grants, changes and removes the owner role (an organization always keeps at least one owner)',
};
