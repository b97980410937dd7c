import { Router } from 'express';
import { z } from 'zod';
import { AppError } from '../../shared/errors.js';
import { explainBody, investigationJson, investigationRowJson, listInvestigationsQuery } from '../../shared/features/investigations/schemas.js';
import {
  explainTopology,
  getInvestigation,
  investigateAlert,
  investigateIssue,
  investigateProject,
  latestInvestigation,
  listInvestigations,
  type Enqueue,
} from '../../shared/features/investigations/service.js';
import { defineRoute, listOf, withErrors, type AnyRoute } from '../routing.js';

export interface InvestigationRouteDeps {
  /** OLLAMA_MODEL: recorded on each investigation when it is requested. */
  model: string;
  /** Queues an investigation's job; undefined while AI is off (the gate answers first). */
  enqueue: Enqueue | undefined;
}

const TAG = 'AI investigations';
const OFF = 'AI investigations are off: set OLLAMA_HOST or OLLAMA_API_KEY';

/**
 * Investigations are asynchronous: a POST answers 202 with the investigation `queued`, or the one
 * already queued or running for that subject; poll it until `completed` or `failed`.
 */
export const investigationRoutes = ({ model, enqueue: maybeEnqueue }: InvestigationRouteDeps): AnyRoute[] => {
  const enqueue: Enqueue = (id) => {
    if (!maybeEnqueue) throw new AppError('ai_unavailable', OFF);
    return maybeEnqueue(id);
  };
  return withErrors([
    defineRoute({
      method: 'post',
      path: '/v1/issues/{issueID}/investigate',
      tag: TAG,
      summary: "Investigate an issue from its statistics and frames, related traces, deployments and log surges around its first event, anomalies and topology. 202 with the investigation (or the one already in progress).",
      access: 'member',
      params: z.object({ issueID: z.string() }),
      status: 202,
      response: investigationJson,
      handler: ({ principal, params }) => investigateIssue(principal, params.issueID, model, enqueue),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/issues/{issueID}/investigation',
      tag: TAG,
      summary: "The issue's latest investigation.",
      access: 'member',
      params: z.object({ issueID: z.string() }),
      response: investigationJson,
      handler: ({ principal, params }) => latestInvestigation(principal.orgId, 'issue', params.issueID),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/alerts/{alertID}/investigate',
      tag: TAG,
      summary: 'Investigate an alert from its figures, its subject and what happened in its project around its opening. 202 with the investigation.',
      access: 'member',
      params: z.object({ alertID: z.string() }),
      status: 202,
      response: investigationJson,
      handler: ({ principal, params }) => investigateAlert(principal, params.alertID, model, enqueue),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/alerts/{alertID}/investigation',
      tag: TAG,
      summary: "The alert's latest investigation.",
      access: 'member',
      params: z.object({ alertID: z.string() }),
      response: investigationJson,
      handler: ({ principal, params }) => latestInvestigation(principal.orgId, 'alert', params.alertID),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/projects/{projectID}/investigate',
      tag: TAG,
      summary: "Investigate a project's current state: services health, open anomalies, recent deployments, alerts and unresolved issues. 202 with the investigation.",
      access: 'member',
      params: z.object({ projectID: z.string() }),
      status: 202,
      response: investigationJson,
      handler: ({ principal, params }) => investigateProject(principal, params.projectID, model, enqueue),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/projects/{projectID}/explain',
      tag: TAG,
      summary: "Ask a question about the project's topology (services, edges, structure); the answer is in the investigation's `answer`. 202 with the investigation.",
      access: 'member',
      params: z.object({ projectID: z.string() }),
      body: explainBody,
      status: 202,
      response: investigationJson,
      handler: ({ principal, params, body }) => explainTopology(principal, params.projectID, body.question, model, enqueue),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/investigations',
      tag: TAG,
      summary: 'Investigations, newest first, without their evidence; filter by project, kind and status.',
      access: 'member',
      query: listInvestigationsQuery,
      response: listOf(investigationRowJson),
      handler: ({ principal, query }) => listInvestigations(principal.orgId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/investigations/{investigationID}',
      tag: TAG,
      summary: 'One investigation with its evidence.',
      access: 'member',
      params: z.object({ investigationID: z.string() }),
      response: investigationJson,
      handler: ({ principal, params }) => getInvestigation(principal.orgId, params.investigationID),
    }),
  ], { 501: `ai_unavailable: ${OFF} (answered before authentication)` });
};

/**
 * While AI is off, every AI route answers 501 `ai_unavailable`, before authentication: mounted ahead
 * of it, matching the same paths (case-insensitively, as Express matches the routes themselves).
 */
export function aiUnavailableGate(routes: readonly AnyRoute[]): Router {
  const gate = Router();
  for (const route of routes) {
    gate[route.method](route.path.replace(/\{(\w+)\}/g, ':$1'), () => {
      throw new AppError('ai_unavailable', OFF);
    });
  }
  return gate;
}
