import type { Types } from 'mongoose';
import type { z } from 'zod';
import { codeLinks, CodeHostRefusal, providers, type CodeHosts, type Provider } from '../../clients/code-hosts.js';
import type { SecretBox } from '../../clients/secret-box.js';
import { AppError, notFound } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { auditAs } from '../audit/service.js';
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

/** Builds links into a project's repository: its GitHub integration first, else GitLab; undefined without one. */
export async function repositoryLinks(projectId: Types.ObjectId) {
  const integrations = await Integration.find({ projectId }).lean<IntegrationDoc[]>();
  const integration = integrations.find((i) => i.provider === 'github') ?? integrations[0];
  if (!integration) return undefined;
  const { provider, webUrl, defaultBranch, repository } = integration;
  return {
    repository,
    commit: (sha: string) => codeLinks.commit(provider, webUrl, sha),
    source: (path: string, line: number | null | undefined, ref?: string | null) => codeLinks.source(provider, webUrl, ref ?? defaultBranch, path, line),
  };
}
