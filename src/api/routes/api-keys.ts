import { z } from 'zod';
import { apiKeyJson, createApiKeyBody, createdApiKeyJson } from '../../shared/features/api-keys/schemas.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../shared/features/api-keys/service.js';
import { pageQuery } from '../../shared/paging.js';
import { defineRoute, listOf } from '../routing.js';

export const apiKeyRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/api-keys',
    tag: 'API keys',
    summary: 'List live API keys (prefix, role, last use; never the secret).',
    access: 'admin',
    query: z.object(pageQuery),
    response: listOf(apiKeyJson),
    handler: ({ principal, query }) => listApiKeys(principal.orgId, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/api-keys',
    tag: 'API keys',
    summary: 'Create an API key with a role no higher than your own; the secret is in this response only.',
    access: 'admin',
    body: createApiKeyBody,
    status: 201,
    response: createdApiKeyJson,
    handler: ({ principal, body, req }) => createApiKey(principal, body, req.ip),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/api-keys/{keyID}',
    tag: 'API keys',
    summary: 'Revoke an API key, at once.',
    access: 'admin',
    params: z.object({ keyID: z.string() }),
    status: 204,
    handler: ({ principal, params, req }) => revokeApiKey(principal, params.keyID, req.ip),
  }),
];
