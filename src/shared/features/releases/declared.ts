import type { Types } from 'mongoose';
import { AppError, notFound } from '../../errors.js';
import { httpLinkOrUndefined } from '../../links.js';
import type { MemberPrincipal } from '../../principal.js';
import { contentId } from '../../telemetry/storage.js';
import { auditAs } from '../audit/service.js';
import { Deployment, type DeploymentDoc } from '../deployments/model.js';
import { createDeployment } from '../deployments/service.js';
import { Integration, type IntegrationDoc } from '../integrations/model.js';
import { Issue } from '../issues/model.js';
import type { ProjectDoc } from '../projects/model.js';
import { listProjectsOf, projectsBySlugs } from '../projects/service.js';
import { DeclaredRelease, ReleaseSummary, type DeclaredReleaseDoc } from './model.js';

/**
 * Releases as release tooling manages them (sentry-cli, the Sentry bundler plugins): declared, given
 * commits, finalized, deployed. A release the telemetry already names is the same release: it can be
 * read, updated and deployed without being declared first, as Sentry creates releases from events.
 */

export interface ReleaseRef {
  repository: string;
  commit: string;
  previousCommit: string | null;
}

export interface ReleaseChanges {
  projectIds?: Types.ObjectId[];
  refs?: ReleaseRef[];
  url?: string | null;
  dateStarted?: Date | null;
  dateReleased?: Date | null;
}

/** A release with what is known of it: its declaration (if any), its projects, telemetry's first and last sight, new issues. */
export interface KnownRelease {
  version: string;
  declared: DeclaredReleaseDoc | undefined;
  projects: ProjectDoc[];
  firstSeen: Date | undefined;
  lastSeen: Date | undefined;
  newIssues: number;
  deployments: DeploymentDoc[];
}

const declaredId = (orgId: Types.ObjectId, version: string) => contentId('declared-release', orgId.toHexString(), version);

/** The organisation's projects named by slug; an unknown slug is the caller's mistake, said by name. */
export async function projectsBySlug(orgId: Types.ObjectId, slugs: string[]): Promise<ProjectDoc[]> {
  const { found, missing } = await projectsBySlugs(orgId, slugs);
  if (missing.length) throw new AppError('validation_failed', `no project with the slug ${missing.map((slug) => `"${slug}"`).join(', ')} in this organization`);
  return found;
}

/** Commits must name a repository connected to one of the organisation's projects (Integrations), as the commit links need. */
async function checkRepositories(orgId: Types.ObjectId, refs: ReleaseRef[]): Promise<void> {
  if (refs.length === 0) return;
  const connected = new Set((await connectedRepositories(orgId)).map((integration) => integration.repository.toLowerCase()));
  const unknown = [...new Set(refs.map((ref) => ref.repository))].filter((name) => !connected.has(name.toLowerCase()));
  if (unknown.length) throw new AppError('validation_failed', `unknown repository ${unknown.join(', ')}: connect it to a project under Integrations first`);
}

/** The repositories connected to the organisation's projects, one per name. */
export async function connectedRepositories(orgId: Types.ObjectId): Promise<IntegrationDoc[]> {
  const integrations = await Integration.find({ orgId }).sort({ createdAt: 1 }).lean<IntegrationDoc[]>();
  return integrations.filter((integration, index) => integrations.findIndex((other) => other.repository.toLowerCase() === integration.repository.toLowerCase()) === index);
}

const setOf = (changes: ReleaseChanges) => ({
  ...(changes.refs !== undefined && { refs: changes.refs }),
  ...(changes.url !== undefined && { url: changes.url }),
  ...(changes.dateStarted !== undefined && { dateStarted: changes.dateStarted }),
  ...(changes.dateReleased !== undefined && { dateReleased: changes.dateReleased }),
});

async function write(orgId: Types.ObjectId, version: string, changes: ReleaseChanges, now: Date): Promise<boolean> {
  const set = setOf(changes);
  const result = await DeclaredRelease.updateOne(
    { _id: declaredId(orgId, version) },
    {
      $setOnInsert: { orgId, version, createdAt: now },
      ...(changes.projectIds?.length && { $addToSet: { projectIds: { $each: changes.projectIds } } }),
      ...(Object.keys(set).length > 0 && { $set: set }),
    },
    { upsert: true },
  );
  return result.upsertedCount === 1;
}

/** Declares a release (or adds projects and fields to the one declared before); `created` says which. */
export async function declareRelease(principal: MemberPrincipal, version: string, changes: ReleaseChanges, ip: string | undefined, now = new Date()) {
  await checkRepositories(principal.orgId, changes.refs ?? []);
  const created = await write(principal.orgId, version, changes, now);
  if (created) await auditAs(principal, ip)('release.create', { type: 'release', id: declaredId(principal.orgId, version) }, { version });
  return { created, release: await knownRelease(principal.orgId, version) };
}

/** Sets commits, finalizes or adds projects to a release; one the telemetry names is declared by it. */
export async function updateRelease(principal: MemberPrincipal, version: string, changes: ReleaseChanges, ip: string | undefined, now = new Date()) {
  const before = await knownRelease(principal.orgId, version);
  await checkRepositories(principal.orgId, changes.refs ?? []);
  await write(principal.orgId, version, { ...changes, projectIds: [...before.projects.map((project) => project._id), ...(changes.projectIds ?? [])] }, now);
  await auditAs(principal, ip)('release.update', { type: 'release', id: declaredId(principal.orgId, version) }, { version, fields: Object.keys(setOf(changes)) });
  return knownRelease(principal.orgId, version);
}

/**
 * Removes a release's declaration. A release stored telemetry names is kept (retention removes
 * telemetry, nothing else), as is every deployment of it.
 */
export async function deleteDeclaredRelease(principal: MemberPrincipal, version: string, ip: string | undefined): Promise<void> {
  const release = await knownRelease(principal.orgId, version);
  if (release.firstSeen || release.deployments.length) {
    throw new AppError('forbidden', `release ${version} is named by stored telemetry or deployments, which only retention removes`);
  }
  await DeclaredRelease.deleteOne({ _id: declaredId(principal.orgId, version) });
  await auditAs(principal, ip)('release.delete', { type: 'release', id: declaredId(principal.orgId, version) }, { version });
}

/** Deploys a release: one Sluice deployment per project (those given, else the release's), with the release's first commit. */
export async function deployRelease(
  principal: MemberPrincipal,
  version: string,
  input: { environment: string; url?: string | null; dateStarted?: Date | null; dateFinished?: Date | null; projectIds?: Types.ObjectId[] },
  ip: string | undefined,
  now = new Date(),
) {
  const release = await knownRelease(principal.orgId, version);
  const projectIds = input.projectIds?.length ? input.projectIds : release.projects.map((project) => project._id);
  if (projectIds.length === 0) throw new AppError('validation_failed', `release ${version} has no projects to deploy: declare it with one`);
  const ref = release.declared?.refs?.[0];
  const commit = ref?.commit && /^[0-9a-f]{7,64}$/i.test(ref.commit) ? ref.commit : undefined;
  const deployedAt = input.dateFinished ?? input.dateStarted ?? now;
  return Promise.all(
    projectIds.map((projectId) =>
      createDeployment(
        principal,
        {
          project_id: projectId.toHexString(),
          version,
          environment: input.environment,
          ...(commit && { commit_sha: commit, repository: ref!.repository ?? undefined }),
          ...(httpLinkOrUndefined(input.url ?? undefined) && { url: input.url! }),
          deployed_at: deployedAt.toISOString(),
        },
        ip,
        now,
      ),
    ),
  );
}

function merge(version: string, declared: DeclaredReleaseDoc | undefined, seen: { projectId: Types.ObjectId; firstSeen: Date; lastSeen: Date }[], deployments: DeploymentDoc[], projects: Map<string, ProjectDoc>, newIssues: number): KnownRelease {
  const projectIds = new Set([...(declared?.projectIds ?? []), ...seen.map((summary) => summary.projectId), ...deployments.map((deployment) => deployment.projectId)].map(String));
  const firstSeen = seen.reduce<Date | undefined>((first, summary) => (!first || summary.firstSeen < first ? summary.firstSeen : first), undefined);
  const lastSeen = seen.reduce<Date | undefined>((last, summary) => (!last || summary.lastSeen > last ? summary.lastSeen : last), undefined);
  return { version, declared, projects: [...projectIds].flatMap((id) => projects.get(id) ?? []), firstSeen, lastSeen, newIssues, deployments };
}

type Seen = { projectId: Types.ObjectId; release: string; firstSeen: Date; lastSeen: Date };

async function projectMap(orgId: Types.ObjectId) {
  return new Map((await listProjectsOf(orgId)).map((project) => [project._id.toHexString(), project]));
}

/** One release by version: declared, named by telemetry or deployed; anything else is not found. */
export async function knownRelease(orgId: Types.ObjectId, version: string): Promise<KnownRelease> {
  const [declared, seen, deployments, newIssues, projects] = await Promise.all([
    DeclaredRelease.findById(declaredId(orgId, version)).lean<DeclaredReleaseDoc>(),
    ReleaseSummary.find({ orgId, release: version }).lean<Seen[]>(),
    Deployment.find({ orgId, version }).sort({ deployedAt: 1 }).lean<DeploymentDoc[]>(),
    Issue.countDocuments({ orgId, firstRelease: version }),
    projectMap(orgId),
  ]);
  if (!declared && seen.length === 0 && deployments.length === 0) throw notFound('release');
  return merge(version, declared ?? undefined, seen, deployments, projects, newIssues);
}

/** Every release of the organisation (of one project, when given), newest first by when it was declared or first seen. */
export async function knownReleases(orgId: Types.ObjectId, projectId?: Types.ObjectId): Promise<KnownRelease[]> {
  const [declared, seen, deployments, projects] = await Promise.all([
    DeclaredRelease.find({ orgId, ...(projectId && { projectIds: projectId }) }).lean<DeclaredReleaseDoc[]>(),
    ReleaseSummary.find({ orgId, ...(projectId && { projectId }) }).lean<Seen[]>(),
    Deployment.find({ orgId, ...(projectId && { projectId }) }).sort({ deployedAt: 1 }).lean<DeploymentDoc[]>(),
    projectMap(orgId),
  ]);
  const versions = [...new Set([...declared.map((release) => release.version), ...seen.map((summary) => summary.release), ...deployments.map((deployment) => deployment.version)])];
  const issues = versions.length ? await Issue.find({ orgId, firstRelease: { $in: versions }, ...(projectId && { projectId }) }, { firstRelease: 1 }).lean() : [];
  const releases = versions.map((version) =>
    merge(
      version,
      declared.find((release) => release.version === version),
      seen.filter((summary) => summary.release === version),
      deployments.filter((deployment) => deployment.version === version),
      projects,
      issues.filter((issue) => issue.firstRelease === version).length,
    ),
  );
  return releases.sort((a, b) => createdAt(b).getTime() - createdAt(a).getTime() || a.version.localeCompare(b.version));
}

/** When a release began to exist for Sluice: declared, first seen, or first deployed, whichever came first. */
export function createdAt(release: KnownRelease): Date {
  const times = [release.declared?.createdAt, release.firstSeen, release.deployments[0]?.createdAt].filter((time): time is Date => time instanceof Date);
  return new Date(Math.min(...times.map((time) => time.getTime())));
}
