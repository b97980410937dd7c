import { z } from 'zod';
import { integrationJson, putIntegrationBody } from '../../shared/features/integrations/schemas.js';
import { deleteIntegration, listIntegrations, putIntegration } from '../../shared/features/integrations/service.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

const providerParams = z.object({ projectID: z.string(), provider: z.string() });

export const integrationRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}/integrations',
    tag: 'Projects',
    summary: "The project's code-host integrations (the token is never shown: `token_set` and its last four characters).",
    access: 'admin',
    params: z.object({ projectID: z.string() }),
    response: listOf(integrationJson),
    handler: ({ principal, params }) => listIntegrations(principal.orgId, params.projectID),
  }),
  defineRoute({
    method: 'put',
    path: '/v1/projects/{projectID}/integrations/{provider}',
    tag: 'Projects',
    summary: 'Connect the project to its repository on `github` or `gitlab`: the token and repository are verified with the provider first; the token is kept encrypted.',
    access: 'admin',
    params: providerParams,
    body: putIntegrationBody,
    response: integrationJson,
    handler: ({ principal, params, body, req }) => putIntegration(principal, params.projectID, params.provider, body, deps, req.ip),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/projects/{projectID}/integrations/{provider}',
    tag: 'Projects',
    summary: 'Disconnect a provider; its token is deleted.',
    access: 'admin',
    params: providerParams,
    status: 204,
    handler: ({ principal, params, req }) => deleteIntegration(principal, params.projectID, params.provider, req.ip),
  }),
];
