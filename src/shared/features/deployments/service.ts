import type { Types } from 'mongoose';
import type { z } from 'zod';
import { notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { namedProjects, optionalWindow, projectFilter } from '../../views.js';
import { openAlert } from '../alerts/service.js';
import { auditAs } from '../audit/service.js';
import { commitUrlOf, repositoryLinks } from '../integrations/service.js';
import { findProject } from '../projects/service.js';
import { deploymentHealth } from './health.js';
import { Deployment, type DeploymentDoc } from './model.js';
import type { createDeploymentBody, deploymentJson, listDeploymentsQuery } from './schemas.js';
import { httpLinkOrUndefined } from '../../links.js';

/** The windows the evaluator judges every deployment over, once they have passed. */
export const DEFAULT_WINDOW_MINUTES = 60;
/** Deployments older than this when the evaluator first sees them are left unjudged (an outage's backlog). */
const EVALUATE_WITHIN_MS = 24 * 3_600_000;

type Links = Awaited<ReturnType<typeof repositoryLinks>>;

const deploymentJsonOf = (deployment: DeploymentDoc, links: Links): z.infer<typeof deploymentJson> => ({
  id: deployment._id.toHexString(),
  project_id: deployment.projectId.toHexString(),
  version: deployment.version,
  environment: deployment.environment,
  commit_sha: deployment.commitSha ?? null,
  repository: deployment.repository ?? null,
  // stored before links were checked at the door
  url: httpLinkOrUndefined(deployment.url ?? undefined) ?? null,
  commit_url: commitUrlOf(links, deployment),
  deployed_at: deployment.deployedAt.toISOString(),
  created_at: deployment.createdAt.toISOString(),
  verdict: deployment.verdict ?? null,
});

/** Each project's repository links, looked up once per page. */
async function linksByProject(deployments: DeploymentDoc[]): Promise<Map<string, Links>> {
  const ids = [...new Set(deployments.map((d) => d.projectId.toHexString()))];
  const links = await Promise.all(ids.map(async (id) => [id, await repositoryLinks(deployments.find((d) => d.projectId.toHexString() === id)!.projectId)] as const));
  return new Map(links);
}

export async function createDeployment(principal: MemberPrincipal, input: z.infer<typeof createDeploymentBody>, ip: string | undefined, now = new Date()) {
  const project = await findProject(principal.orgId, input.project_id);
  const deployment = (
    await Deployment.create({
      orgId: principal.orgId,
      projectId: project._id,
      version: input.version,
      environment: input.environment,
      commitSha: input.commit_sha?.toLowerCase() ?? null,
      repository: input.repository ?? null,
      url: input.url ?? null,
      deployedAt: input.deployed_at ? new Date(input.deployed_at) : now,
      createdAt: now,
    })
  ).toObject() as DeploymentDoc;
  await auditAs(principal, ip)('deployment.create', { type: 'deployment', id: deployment._id }, { version: deployment.version, environment: deployment.environment });
  return deploymentJsonOf(deployment, await repositoryLinks(project._id));
}

export async function listDeployments(orgId: Types.ObjectId, query: z.infer<typeof listDeploymentsQuery>) {
  const filter: Record<string, unknown> = { orgId, ...projectFilter(await namedProjects(orgId, query.project)), ...optionalWindow('deployedAt', query) };
  if (query.environment) filter.environment = query.environment;
  if (query.version) filter.version = query.version;
  const page = await paginate(Deployment, filter, { sortField: 'deployedAt', direction: -1, limit: query.limit, cursor: query.cursor });
  const deployments = page.items as DeploymentDoc[];
  const links = await linksByProject(deployments);
  return { data: deployments.map((d) => deploymentJsonOf(d, links.get(d.projectId.toHexString()))), next_cursor: page.nextCursor };
}

async function findDeployment(orgId: Types.ObjectId, deploymentId: string): Promise<DeploymentDoc> {
  const deployment = await Deployment.findOne({ _id: parseId(deploymentId, 'deployment'), orgId }).lean<DeploymentDoc>();
  if (!deployment) throw notFound('deployment');
  return deployment;
}

export async function getDeployment(orgId: Types.ObjectId, deploymentId: string) {
  const deployment = await findDeployment(orgId, deploymentId);
  return deploymentJsonOf(deployment, await repositoryLinks(deployment.projectId));
}

/** Opens the deployment's `deployment.degraded` alert; its key makes it once per deployment. */
async function raiseDegraded(deployment: DeploymentDoc, reasons: string[], at: Date): Promise<void> {
  await openAlert({
    key: `deployment:${deployment._id.toHexString()}:degraded`,
    orgId: deployment.orgId,
    projectId: deployment.projectId,
    kind: 'deployment.degraded',
    subject: { type: 'deployment', id: deployment._id.toHexString() },
    title: `Deployment ${deployment.version} (${deployment.environment}) made things worse`,
    details: { version: deployment.version, environment: deployment.environment, reasons: reasons.join('; ') },
    at,
  });
}

/** The health verdict with its arithmetic; a degraded verdict over a whole window raises the alert. */
export async function getDeploymentHealth(orgId: Types.ObjectId, deploymentId: string, windowMinutes: number, now = new Date()) {
  const deployment = await findDeployment(orgId, deploymentId);
  const health = await deploymentHealth(deployment, windowMinutes, now);
  if (health.verdict === 'degraded') await raiseDegraded(deployment, health.reasons, now);
  return health;
}

/**
 * The evaluator (a job every minute): each deployment whose default windows have passed is judged
 * once; its verdict is kept (the release list shows it) and a degraded one raises the alert.
 */
export async function evaluateDeployments(now = new Date()): Promise<{ judged: number; degraded: number }> {
  const due = await Deployment.find({ evaluatedAt: null, deployedAt: { $lte: new Date(now.getTime() - DEFAULT_WINDOW_MINUTES * 60_000) } }).lean<DeploymentDoc[]>();
  const counts = { judged: 0, degraded: 0 };
  for (const deployment of due) {
    if (now.getTime() - deployment.deployedAt.getTime() > EVALUATE_WITHIN_MS + DEFAULT_WINDOW_MINUTES * 60_000) {
      await Deployment.updateOne({ _id: deployment._id, evaluatedAt: null }, { $set: { evaluatedAt: now } });
      continue;
    }
    const health = await deploymentHealth(deployment, DEFAULT_WINDOW_MINUTES, now);
    const judged = await Deployment.updateOne({ _id: deployment._id, evaluatedAt: null }, { $set: { verdict: health.verdict, evaluatedAt: now } });
    if (judged.modifiedCount === 0) continue;
    counts.judged += 1;
    if (health.verdict === 'degraded') {
      counts.degraded += 1;
      await raiseDegraded(deployment, health.reasons, now);
    }
  }
  return counts;
}
