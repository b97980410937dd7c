import { z } from 'zod';
import { accountJson, inviteBody, inviteJson, memberJson, roleBody, tokenParams } from '../../shared/features/accounts/schemas.js';
import { acceptInvite, changeMemberRole, inviteMember, listMembers, removeMember } from '../../shared/features/accounts/service.js';
import { pageQuery } from '../../shared/paging.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

const memberParams = z.object({ memberID: z.string() });

export const memberRoutes = ({ config, mailer }: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/v1/members',
    tag: 'Account',
    summary: 'Organization members and pending invites (never their tokens).',
    access: 'member',
    query: z.object(pageQuery),
    response: listOf(memberJson),
    handler: ({ principal, query }) => listMembers(principal.orgId, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/members',
    tag: 'Account',
    summary:
      'Invite an email with a role. The answer shows the invite token and its dashboard URL once (and mails the URL when SMTP_URL is set); only that token joins the organization, within 7 days.',
    access: 'admin',
    body: inviteBody,
    status: 201,
    response: inviteJson,
    handler: async ({ principal, body, req }) => {
      const { invite, mailError } = await inviteMember(principal, body, req.ip, { config, mailer });
      if (mailError) req.log.warn({ err: mailError }, 'invite mail not sent');
      return invite;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/invites/{token}/accept',
    tag: 'Account',
    summary:
      "Accept an invite of the signed-in user's own address by its token (session only); the session moves to the joined organization. Unknown, used, expired, withdrawn or another address's token: 404.",
    access: 'member',
    params: tokenParams,
    response: accountJson,
    errors: { 403: 'forbidden: called with an API key (accepting is the person’s own act)', 404: 'not_found: unknown, used, expired or withdrawn token, or one for another address' },
    handler: ({ principal, params }) => acceptInvite(principal, params.token),
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
    summary: 'Remove a member (ending their sessions) or withdraw an invite (its token stops working). The last owner cannot be removed.',
    access: 'admin',
    params: memberParams,
    status: 204,
    handler: ({ principal, params, req }) => removeMember(principal, params.memberID, req.ip),
  }),
];
