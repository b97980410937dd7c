import { z } from 'zod';
import { me } from '../../shared/features/accounts/service.js';
import { AppError } from '../../shared/errors.js';
import { findProjectBySlug, listProjectsOf } from '../../shared/features/projects/service.js';
import type { ProjectDoc } from '../../shared/features/projects/model.js';
import {
  connectedRepositories,
  createdAt,
  declareRelease,
  deleteDeclaredRelease,
  deployRelease,
  knownRelease,
  knownReleases,
  projectsBySlug,
  updateRelease,
  type KnownRelease,
  type ReleaseChanges,
} from '../../shared/features/releases/declared.js';
import type { DeploymentDoc } from '../../shared/features/deployments/model.js';
import { hasRole, type Role } from '../../shared/principal.js';
import { sentryRoute, type SentryOrganization } from './routing.js';

/**
 * Sentry's organisation, project, repository, release and deploy routes that sentry-cli and the bundler
 * plugins call, translated to Sluice's projects, integrations, declared releases and deployments.
 */

const isoDate = (date: Date | null | undefined) => date?.toISOString() ?? null;

/** What a Sentry auth token of the same reach would carry, so the tools' scope checks read true. */
const scopesOf = (role: Role) => [
  'org:read',
  'project:read',
  'project:releases',
  'event:read',
  ...(hasRole(role, 'admin') ? ['project:write', 'project:admin', 'org:write'] : []),
  ...(hasRole(role, 'owner') ? ['org:admin'] : []),
];

const organizationJson = (org: SentryOrganization) => ({
  id: org._id.toHexString(),
  slug: org.slug,
  name: org.name,
  dateCreated: org.createdAt.toISOString(),
  status: { id: 'active', name: 'active' },
  features: [],
});

const projectJson = (project: ProjectDoc) => ({
  id: project._id.toHexString(),
  slug: project.slug,
  name: project.name,
  platform: project.platform ?? null,
  dateCreated: project.createdAt.toISOString(),
  status: 'active',
  isMember: true,
  hasAccess: true,
  features: [],
});

const deployJson = (deployment: DeploymentDoc) => ({
  id: deployment._id.toHexString(),
  environment: deployment.environment,
  dateStarted: null,
  dateFinished: deployment.deployedAt.toISOString(),
  name: null,
  url: deployment.url ?? null,
});

function releaseJson(release: KnownRelease) {
  const refs = release.declared?.refs ?? [];
  const lastDeploy = release.deployments.at(-1);
  return {
    version: release.version,
    shortVersion: release.version,
    ref: null,
    url: release.declared?.url ?? null,
    status: 'open',
    dateCreated: createdAt(release).toISOString(),
    dateStarted: isoDate(release.declared?.dateStarted),
    dateReleased: isoDate(release.declared?.dateReleased),
    firstEvent: isoDate(release.firstSeen),
    lastEvent: isoDate(release.lastSeen),
    newGroups: release.newIssues,
    commitCount: refs.length,
    lastCommit: refs[0] ? { id: refs[0].commit, repository: { name: refs[0].repository } } : null,
    deployCount: release.deployments.length,
    lastDeploy: lastDeploy ? deployJson(lastDeploy) : null,
    authors: [],
    projects: release.projects.map((project) => ({ id: project._id.toHexString(), slug: project.slug, name: project.name, platform: project.platform ?? null })),
  };
}

/** Sentry refuses versions it could not put in a URL path segment. */
const version = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .refine((value) => value !== '.' && value !== '..' && !/[\s/\\]/.test(value), 'a release version has no whitespace or slashes and is not "." or ".."');
const optionalDate = z.iso.datetime({ offset: true }).nullish();
const refs = z.array(z.object({ repository: z.string().trim().min(1).max(300), commit: z.string().trim().min(1).max(200), previousCommit: z.string().max(200).nullish() })).max(50);

const releaseFields = {
  projects: z.array(z.string().max(100)).max(100).optional(),
  url: z.string().max(2048).nullish(),
  dateStarted: optionalDate,
  dateReleased: optionalDate,
  refs: refs.optional(),
};
const createReleaseBody = z.object({ version, ...releaseFields });
const updateReleaseBody = z.object(releaseFields);
const deployBody = z.object({
  environment: z.string().trim().min(1).max(64),
  name: z.string().max(200).nullish(),
  url: z.string().max(2048).nullish(),
  dateStarted: optionalDate,
  dateFinished: optionalDate,
  projects: z.array(z.string().max(100)).max(100).optional(),
});

const orgParams = z.object({ org: z.string() });
const projectParams = orgParams.extend({ project: z.string() });
const releaseParams = orgParams.extend({ version: z.string().max(200) });
const projectReleaseParams = projectParams.extend({ version: z.string().max(200) });

const dateOrNull = (value: string | null | undefined) => (value === undefined ? undefined : value === null ? null : new Date(value));

/** A release body's fields as a change: projects by slug (and the one in the path), dates as dates. */
async function changesOf(orgId: SentryOrganization['_id'], body: z.infer<typeof updateReleaseBody>, pathProject?: string): Promise<ReleaseChanges> {
  const slugs = [...(body.projects ?? []), ...(pathProject ? [pathProject] : [])];
  const projects = slugs.length ? await projectsBySlug(orgId, slugs) : [];
  return {
    ...(projects.length && { projectIds: projects.map((project) => project._id) }),
    ...(body.refs !== undefined && { refs: body.refs.map((ref) => ({ repository: ref.repository, commit: ref.commit, previousCommit: ref.previousCommit ?? null })) }),
    ...(body.url !== undefined && { url: body.url }),
    ...(body.dateStarted !== undefined && { dateStarted: dateOrNull(body.dateStarted) }),
    ...(body.dateReleased !== undefined && { dateReleased: dateOrNull(body.dateReleased) }),
  };
}

const notFoundError = () => new AppError('not_found', 'The requested resource does not exist');

/** The project a project-scoped path names; unknown is a 404, as Sentry answers. */
async function pathProject(orgId: SentryOrganization['_id'], slug: string): Promise<ProjectDoc> {
  const project = await findProjectBySlug(orgId, slug);
  if (!project) throw notFoundError();
  return project;
}

/** A release read through a project-scoped path must belong to that project. */
async function releaseOfProject(orgId: SentryOrganization['_id'], projectSlug: string, versionName: string) {
  const project = await pathProject(orgId, projectSlug);
  const release = await knownRelease(orgId, versionName);
  if (!release.projects.some((candidate) => candidate._id.equals(project._id))) throw notFoundError();
  return release;
}

export const sentryRoutes = () => [
  sentryRoute({
    method: 'get',
    path: '/',
    access: 'member',
    handler: async ({ principal }) => {
      const { user } = await me(principal);
      return { body: { version: '0', auth: { scopes: scopesOf(principal.role) }, user: { id: user.id, email: user.email, name: user.name } } };
    },
  }),
  sentryRoute({ method: 'get', path: '/organizations', access: 'member', handler: async ({ organization }) => ({ body: [organizationJson(organization)] }) }),
  sentryRoute({ method: 'get', path: '/organizations/:org', access: 'member', params: orgParams, handler: async ({ organization }) => ({ body: organizationJson(organization) }) }),
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/projects',
    access: 'member',
    params: orgParams,
    handler: async ({ organization }) => ({ body: (await listProjectsOf(organization._id)).map(projectJson) }),
  }),
  sentryRoute({
    method: 'get',
    path: '/projects/:org/:project',
    access: 'member',
    params: projectParams,
    handler: async ({ organization, params }) => ({ body: projectJson(await pathProject(organization._id, params.project)) }),
  }),
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/repos',
    access: 'member',
    params: orgParams,
    handler: async ({ organization }) => ({
      body: (await connectedRepositories(organization._id)).map((integration) => ({
        id: integration._id.toHexString(),
        name: integration.repository,
        url: integration.webUrl,
        provider: { id: `integrations:${integration.provider}`, name: integration.provider === 'github' ? 'GitHub' : integration.provider === 'gitlab' ? 'GitLab' : integration.provider },
        status: 'active',
        dateCreated: integration.createdAt.toISOString(),
      })),
    }),
  }),

  // --- releases, organisation-scoped (sentry-cli 3) and project-scoped (sentry-cli 2, the bundler plugins) ---
  ...(['/organizations/:org/releases', '/projects/:org/:project/releases'] as const).flatMap((path) => [
    sentryRoute({
      method: 'post',
      path,
      access: 'member',
      params: projectParams.partial({ project: true }),
      body: createReleaseBody,
      handler: async ({ principal, organization, params, body, req }) => {
        const { created, release } = await declareRelease(principal, body.version, await changesOf(organization._id, body, params.project), req.ip);
        // 208 for a release that existed: what sentry-cli's set-commits expects
        return { status: created ? 201 : 208, body: releaseJson(release) };
      },
    }),
    sentryRoute({
      method: 'get',
      path,
      access: 'member',
      params: projectParams.partial({ project: true }),
      query: z.object({ project: z.string().optional() }),
      handler: async ({ organization, params, query }) => {
        const slug = params.project ?? query.project;
        const project = slug ? await pathProject(organization._id, slug) : undefined;
        return { body: (await knownReleases(organization._id, project?._id)).map(releaseJson) };
      },
    }),
  ]),
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/releases/:version',
    access: 'member',
    params: releaseParams,
    handler: async ({ organization, params }) => ({ body: releaseJson(await knownRelease(organization._id, params.version)) }),
  }),
  sentryRoute({
    method: 'get',
    path: '/projects/:org/:project/releases/:version',
    access: 'member',
    params: projectReleaseParams,
    handler: async ({ organization, params }) => ({ body: releaseJson(await releaseOfProject(organization._id, params.project, params.version)) }),
  }),
  ...(['/organizations/:org/releases/:version', '/projects/:org/:project/releases/:version'] as const).flatMap((path) => [
    sentryRoute({
      method: 'put',
      path,
      access: 'member',
      params: releaseParams.extend({ project: z.string().optional() }),
      body: updateReleaseBody,
      handler: async ({ principal, organization, params, body, req }) => ({
        body: releaseJson(await updateRelease(principal, params.version, await changesOf(organization._id, body, params.project), req.ip)),
      }),
    }),
    sentryRoute({
      method: 'delete',
      path,
      access: 'admin',
      params: releaseParams.extend({ project: z.string().optional() }),
      handler: async ({ principal, organization, params, req }) => {
        if (params.project) await releaseOfProject(organization._id, params.project, params.version);
        await deleteDeclaredRelease(principal, params.version, req.ip);
        return { status: 204 };
      },
    }),
  ]),
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/releases/:version/commits',
    access: 'member',
    params: releaseParams,
    handler: async ({ organization, params }) => {
      const release = await knownRelease(organization._id, params.version);
      return { body: (release.declared?.refs ?? []).map((ref) => ({ id: ref.commit, repository: { name: ref.repository }, message: null, dateCreated: null })) };
    },
  }),
  sentryRoute({
    method: 'get',
    path: '/organizations/:org/releases/:version/deploys',
    access: 'member',
    params: releaseParams,
    handler: async ({ organization, params }) => ({ body: (await knownRelease(organization._id, params.version)).deployments.map(deployJson).reverse() }),
  }),
  sentryRoute({
    method: 'post',
    path: '/organizations/:org/releases/:version/deploys',
    access: 'member',
    params: releaseParams,
    body: deployBody,
    handler: async ({ principal, organization, params, body, req }) => {
      const projects = body.projects?.length ? await projectsBySlug(organization._id, body.projects) : undefined;
      const deployments = await deployRelease(
        principal,
        params.version,
        { environment: body.environment, url: body.url, dateStarted: dateOrNull(body.dateStarted), dateFinished: dateOrNull(body.dateFinished), projectIds: projects?.map((project) => project._id) },
        req.ip,
      );
      const first = deployments[0]!;
      return {
        status: 201,
        body: { id: first.id, environment: first.environment, dateStarted: body.dateStarted ?? null, dateFinished: first.deployed_at, name: body.name ?? null, url: first.url },
      };
    },
  }),
];
