import { randomBytes } from 'node:crypto';
import type { Types } from 'mongoose';
import type { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import { slugify } from '../../slug.js';
import type { MemberPrincipal } from '../../principal.js';
import { auditAs } from '../audit/service.js';
import { Counter, Project, ProjectKey, type ProjectDoc, type ProjectKeyDoc } from './model.js';
import type { createProjectBody, dsnJson, projectJson, updateProjectBody } from './schemas.js';

const projectJsonOf = (project: ProjectDoc): z.infer<typeof projectJson> => ({
  id: project._id.toHexString(),
  name: project.name,
  slug: project.slug,
  number: project.number,
  platform: project.platform ?? null,
  session_replay: { enabled: project.replayCapture },
  // projects created before the setting have no such field
  scrub_fields: project.scrubFields ?? [],
  created_at: project.createdAt.toISOString(),
});

/** `http(s)://<public_key>@<ingest host>/<project number>`, from the ingest's public URL. */
function dsnString(publicKey: string, projectNumber: number, ingestUrl: string): string {
  const url = new URL(ingestUrl);
  const path = url.pathname.replace(/\/$/, '');
  return `${url.protocol}//${publicKey}@${url.host}${path}/${projectNumber}`;
}

function dsnJsonOf(key: ProjectKeyDoc, project: ProjectDoc, config: Config): z.infer<typeof dsnJson> {
  return {
    id: key._id.toHexString(),
    project_id: project._id.toHexString(),
    label: key.label,
    public_key: key.publicKey,
    dsn: dsnString(key.publicKey, project.number, config.INGEST_PUBLIC_URL),
    otlp: { endpoint: config.INGEST_PUBLIC_URL.replace(/\/$/, ''), headers: { Authorization: `Bearer ${key.publicKey}` } },
    created_at: key.createdAt.toISOString(),
  };
}

async function nextProjectNumber(): Promise<number> {
  const counter = await Counter.findOneAndUpdate({ _id: 'project_number' }, { $inc: { seq: 1 } }, { upsert: true, returnDocument: 'after' }).lean();
  return counter!.seq;
}

/** Another organisation's project answers exactly like a missing one. */
export async function findProject(orgId: Types.ObjectId, projectId: string): Promise<ProjectDoc> {
  const project = await Project.findOne({ _id: parseId(projectId, 'project'), orgId }).lean<ProjectDoc>();
  if (!project) throw notFound('project');
  return project;
}

/** The project with this slug in the organisation, if any. */
export const findProjectBySlug = (orgId: Types.ObjectId, slug: string) => Project.findOne({ orgId, slug }).lean<ProjectDoc>();

/** The organisation's projects named by slug, in the order named, and the slugs that name none. */
export async function projectsBySlugs(orgId: Types.ObjectId, slugs: readonly string[]): Promise<{ found: ProjectDoc[]; missing: string[] }> {
  const unique = [...new Set(slugs)];
  const projects = unique.length ? await Project.find({ orgId, slug: { $in: unique } }).lean<ProjectDoc[]>() : [];
  return {
    found: unique.flatMap((slug) => projects.find((project) => project.slug === slug) ?? []),
    missing: unique.filter((slug) => !projects.some((project) => project.slug === slug)),
  };
}

/** Every project of the organisation, oldest first (release tooling lists them unpaged). */
export const listProjectsOf = (orgId: Types.ObjectId) => Project.find({ orgId }).sort({ createdAt: 1, _id: 1 }).limit(1000).lean<ProjectDoc[]>();

export async function listProjects(orgId: Types.ObjectId, options: { limit: number; cursor?: string | undefined }) {
  const page = await paginate(Project, { orgId }, { sortField: 'createdAt', direction: 1, ...options });
  return { data: page.items.map((p) => projectJsonOf(p as ProjectDoc)), next_cursor: page.nextCursor };
}

export const getProject = async (orgId: Types.ObjectId, projectId: string) => projectJsonOf(await findProject(orgId, projectId));

async function createKey(principal: MemberPrincipal, project: ProjectDoc, label: string | undefined, ip: string | undefined) {
  // 128 random bits as 32 hex characters: the shape Sentry SDKs expect of a public key.
  const key = (
    await ProjectKey.create({ orgId: project.orgId, projectId: project._id, publicKey: randomBytes(16).toString('hex'), label, createdBy: principal.userId })
  ).toObject() as ProjectKeyDoc;
  await auditAs(principal, ip)('dsn.issue', { type: 'dsn', id: key._id }, { project_id: project._id.toHexString() });
  return key;
}

/** Creates a project with its numeric ingest number and a first DSN, as Sentry does. */
export async function createProject(principal: MemberPrincipal, input: z.infer<typeof createProjectBody>, ip: string | undefined) {
  const slug = slugify(input.name, { max: 50, fallback: 'project' });
  let project: ProjectDoc | undefined;
  // FerretDB's counter `$inc` is not atomic across connections: two projects created at once can draw
  // the same number, and the unique index refuses the second; it draws again.
  for (let attempt = 0; !project; attempt++) {
    try {
      project = (await Project.create({ orgId: principal.orgId, name: input.name, slug, number: await nextProjectNumber(), platform: input.platform ?? null })).toObject() as ProjectDoc;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      if (attempt >= 4 || (await Project.exists({ orgId: principal.orgId, slug }))) throw new AppError('conflict', 'a project with that name already exists');
    }
  }
  await auditAs(principal, ip)('project.create', { type: 'project', id: project._id }, { name: project.name });
  await createKey(principal, project, undefined, ip);
  return projectJsonOf(project);
}

export async function listDsns(orgId: Types.ObjectId, projectId: string, config: Config, options: { limit: number; cursor?: string | undefined }) {
  const project = await findProject(orgId, projectId);
  const page = await paginate(ProjectKey, { projectId: project._id, revokedAt: null }, { sortField: 'createdAt', direction: 1, ...options });
  return { data: page.items.map((key) => dsnJsonOf(key as ProjectKeyDoc, project, config)), next_cursor: page.nextCursor };
}

export async function issueDsn(principal: MemberPrincipal, projectId: string, label: string | undefined, config: Config, ip: string | undefined) {
  const project = await findProject(principal.orgId, projectId);
  return dsnJsonOf(await createKey(principal, project, label, ip), project, config);
}

export async function revokeDsn(principal: MemberPrincipal, projectId: string, keyId: string, ip: string | undefined): Promise<void> {
  const project = await findProject(principal.orgId, projectId);
  const key = await ProjectKey.findOneAndUpdate(
    { _id: parseId(keyId, 'DSN'), projectId: project._id, revokedAt: null },
    { $set: { revokedAt: new Date() } },
  ).lean<ProjectKeyDoc>();
  if (!key) throw notFound('DSN');
  await auditAs(principal, ip)('dsn.revoke', { type: 'dsn', id: key._id }, { project_id: project._id.toHexString() });
}

export async function setReplayCapture(principal: MemberPrincipal, projectId: string, enabled: boolean, ip: string | undefined) {
  const project = await findProject(principal.orgId, projectId);
  const updated = await Project.findByIdAndUpdate(project._id, { $set: { replayCapture: enabled } }, { returnDocument: 'after' }).lean<ProjectDoc>();
  if (!updated) throw notFound('project');
  await auditAs(principal, ip)('project.session_replay', { type: 'project', id: project._id }, { enabled });
  return projectJsonOf(updated);
}

export async function updateProject(principal: MemberPrincipal, projectId: string, input: z.infer<typeof updateProjectBody>, ip: string | undefined) {
  const project = await findProject(principal.orgId, projectId);
  const set = {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.platform !== undefined && { platform: input.platform }),
    ...(input.scrub_fields !== undefined && { scrubFields: [...new Set(input.scrub_fields)] }),
  };
  const updated = await Project.findOneAndUpdate({ _id: project._id, orgId: principal.orgId }, { $set: set }, { returnDocument: 'after' }).lean<ProjectDoc>();
  if (!updated) throw notFound('project');
  await auditAs(principal, ip)('project.update', { type: 'project', id: project._id }, { fields: Object.keys(input) });
  return projectJsonOf(updated);
}

/** How long a worker trusts the scrub fields it read for a project: a change reaches the next events within this. */
const SCRUB_FIELDS_TTL_MS = 5_000;
const scrubFieldsCache = new Map<string, { fields: string[]; until: number }>();

/** The scrub fields of each project named, read once per project every few seconds (workers ask for every batch). */
export async function scrubFieldsOf(projectIds: Iterable<string>, now = Date.now()): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const missing: string[] = [];
  for (const id of new Set(projectIds)) {
    const cached = scrubFieldsCache.get(id);
    if (cached && cached.until > now) found.set(id, cached.fields);
    else missing.push(id);
  }
  if (missing.length === 0) return found;
  const projects = await Project.find({ _id: { $in: missing } }, { scrubFields: 1 }).lean<Pick<ProjectDoc, '_id' | 'scrubFields'>[]>();
  // bounded: entries of projects no longer sending are dropped wholesale now and then
  if (scrubFieldsCache.size > 10_000) scrubFieldsCache.clear();
  const byId = new Map(projects.map((project) => [project._id.toHexString(), project.scrubFields ?? []]));
  for (const id of missing) {
    const fields = byId.get(id) ?? [];
    scrubFieldsCache.set(id, { fields, until: now + SCRUB_FIELDS_TTL_MS });
    found.set(id, fields);
  }
  return found;
}

/** A live DSN's organisation and project; revoked or unknown keys resolve to nothing. */
export async function resolveDsn(publicKey: string) {
  const key = await ProjectKey.findOne({ publicKey, revokedAt: null }).lean<ProjectKeyDoc>();
  return key ? { orgId: key.orgId, projectId: key.projectId, keyId: key._id } : undefined;
}
