import { Types } from 'mongoose';
import { z } from 'zod';
import type { AiClient } from '../../clients/ai.js';
import { AiError } from '../../clients/ai.js';
import { isDuplicateKey, notFound } from '../../errors.js';
import { paginate, parseId } from '../../paging.js';
import type { MemberPrincipal } from '../../principal.js';
import { namedProjects, projectFilter } from '../../views.js';
import { Alert } from '../alerts/model.js';
import { Issue } from '../issues/model.js';
import { findProject } from '../projects/service.js';
import { alertEvidence, issueEvidence, projectEvidence, topologyEvidence, type Evidence } from './evidence.js';
import { Investigation, type InvestigationDoc, type InvestigationKind } from './model.js';
import { explainAnswer, findingsAnswer, type investigationJson, type investigationRowJson, type listInvestigationsQuery } from './schemas.js';

type InvestigationJson = z.infer<typeof investigationJson>;

/** Puts an investigation's job on the queue (the API passes the BullMQ queue's `add`). */
export type Enqueue = (investigationId: string) => Promise<void>;

export const SYSTEM_PROMPT = [
  'You are the incident investigator of Sluice, an observability service.',
  'The user message is JSON: a task and the evidence our own code gathered from the telemetry.',
  'Use only that evidence. Do not invent services, releases, numbers, causes or events that it does not show;',
  'when the evidence does not settle a question, say so and say what to look at next.',
  'Answer with JSON that follows the given schema, and nothing else.',
].join(' ');

const TASKS: Record<InvestigationKind, string> = {
  issue: 'Explain the likely cause of this error issue and what to do about it: in `summary`, what is failing, since when, how often and what the evidence points to; in `suggested_actions`, concrete next steps.',
  alert: 'Explain why this alert fired and what to do about it: in `summary`, the condition, its likely cause and its impact; in `suggested_actions`, concrete next steps.',
  project: "Assess this project's current state: in `summary`, what is healthy and what is not, and the most pressing problem; in `suggested_actions`, concrete next steps in order of urgency.",
  explain: "Answer the question about this project's service topology in `answer`; in `suggested_actions`, follow-ups the facts suggest (may be empty).",
};

const toJson = (doc: InvestigationDoc): InvestigationJson => ({
  id: doc._id.toHexString(),
  kind: doc.kind,
  status: doc.status,
  project_id: doc.projectId?.toHexString() ?? null,
  subject: { type: doc.subjectType, id: doc.subjectId },
  question: doc.question ?? null,
  summary: doc.summary ?? null,
  answer: doc.answer ?? null,
  suggested_actions: doc.suggestedActions ?? null,
  evidence: doc.evidence ? (JSON.parse(doc.evidence) as Record<string, unknown>) : null,
  model: doc.model,
  usage: doc.status === 'completed' ? { prompt_tokens: doc.promptTokens ?? null, completion_tokens: doc.completionTokens ?? null } : null,
  error: doc.error ?? null,
  created_at: doc.createdAt.toISOString(),
  started_at: doc.startedAt?.toISOString() ?? null,
  completed_at: doc.completedAt?.toISOString() ?? null,
});

const rowJson = (doc: InvestigationDoc): z.infer<typeof investigationRowJson> => {
  const { evidence: _evidence, ...row } = toJson({ ...doc, evidence: null });
  return row;
};

interface Subject {
  kind: InvestigationKind;
  projectId: Types.ObjectId | null;
  subjectType: 'issue' | 'alert' | 'project';
  subjectId: string;
  question?: string;
}

/**
 * Creates a queued investigation of the subject and queues its job; while one of that subject is
 * queued or running, answers that one instead (an explain question always gets its own).
 */
async function request(principal: MemberPrincipal, subject: Subject, model: string, enqueue: Enqueue, now: Date): Promise<InvestigationJson> {
  const _id = new Types.ObjectId();
  const joinable = subject.kind !== 'explain';
  const activeKey = joinable ? `${subject.kind}:${subject.subjectId}` : _id.toHexString();
  for (let attempt = 0; attempt < 3; attempt++) {
    const doc: InvestigationDoc = {
      _id,
      orgId: principal.orgId,
      projectId: subject.projectId,
      kind: subject.kind,
      subjectType: subject.subjectType,
      subjectId: subject.subjectId,
      question: subject.question ?? null,
      status: 'queued',
      activeKey,
      evidence: null,
      summary: null,
      suggestedActions: null,
      answer: null,
      model,
      promptTokens: null,
      completionTokens: null,
      error: null,
      requestedBy: principal.userId,
      createdAt: now,
      startedAt: null,
      completedAt: null,
    };
    try {
      await Investigation.collection.insertOne(doc);
    } catch (error) {
      if (!isDuplicateKey(error) || !joinable) throw error;
      const active = await Investigation.findOne({ activeKey, orgId: principal.orgId }).lean<InvestigationDoc>();
      if (active) return toJson(active);
      continue; // it finished between the insert and the read: try again
    }
    try {
      await enqueue(_id.toHexString());
    } catch (error) {
      await finish(_id, { status: 'failed', error: 'the investigation could not be queued' }, now);
      throw error;
    }
    return toJson(doc);
  }
  throw new Error('could not create the investigation');
}

export async function investigateIssue(principal: MemberPrincipal, issueId: string, model: string, enqueue: Enqueue, now = new Date()) {
  const issue = await Issue.findOne({ _id: parseId(issueId, 'issue'), orgId: principal.orgId }, { projectId: 1 }).lean();
  if (!issue) throw notFound('issue');
  return request(principal, { kind: 'issue', projectId: issue.projectId, subjectType: 'issue', subjectId: issue._id.toHexString() }, model, enqueue, now);
}

export async function investigateAlert(principal: MemberPrincipal, alertId: string, model: string, enqueue: Enqueue, now = new Date()) {
  const alert = await Alert.findOne({ _id: parseId(alertId, 'alert'), orgId: principal.orgId }, { projectId: 1 }).lean();
  if (!alert) throw notFound('alert');
  return request(principal, { kind: 'alert', projectId: alert.projectId ?? null, subjectType: 'alert', subjectId: alert._id.toHexString() }, model, enqueue, now);
}

export async function investigateProject(principal: MemberPrincipal, projectId: string, model: string, enqueue: Enqueue, now = new Date()) {
  const project = await findProject(principal.orgId, projectId);
  return request(principal, { kind: 'project', projectId: project._id, subjectType: 'project', subjectId: project._id.toHexString() }, model, enqueue, now);
}

export async function explainTopology(principal: MemberPrincipal, projectId: string, question: string, model: string, enqueue: Enqueue, now = new Date()) {
  const project = await findProject(principal.orgId, projectId);
  return request(principal, { kind: 'explain', projectId: project._id, subjectType: 'project', subjectId: project._id.toHexString(), question }, model, enqueue, now);
}

/** Another organisation's investigation answers exactly like a missing one. */
export async function getInvestigation(orgId: Types.ObjectId, investigationId: string): Promise<InvestigationJson> {
  const doc = await Investigation.findOne({ _id: parseId(investigationId, 'investigation'), orgId }).lean<InvestigationDoc>();
  if (!doc) throw notFound('investigation');
  return toJson(doc);
}

/** The newest investigation of an issue or an alert; not found when the subject is not the organisation's or was never investigated. */
export async function latestInvestigation(orgId: Types.ObjectId, subjectType: 'issue' | 'alert', subjectId: string): Promise<InvestigationJson> {
  const _id = parseId(subjectId, subjectType);
  const exists = subjectType === 'issue' ? await Issue.exists({ _id, orgId }) : await Alert.exists({ _id, orgId });
  if (!exists) throw notFound(subjectType);
  const [doc] = await Investigation.find({ orgId, subjectType, subjectId: _id.toHexString(), kind: subjectType })
    .sort({ createdAt: -1, _id: -1 })
    .limit(1)
    .lean<InvestigationDoc[]>();
  if (!doc) throw notFound('investigation');
  return toJson(doc);
}

export async function listInvestigations(orgId: Types.ObjectId, query: z.infer<typeof listInvestigationsQuery>) {
  const filter: Record<string, unknown> = { orgId, ...projectFilter(await namedProjects(orgId, query.project)) };
  if (query.kind) filter.kind = query.kind;
  if (query.status) filter.status = query.status;
  const page = await paginate(Investigation, filter, { sortField: 'createdAt', direction: -1, limit: query.limit, cursor: query.cursor, projection: { evidence: 0 } });
  return { data: page.items.map((doc) => rowJson(doc as InvestigationDoc)), next_cursor: page.nextCursor };
}

type Outcome =
  | { status: 'completed'; summary: string | null; answer: string | null; suggestedActions: string[]; model: string; promptTokens: number | null; completionTokens: number | null }
  | { status: 'failed'; error: string };

/** Ends an investigation that is still in progress, and frees its subject for the next one. */
async function finish(_id: Types.ObjectId, outcome: Outcome, now: Date): Promise<boolean> {
  const result = await Investigation.updateOne(
    { _id, status: { $in: ['queued', 'running'] } },
    { $set: { ...outcome, activeKey: _id.toHexString(), completedAt: now } },
  );
  return result.modifiedCount === 1;
}

/** Marks an investigation failed unless it already ended: a job's last failed attempt, a stuck run. */
export const failInvestigation = (investigationId: string, error: string, now = new Date()) =>
  Types.ObjectId.isValid(investigationId) ? finish(new Types.ObjectId(investigationId), { status: 'failed', error }, now) : Promise.resolve(false);

async function gather(doc: InvestigationDoc, now: Date): Promise<Evidence> {
  switch (doc.kind) {
    case 'issue':
      return issueEvidence(doc.orgId, doc.subjectId, now);
    case 'alert':
      return (await alertEvidence(doc.orgId, doc.subjectId, now)).evidence;
    case 'project':
      return projectEvidence(doc.orgId, new Types.ObjectId(doc.subjectId), now);
    case 'explain':
      return topologyEvidence(doc.orgId, new Types.ObjectId(doc.subjectId), now);
  }
}

/** Parses the model's text against the answer's schema; a reason when it does not fit. */
function readAnswer(kind: InvestigationKind, content: string): { summary: string | null; answer: string | null; suggestedActions: string[] } | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return 'the model answered something that is not JSON';
  }
  if (kind === 'explain') {
    const result = explainAnswer.safeParse(parsed);
    if (!result.success) return `the model's answer does not follow the schema: ${result.error.issues[0]?.path.join('.') || 'answer'} ${result.error.issues[0]?.message}`;
    return { summary: null, answer: result.data.answer, suggestedActions: result.data.suggested_actions };
  }
  const result = findingsAnswer.safeParse(parsed);
  if (!result.success) return `the model's answer does not follow the schema: ${result.error.issues[0]?.path.join('.') || 'answer'} ${result.error.issues[0]?.message}`;
  return { summary: result.data.summary, answer: null, suggestedActions: result.data.suggested_actions };
}

/** The JSON schemas sent as Ollama's `format`, from the same zod schemas that check the answer. */
export const answerFormats = {
  findings: z.toJSONSchema(findingsAnswer),
  explain: z.toJSONSchema(explainAnswer),
};

/**
 * Runs one investigation: claims it (safe to run twice: one that already ended is skipped), gathers
 * and stores the evidence, asks the model, and stores its checked answer. Whatever the model does
 * (an error, a timeout, text that is not the schema) ends the investigation `failed` with the reason;
 * only our own failures (the store) throw, for the job to retry.
 */
export async function runInvestigation(investigationId: string, ai: AiClient | undefined, now: () => Date = () => new Date()): Promise<'completed' | 'failed' | 'skipped'> {
  const _id = new Types.ObjectId(investigationId);
  const doc = await Investigation.findOneAndUpdate(
    { _id, status: { $in: ['queued', 'running'] } },
    { $set: { status: 'running', startedAt: now() } },
    { returnDocument: 'after' },
  ).lean<InvestigationDoc>();
  if (!doc) return 'skipped';
  if (!ai) {
    await finish(_id, { status: 'failed', error: 'AI investigations are off: neither OLLAMA_HOST nor OLLAMA_API_KEY is set' }, now());
    return 'failed';
  }
  let evidence: Evidence;
  try {
    evidence = await gather(doc, now());
  } catch (error) {
    // the subject was deleted since the request (retention, an org's removal): nothing to investigate
    if ((error as { code?: string }).code === 'not_found') {
      await finish(_id, { status: 'failed', error: `the ${doc.subjectType} no longer exists` }, now());
      return 'failed';
    }
    throw error;
  }
  await Investigation.updateOne({ _id }, { $set: { evidence: JSON.stringify(evidence) } });
  const user = JSON.stringify({ task: TASKS[doc.kind], ...(doc.question !== null && { question: doc.question }), evidence });
  let reply;
  try {
    reply = await ai.chat({ system: SYSTEM_PROMPT, user, format: doc.kind === 'explain' ? answerFormats.explain : answerFormats.findings });
  } catch (error) {
    if (!(error instanceof AiError)) throw error;
    await finish(_id, { status: 'failed', error: error.message }, now());
    return 'failed';
  }
  const answer = readAnswer(doc.kind, reply.content);
  if (typeof answer === 'string') {
    await finish(_id, { status: 'failed', error: answer }, now());
    return 'failed';
  }
  await finish(_id, { status: 'completed', ...answer, model: reply.model, promptTokens: reply.promptTokens, completionTokens: reply.completionTokens }, now());
  return 'completed';
}

/** How long past the model's timeout a run may last before the sweep takes its worker for dead. */
const STUCK_GRACE_MS = 10 * 60_000;
/** A queued investigation this old never reached a worker (its job was lost). */
const NEVER_STARTED_MS = 24 * 3_600_000;

/** Fails investigations left in progress: running past every deadline, or queued for a day. */
export async function failStuckInvestigations(timeoutMs: number, now = new Date()): Promise<number> {
  const stuck = await Investigation.find({ status: { $in: ['queued', 'running'] } }, { status: 1, startedAt: 1, createdAt: 1 }).lean<InvestigationDoc[]>();
  let failed = 0;
  for (const doc of stuck) {
    const running = doc.status === 'running' && doc.startedAt !== null && now.getTime() - doc.startedAt.getTime() > timeoutMs + STUCK_GRACE_MS;
    const neverStarted = doc.status === 'queued' && now.getTime() - doc.createdAt.getTime() > NEVER_STARTED_MS;
    if (!running && !neverStarted) continue;
    const error = running ? 'the worker running the investigation stopped before it finished' : 'the investigation never started';
    if (await finish(doc._id, { status: 'failed', error }, now)) failed += 1;
  }
  return failed;
}
