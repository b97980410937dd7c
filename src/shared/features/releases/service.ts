import { Types } from 'mongoose';
import type { z } from 'zod';
import { offsetPage } from '../../paging.js';
import type { SessionRecord, Stamped } from '../../telemetry/records.js';
import { durationIncrement, RollupBatch } from '../../telemetry/rollups.js';
import { claimBatch, contentId, upsertAll } from '../../telemetry/storage.js';
import { namedProjects, projectFilter, rounded } from '../../views.js';
import { Deployment, type DeploymentDoc } from '../deployments/model.js';
import type { listReleasesQuery } from '../deployments/schemas.js';
import { commitUrlOf, repositoryLinks } from '../integrations/service.js';
import { Issue } from '../issues/model.js';
import { DeclaredRelease, ReleaseHealth, ReleaseRollup, ReleaseSummary, type DeclaredReleaseDoc } from './model.js';
import { HOUR_MS, hourOf } from '../../telemetry/time-buckets.js';

const outcomes = ['started', 'exited', 'errored', 'crashed', 'abnormal'] as const;

interface Rollup {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  release: string;
  environment: string | null;
  hour: Date;
  counts: Record<(typeof outcomes)[number], number>;
}

/**
 * Adds session outcomes to the hourly release-health rollups. `$inc` cannot tell a replayed batch,
 * so a batch with an id is applied once (see claimBatch); without one, counting is at least once.
 */
export async function ingestSessions(items: Stamped<SessionRecord>[], batchId?: string): Promise<void> {
  if (batchId !== undefined && !(await claimBatch(batchId, 'sessions'))) return;
  const rollups = new Map<string, Rollup>();
  for (const { orgId, projectId, record } of items) {
    const hour = new Date(hourOf(record.startedMs) * HOUR_MS);
    const environment = record.environment ?? null;
    const key = JSON.stringify([projectId, record.release, environment, hour.getTime()]);
    let rollup = rollups.get(key);
    if (!rollup) {
      rollup = { orgId: new Types.ObjectId(orgId), projectId: new Types.ObjectId(projectId), release: record.release, environment, hour, counts: { started: 0, exited: 0, errored: 0, crashed: 0, abnormal: 0 } };
      rollups.set(key, rollup);
    }
    for (const outcome of outcomes) rollup.counts[outcome] += record[outcome];
  }
  await countIntoReleases(
    items.map(({ orgId, projectId, record }) => ({
      orgId: new Types.ObjectId(orgId),
      projectId: new Types.ObjectId(projectId),
      atMs: record.startedMs,
      release: record.release,
      environment: record.environment ?? null,
      counts: { sessions: record.started, crashed: record.crashed },
    })),
  );
  await upsertAll(
    ReleaseHealth.collection,
    [...rollups.values()].map(({ orgId, counts, ...key }) => ({
      updateOne: {
        filter: { _id: contentId('release-health', key.projectId.toHexString(), key.release, key.environment, key.hour.getTime()) },
        // The key goes in $set, not $setOnInsert: FerretDB 1.24 drops null values (a missing environment) from $setOnInsert.
        update: { $setOnInsert: { orgId }, $set: key, $inc: counts },
        upsert: true,
      },
    })),
  );
}

/** What one record adds to its release's rollups: counts, and a request's duration. */
export interface ReleaseCount {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  atMs: number;
  release: string | null;
  environment: string | null;
  counts: Partial<Record<'requests' | 'failed' | 'errorEvents' | 'sessions' | 'crashed', number>>;
  latencyMs?: number;
}

/**
 * Adds records to the per-minute release rollups (what deployment health compares) and to the
 * release summaries (what the release list reads). Callers count each record once: new spans only,
 * and error and session batches claimed once.
 */
export async function countIntoReleases(entries: ReleaseCount[]): Promise<void> {
  const rollups = new RollupBatch('release-rollup');
  const summaries = new Map<string, { key: Record<string, unknown>; orgId: Types.ObjectId; first: number; last: number; counts: Record<string, number> }>();
  for (const entry of entries) {
    const latency = entry.latencyMs === undefined ? {} : durationIncrement('latency', entry.latencyMs);
    rollups.add(entry, { release: entry.release, environment: entry.environment }, { ...entry.counts, ...latency });
    if (entry.release === null) continue;
    const id = contentId('release-summary', entry.projectId.toHexString(), entry.release, entry.environment).toHexString();
    const summary = summaries.get(id) ?? { key: { projectId: entry.projectId, release: entry.release, environment: entry.environment }, orgId: entry.orgId, first: entry.atMs, last: entry.atMs, counts: {} };
    summary.first = Math.min(summary.first, entry.atMs);
    summary.last = Math.max(summary.last, entry.atMs);
    for (const [name, count] of Object.entries(entry.counts)) summary.counts[name] = (summary.counts[name] ?? 0) + count;
    summaries.set(id, summary);
  }
  await Promise.all([
    rollups.write(ReleaseRollup.collection),
    upsertAll(
      ReleaseSummary.collection,
      [...summaries].map(([id, summary]) => ({
        updateOne: {
          filter: { _id: new Types.ObjectId(id) },
          // the key in $set: FerretDB 1.24 drops null values (no environment) from $setOnInsert
          update: { $setOnInsert: { orgId: summary.orgId }, $set: summary.key, $min: { firstSeen: new Date(summary.first) }, $max: { lastSeen: new Date(summary.last) }, $inc: summary.counts },
          upsert: true,
        },
      })),
    ),
  ]);
}

/**
 * Releases: the versions deployments name, the `release` of stored telemetry (release summaries), and
 * those release tooling declared (sentry-cli, the bundler plugins). Newest activity first.
 */
export async function listReleases(orgId: Types.ObjectId, query: z.infer<typeof listReleasesQuery>) {
  const projects = projectFilter(await namedProjects(orgId, query.project));
  const filter: Record<string, unknown> = { orgId, ...projects };
  if (query.environment) filter.environment = query.environment;
  const [summaries, deployments, declarations] = await Promise.all([
    ReleaseSummary.find(filter).lean<{ projectId: Types.ObjectId; release: string; environment?: string | null; firstSeen: Date; lastSeen: Date; errorEvents?: number; sessions?: number; crashed?: number }[]>(),
    Deployment.find(filter).sort({ deployedAt: 1 }).lean<DeploymentDoc[]>(),
    DeclaredRelease.find({ orgId, ...(projects.projectId && { projectIds: projects.projectId }) }).lean<DeclaredReleaseDoc[]>(),
  ]);
  const releases = new Map<string, { projects: Set<string>; environments: Set<string>; firstSeen?: Date; lastSeen?: Date; events: number; sessions: number; crashed: number; deployments: DeploymentDoc[]; declared?: DeclaredReleaseDoc }>();
  const entry = (version: string) => {
    let release = releases.get(version);
    if (!release) {
      release = { projects: new Set(), environments: new Set(), events: 0, sessions: 0, crashed: 0, deployments: [] };
      releases.set(version, release);
    }
    return release;
  };
  // declared by release tooling: listed with their projects even before any telemetry names them (not in one environment's list)
  for (const declared of declarations) {
    if (query.environment && !summaries.some((summary) => summary.release === declared.version) && !deployments.some((deployment) => deployment.version === declared.version)) continue;
    const release = entry(declared.version);
    release.declared = declared;
    for (const projectId of declared.projectIds) if (!projects.projectId || query.project?.includes(projectId.toHexString())) release.projects.add(projectId.toHexString());
  }
  for (const summary of summaries) {
    const release = entry(summary.release);
    release.projects.add(summary.projectId.toHexString());
    if (summary.environment) release.environments.add(summary.environment);
    release.firstSeen = !release.firstSeen || summary.firstSeen < release.firstSeen ? summary.firstSeen : release.firstSeen;
    release.lastSeen = !release.lastSeen || summary.lastSeen > release.lastSeen ? summary.lastSeen : release.lastSeen;
    release.events += summary.errorEvents ?? 0;
    release.sessions += summary.sessions ?? 0;
    release.crashed += summary.crashed ?? 0;
  }
  for (const deployment of deployments) {
    const release = entry(deployment.version);
    release.projects.add(deployment.projectId.toHexString());
    release.environments.add(deployment.environment);
    release.deployments.push(deployment);
  }
  const lastActivity = (release: { lastSeen?: Date; deployments: DeploymentDoc[]; declared?: DeclaredReleaseDoc }) =>
    Math.max(release.lastSeen?.getTime() ?? 0, release.deployments.at(-1)?.deployedAt.getTime() ?? 0, release.declared?.dateReleased?.getTime() ?? release.declared?.createdAt.getTime() ?? 0);
  const ranked = [...releases].sort(([va, a], [vb, b]) => lastActivity(b) - lastActivity(a) || va.localeCompare(vb));
  const { page, next_cursor } = offsetPage(ranked, query);
  const versions = page.map(([version]) => version);
  const newIssues = versions.length ? await Issue.find({ orgId, firstRelease: { $in: versions } }, { firstRelease: 1, projectId: 1 }).lean() : [];
  const data = await Promise.all(
    page.map(async ([version, release]) => {
      const latest = release.deployments.at(-1);
      const links = latest?.commitSha ? await repositoryLinks(latest.projectId) : undefined;
      return {
        version,
        projects: [...release.projects].sort(),
        environments: [...release.environments].sort(),
        first_seen: release.firstSeen?.toISOString() ?? null,
        last_seen: release.lastSeen?.toISOString() ?? null,
        first_deployed_at: release.deployments[0]?.deployedAt.toISOString() ?? null,
        last_deployed_at: latest?.deployedAt.toISOString() ?? null,
        deployment_count: release.deployments.length,
        new_issues: newIssues.filter((issue) => issue.firstRelease === version && release.projects.has(issue.projectId.toHexString())).length,
        events: release.events,
        crash_free_rate: release.sessions > 0 ? rounded(1 - release.crashed / release.sessions, 6) : null,
        latest_verdict: latest?.verdict ?? null,
        latest_commit_url: latest ? commitUrlOf(links, latest) : null,
        finalized_at: release.declared?.dateReleased?.toISOString() ?? null,
        commits: (release.declared?.refs ?? []).map((ref) => ({ repository: ref.repository ?? '', commit: ref.commit ?? '' })),
      };
    }),
  );
  return { data, next_cursor };
}
