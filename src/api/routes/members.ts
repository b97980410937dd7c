import { z } from 'zod';
import { inviteBody, memberJson, roleBody } from '../../shared/features/accounts/schemas.js';
import { changeMemberRole, inviteMember, listMembers, removeMember } from '../../shared/features/accounts/service.js';
import { pageQuery } from '../../shared/paging.js';
import { defineRoute, listOf } from '../routing.js';

const memberParams = z.object({ memberID: z.string() });

export const memberRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/members',
    tag: 'Account',
    summary: 'Organization members and pending invites.',
    access: 'member',
    query: z.object(pageQuery),
    response: listOf(memberJson),
    handler: ({ principal, query }) => listMembers(principal.orgId, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/members',
    tag: 'Account',
    summary: 'Invite an email; registering (or signing in) with it joins this organization with the role.',
    access: 'admin',
    body: inviteBody,
    status: 201,
    response: memberJson,
    handler: ({ principal, body, req }) => inviteMember(principal, body, req.ip),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/members/{memberID}',
    tag: 'Account',
    summary: "Change a member's role. The last owner cannot be demoted.",
    access: 'admin',
    params: memberParams,
    body: roleBody,
    response: memberJson,
    handler: ({ principal, params, body, req }) => changeMemberRole(principal, params.memberID, body.role, req.ip),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/members/{memberID}',
    tag: 'Account',
    summary: 'Remove a member (ending their sessions) or withdraw an invite. The last owner cannot be removed.',
    access: 'admin',
    params: memberParams,
    status: 204,
    handler: ({ principal, params, req }) => removeMember(principal, params.memberID, req.ip),
  }),
];
