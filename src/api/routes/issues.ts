import { z } from 'zod';
import type { BlobStore } from '../../shared/clients/blob.js';
import { createSymbolicator } from '../../shared/features/artifacts/symbolicate.js';
import { feedbackJson, listFeedbackQuery, submitFeedbackBody } from '../../shared/features/feedback/schemas.js';
import { listFeedback, submitFeedback } from '../../shared/features/feedback/service.js';
import { eventJson, issueDetailJson, issueJson, issueSeriesJson, issueSeriesQuery, listIssuesQuery, updateIssueBody } from '../../shared/features/issues/schemas.js';
import { getIssue, issueSeries, listIssueEvents, listIssues, updateIssueStatus } from '../../shared/features/issues/service.js';
import { endUserJson, listEndUsers } from '../../shared/features/users/service.js';
import { pageQuery } from '../../shared/paging.js';
import { viewQuery, viewScope } from '../../shared/views.js';
import { defineRoute, listOf } from '../routing.js';

const issueParams = z.object({ issueID: z.string() });

export const issueRoutes = (blobs: BlobStore) => {
  // events stored before their source map was uploaded are symbolicated when read; parsed maps cached per process
  const symbolicator = createSymbolicator(blobs);
  return [
    defineRoute({
      method: 'get',
      path: '/v1/issues',
      tag: 'Issues',
      summary: 'Issues seen in the window, filtered (project, status, environment, release, level, text) and sorted (last_seen, first_seen, events, users).',
      access: 'member',
      query: listIssuesQuery,
      response: listOf(issueJson),
      handler: async ({ principal, query }) => listIssues(await viewScope(principal.orgId, query), query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/issues/{issueID}',
      tag: 'Issues',
      summary: 'One issue with its latest event (exception chain and frames).',
      access: 'member',
      params: issueParams,
      response: issueDetailJson,
      handler: ({ principal, params }) => getIssue(principal.orgId, params.issueID, symbolicator),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/issues/{issueID}/events',
      tag: 'Issues',
      summary: 'Occurrences of an issue, newest first: in the order the workers stored them (listed once stored, a moment before the issue counts them), a page of 100 at a time, and by their own timestamp within a page.',
      access: 'member',
      params: issueParams,
      query: z.object(pageQuery),
      response: listOf(eventJson),
      handler: ({ principal, params, query }) => listIssueEvents(principal.orgId, params.issueID, query, symbolicator),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/issues/{issueID}/series',
      tag: 'Issues',
      summary: "The issue's events per hour of the window (default: the last 24 h), counted as the workers store them.",
      access: 'member',
      params: issueParams,
      query: issueSeriesQuery,
      response: issueSeriesJson,
      handler: async ({ principal, params, query }) => {
        const { from, to } = await viewScope(principal.orgId, query);
        return issueSeries(principal.orgId, params.issueID, { from, to });
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/v1/issues/{issueID}',
      tag: 'Issues',
      summary: 'Resolve, ignore (optionally until a time or a number of further events) or reopen an issue.',
      access: 'member',
      params: issueParams,
      body: updateIssueBody,
      response: issueJson,
      handler: ({ principal, params, body }) => updateIssueStatus(principal.orgId, params.issueID, body),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/users',
      tag: 'Issues',
      summary: 'End users seen in telemetry within the window, most recent first.',
      access: 'member',
      query: z.object({ ...pageQuery, ...viewQuery }),
      response: listOf(endUserJson),
      handler: async ({ principal, query }) => listEndUsers(await viewScope(principal.orgId, query), query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/feedback',
      tag: 'Issues',
      summary: 'User feedback received within the window, newest first.',
      access: 'member',
      query: listFeedbackQuery,
      response: listOf(feedbackJson),
      handler: async ({ principal, query }) => listFeedback(await viewScope(principal.orgId, query), query),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/feedback',
      tag: 'Issues',
      summary: 'Submit user feedback, with a session, an API key or `Authorization: DSN <public key>`.',
      access: 'member+dsn',
      body: submitFeedbackBody,
      status: 201,
      response: feedbackJson,
      handler: ({ principal, body }) => submitFeedback(principal, body),
    }),
  ];
};
