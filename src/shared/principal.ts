import type { Types } from 'mongoose';

export const roles = ['member', 'admin', 'owner'] as const;
export type Role = (typeof roles)[number];

export const roleRank = (role: Role) => roles.indexOf(role);
export const hasRole = (role: Role, needed: Role) => roleRank(role) >= roleRank(needed);

/** Who is making a request, resolved from exactly one credential. */
export type Principal =
  | { kind: 'session'; orgId: Types.ObjectId; userId: Types.ObjectId; role: Role; sessionId: Types.ObjectId }
  | { kind: 'api_key'; orgId: Types.ObjectId; userId: Types.ObjectId; role: Role; keyId: Types.ObjectId }
  | { kind: 'dsn'; orgId: Types.ObjectId; projectId: Types.ObjectId; keyId: Types.ObjectId };

export type MemberPrincipal = Exclude<Principal, { kind: 'dsn' }>;

/** The actor recorded in the audit trail for a principal. */
export function actorOf(principal: Principal) {
  switch (principal.kind) {
    case 'session':
      return { type: 'user' as const, id: principal.userId };
    case 'api_key':
      return { type: 'api_key' as const, id: principal.keyId };
    case 'dsn':
      return { type: 'dsn' as const, id: principal.keyId };
  }
}
