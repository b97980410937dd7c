import type { Types } from 'mongoose';
import type { z } from 'zod';
import { codeLinks, CodeHostRefusal, providers, type CodeHosts, type Provider } from '../../clients/code-hosts.js';
import type { SecretBox } from '../../clients/secret-box.js';
import { AppError, notFound } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { auditAs } from '../audit/service.js';
import { Deployment } from '../deployments/model.js';
import { findProject } from '../projects/service.js';
import { Integration, type IntegrationDoc } from './model.js';
import type { integrationJson, putIntegrationBody } from './schemas.js';

/** `github` and `gitlab`; anything else is a route that does not exist (404). */
export function providerOf(name: string): Provider {
  if (!(providers as readonly string[]).includes(name)) throw notFound('integration provider');
  return name as Provider;
}

const integrationJsonOf = (integration: IntegrationDoc): z.infer<typeof integrationJson> => ({
  provider: integration.provider,
  repository: integration.repository,
  default_branch: integration.defaultBranch,
  repository_url: integration.webUrl,
  token_set: true,
  token_last4: integration.tokenLast4,
  verified_at: integration.verifiedAt.toISOString(),
  created_at: integration.createdAt.toISOString(),
  updated_at: integration.updatedAt.toISOString(),
});

export async function listIntegrations(orgId: Types.ObjectId, projectId: string) {
  const project = await findProject(orgId, projectId);
  const integrations = await Integration.find({ projectId: project._id }).sort({ provider: 1 }).lean<IntegrationDoc[]>();
  return { data: integrations.map(integrationJsonOf), next_cursor: null };
}

/**
 * Verifies the token and repository with the provider's REST API, then keeps them with the token
 * sealed. The provider's refusal is the user's answer (400), and nothing is stored.
 */
export async function putIntegration(
  principal: MemberPrincipal,
  projectId: string,
  providerName: string,
  input: z.infer<typeof putIntegrationBody>,
  deps: { codeHosts: CodeHosts; secrets: SecretBox },
  ip: string | undefined,
  now = new Date(),
) {
  const provider = providerOf(providerName);
  const project = await findProject(principal.orgId, projectId);
  // GitHub's /repos/{owner}/{name} continues into other endpoints (`acme/shop/issues` answers 200 too)
  if (provider === 'github' && input.repository.split('/').length !== 2) {
    throw new AppError('validation_failed', 'a GitHub repository is owner/name', { details: [{ path: 'body.repository', message: 'owner/name' }] });
  }
  let facts;
  try {
    facts = await deps.codeHosts.verify(provider, input.repository, input.access_token);
  } catch (error) {
    if (!(error instanceof CodeHostRefusal)) throw error;
    throw new AppError('validation_failed', error.message, { details: [{ path: 'body.access_token', message: error.message }] });
  }
  const integration = await Integration.findOneAndUpdate(
    { projectId: project._id, provider },
    {
      $set: {
        repository: input.repository,
        defaultBranch: input.default_branch ?? facts.defaultBranch,
        webUrl: facts.webUrl.replace(/\/+$/, ''),
        tokenSealed: deps.secrets.seal(input.access_token),
        tokenLast4: input.access_token.slice(-4),
        verifiedAt: now,
        updatedAt: now,
      },
      $setOnInsert: { orgId: principal.orgId, createdAt: now },
    },
    { upsert: true, returnDocument: 'after' },
  ).lean<IntegrationDoc>();
  await auditAs(principal, ip)('integration.set', { type: 'project', id: project._id }, { provider, repository: input.repository });
  return integrationJsonOf(integration!);
}

export async function deleteIntegration(principal: MemberPrincipal, projectId: string, providerName: string, ip: string | undefined): Promise<void> {
  const provider = providerOf(providerName);
  const project = await findProject(principal.orgId, projectId);
  const removed = await Integration.findOneAndDelete({ projectId: project._id, provider }).lean();
  if (!removed) throw notFound('integration');
  await auditAs(principal, ip)('integration.delete', { type: 'project', id: project._id }, { provider });
}

/** Links into one integration's repository on its host. */
function linksOf({ provider, webUrl, defaultBranch, repository }: IntegrationDoc) {
  return {
    repository,
    commit: (sha: string) => codeLinks.commit(provider, webUrl, sha),
    source: (path: string, line: number | null | undefined, ref?: string | null) => codeLinks.source(provider, webUrl, ref ?? defaultBranch, path, line),
  };
}

/**
 * Builds links into a project's repository: its GitHub integration first, else GitLab; undefined
 * without one. `forRepository` picks the integration of the repository a deployment names (names
 * compare case-insensitively, as on both hosts), or none when no integration has that repository.
 */
export async function repositoryLinks(projectId: Types.ObjectId) {
  const integrations = (await Integration.find({ projectId }).lean<IntegrationDoc[]>()).sort((a, b) => Number(b.provider === 'github') - Number(a.provider === 'github'));
  if (integrations.length === 0) return undefined;
  const main = linksOf(integrations[0]!);
  return {
    ...main,
    forRepository(repository: string | null | undefined) {
      if (!repository) return main;
      const named = integrations.find((integration) => integration.repository.toLowerCase() === repository.toLowerCase());
      return named ? linksOf(named) : undefined;
    },
  };
}

/** A deployment's commit on its repository's host: null without a sha or an integration of that repository. */
export const commitUrlOf = (links: Awaited<ReturnType<typeof repositoryLinks>>, deployment: { commitSha?: string | null; repository?: string | null }) =>
  (deployment.commitSha && links?.forRepository(deployment.repository)?.commit(deployment.commitSha)) || null;

/** A frame path as it sits in the repository: no scheme, origin, bundler prefix or leading `./`, `~/` or `/`. */
const repositoryPath = (path: string) =>
  path
    .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
    .replace(/^(webpack|app):\/*[^/]*\//i, '')
    .replace(/^(\.\.?\/|~\/|\/)+/, '');

/**
 * Adds `source_url` to the in-app frames of a project's events: the line in the repository of its
 * integration, at the commit of the newest deployment of the event's release, else the default
 * branch. Events of a project without an integration are left as they are.
 */
export async function linkFrames(projectId: Types.ObjectId, events: Record<string, unknown>[]): Promise<void> {
  const links = await repositoryLinks(projectId);
  if (!links) return;
  const refs = new Map<string, string | null>();
  const refOf = async (release: unknown) => {
    if (typeof release !== 'string') return null;
    if (!refs.has(release)) {
      const deployment = await Deployment.findOne({ projectId, version: release, commitSha: { $ne: null } }, { commitSha: 1 }).sort({ deployedAt: -1 }).lean();
      refs.set(release, deployment?.commitSha ?? null);
    }
    return refs.get(release)!;
  };
  for (const event of events) {
    const ref = await refOf(event.release);
    const exceptions = (event.exception as { values?: { stacktrace?: { frames?: unknown[] } }[] } | undefined)?.values ?? [];
    const stacks = [...exceptions.map((exception) => exception.stacktrace), event.stacktrace as { frames?: unknown[] } | undefined];
    for (const frame of stacks.flatMap((stack) => stack?.frames ?? []) as Record<string, unknown>[]) {
      const path = typeof frame.filename === 'string' ? repositoryPath(frame.filename) : '';
      if (frame.in_app !== true || !path || path.includes('node_modules/')) continue;
      frame.source_url = links.source(path, typeof frame.lineno === 'number' ? frame.lineno : null, ref);
    }
  }
}
