import { z } from 'zod';
import { pageQuery } from '../../shared/paging.js';
import { createProjectBody, dsnJson, issueDsnBody, projectJson, replaySwitchBody, updateProjectBody } from '../../shared/features/projects/schemas.js';
import { createProject, getProject, issueDsn, listDsns, listProjects, revokeDsn, setReplayCapture, updateProject } from '../../shared/features/projects/service.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

const projectParams = z.object({ projectID: z.string() });

export const projectRoutes = ({ config }: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/v1/projects',
    tag: 'Projects',
    summary: 'List projects.',
    access: 'member',
    query: z.object(pageQuery),
    response: listOf(projectJson),
    handler: ({ principal, query }) => listProjects(principal.orgId, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/projects',
    tag: 'Projects',
    summary: 'Create a project; it gets a numeric ingest number and a first DSN.',
    access: 'admin',
    body: createProjectBody,
    status: 201,
    response: projectJson,
    handler: ({ principal, body, req }) => createProject(principal, body, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}',
    tag: 'Projects',
    summary: 'One project.',
    access: 'member',
    params: projectParams,
    response: projectJson,
    handler: ({ principal, params }) => getProject(principal.orgId, params.projectID),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/projects/{projectID}',
    tag: 'Projects',
    summary: 'Change a project: its name, platform, or the field names scrubbed from its telemetry besides the defaults (scrub_fields).',
    access: 'admin',
    params: projectParams,
    body: updateProjectBody,
    response: projectJson,
    handler: ({ principal, params, body, req }) => updateProject(principal, params.projectID, body, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/projects/{projectID}/dsns',
    tag: 'Projects',
    summary: "The project's live ingest keys, with the DSN string and OTLP settings.",
    access: 'member',
    params: projectParams,
    query: z.object(pageQuery),
    response: listOf(dsnJson),
    handler: ({ principal, params, query }) => listDsns(principal.orgId, params.projectID, config, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/projects/{projectID}/dsns',
    tag: 'Projects',
    summary: 'Issue a new DSN.',
    access: 'admin',
    params: projectParams,
    body: issueDsnBody,
    status: 201,
    response: dsnJson,
    handler: ({ principal, params, body, req }) => issueDsn(principal, params.projectID, body.label, config, req.ip),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/projects/{projectID}/dsns/{keyID}',
    tag: 'Projects',
    summary: 'Revoke a DSN; ingest refuses it within seconds.',
    access: 'admin',
    params: projectParams.extend({ keyID: z.string() }),
    status: 204,
    handler: ({ principal, params, req }) => revokeDsn(principal, params.projectID, params.keyID, req.ip),
  }),
  defineRoute({
    method: 'put',
    path: '/v1/projects/{projectID}/session-replay',
    tag: 'Projects',
    summary: 'Turn session-replay capture on or off for the project.',
    access: 'admin',
    params: projectParams,
    body: replaySwitchBody,
    response: projectJson,
    handler: ({ principal, params, body, req }) => setReplayCapture(principal, params.projectID, body.enabled, req.ip),
  }),
];
