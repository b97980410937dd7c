import { z } from 'zod';
import { createDeploymentBody, deploymentJson, healthJson, healthQuery, listDeploymentsQuery, listReleasesQuery, releaseJson } from '../../shared/features/deployments/schemas.js';
import { createDeployment, getDeployment, getDeploymentHealth, listDeployments } from '../../shared/features/deployments/service.js';
import { listReleases } from '../../shared/features/releases/service.js';
import { defineRoute, listOf } from '../routing.js';

const deploymentParams = z.object({ deploymentID: z.string() });

export const deploymentRoutes = () => [
  defineRoute({
    method: 'post',
    path: '/v1/deployments',
    tag: 'Deployments',
    summary: 'Record a deployment (from CI): the release version the SDKs send, its environment, and optionally the commit, repository and time.',
    access: 'member',
    body: createDeploymentBody,
    status: 201,
    response: deploymentJson,
    handler: ({ principal, body, req }) => createDeployment(principal, body, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/deployments',
    tag: 'Deployments',
    summary: 'Deployments, newest first; filter by project, environment, version and a window on the deployment time.',
    access: 'member',
    query: listDeploymentsQuery,
    response: listOf(deploymentJson),
    handler: ({ principal, query }) => listDeployments(principal.orgId, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/deployments/{deploymentID}',
    tag: 'Deployments',
    summary: 'One deployment.',
    access: 'member',
    params: deploymentParams,
    response: deploymentJson,
    handler: ({ principal, params }) => getDeployment(principal.orgId, params.deploymentID),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/deployments/{deploymentID}/health',
    tag: 'Deployments',
    summary: 'Whether this deployment made things worse, with the arithmetic: error rate, p95 latency and crash-free sessions in equal windows before and after it, each with its test, statistic and p-value, new issues, the verdict and its reasons.',
    access: 'member',
    params: deploymentParams,
    query: healthQuery,
    response: healthJson,
    handler: ({ principal, params, query }) => getDeploymentHealth(principal.orgId, params.deploymentID, query.window),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/releases',
    tag: 'Deployments',
    summary: 'Releases, derived from deployments and the release of stored telemetry: deployments, new issues, error events, crash-free rate and the latest verdict.',
    access: 'member',
    query: listReleasesQuery,
    response: listOf(releaseJson),
    handler: ({ principal, query }) => listReleases(principal.orgId, query),
  }),
];
