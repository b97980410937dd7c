import { z } from 'zod';
import { alertJson, alertsQuery, createDestinationBody, createdDestinationJson, destinationJson, testOutcomeJson } from '../../shared/features/alerts/schemas.js';
import { createDestination, deleteDestination, listAlerts, listDestinations, sendTestAlert } from '../../shared/features/alerts/service.js';
import { putScheduleBody, previewJson, scheduleJson } from '../../shared/features/reports/schemas.js';
import { deleteSchedule, getSchedule, previewDigest, putSchedule } from '../../shared/features/reports/service.js';
import { confirmationJson, confirmationParams } from '../../shared/features/recipients/schemas.js';
import { confirmAddress } from '../../shared/features/recipients/service.js';
import { pageQuery } from '../../shared/paging.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

export const alertRoutes = (deps: ApiDeps) => {
  // email on: new addresses are sent a link to the dashboard's confirmation page
  const confirmations = deps.mailer && { mailer: deps.mailer, dashboardOrigin: deps.config.DASHBOARD_ORIGIN };
  // a test alert goes out from the API itself, through the clients the workers deliver with
  const channels = { mailer: deps.mailer, outbound: deps.outbound, secrets: deps.secrets };
  return [
    defineRoute({
      method: 'get',
      path: '/v1/alerts',
      tag: 'Alerts',
      summary: 'Alert history, newest first, with each delivery\'s status and attempts; filter by project, kind, status and a window on the opening time.',
      access: 'member',
      query: alertsQuery,
      response: listOf(alertJson),
      handler: ({ principal, query }) => listAlerts(principal.orgId, query),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/alert-destinations',
      tag: 'Alerts',
      summary: 'Where alerts are sent: webhook and Slack URLs masked after the host, secrets never shown, each email address with whether it is confirmed.',
      access: 'admin',
      query: z.object(pageQuery),
      response: listOf(destinationJson),
      handler: ({ principal, query }) => listDestinations(principal.orgId, query),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/alert-destinations',
      tag: 'Alerts',
      summary: 'Add an email (each new address is mailed a confirmation link first), webhook (signed with X-Sluice-Signature when a secret is given, or generated with generate_secret and answered once) or Slack destination, optionally for some kinds or projects only.',
      access: 'admin',
      body: createDestinationBody,
      status: 201,
      response: createdDestinationJson,
      handler: ({ principal, body, req }) => createDestination(principal, body, { confirmations, urlProblem: deps.outbound.urlProblem, secrets: deps.secrets }, req.ip),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/alert-destinations/{destinationID}/test',
      tag: 'Alerts',
      summary: 'Send a test alert to the destination now, as real alerts are delivered (signed webhook, Slack, mail to confirmed addresses, through the outbound guard), and answer the outcome: delivered or failed, with the HTTP status and error. Nothing is stored as an alert.',
      access: 'admin',
      params: z.object({ destinationID: z.string() }),
      response: testOutcomeJson,
      handler: ({ principal, params, req }) => sendTestAlert(principal, params.destinationID, channels, req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/alert-destinations/{destinationID}',
      tag: 'Alerts',
      summary: 'Remove a destination; deliveries still pending to it are dropped.',
      access: 'admin',
      params: z.object({ destinationID: z.string() }),
      status: 204,
      handler: ({ principal, params, req }) => deleteDestination(principal, params.destinationID, req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/reports/schedule',
      tag: 'Reports',
      summary: 'The digest schedule.',
      access: 'admin',
      response: scheduleJson,
      handler: ({ principal }) => getSchedule(principal.orgId),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/reports/schedule',
      tag: 'Reports',
      summary: 'Set the digest schedule: daily or weekly, at an hour and minute in a time zone, to recipients (needs SMTP_URL; each new address is mailed a confirmation link first).',
      access: 'admin',
      body: putScheduleBody,
      response: scheduleJson,
      handler: ({ principal, body, req }) => putSchedule(principal, body, confirmations, req.ip),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/reports/schedule',
      tag: 'Reports',
      summary: 'Stop the digest.',
      access: 'admin',
      status: 204,
      handler: ({ principal, req }) => deleteSchedule(principal, req.ip),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/reports/preview',
      tag: 'Reports',
      summary: 'The next digest rendered without sending: subject, HTML, text, the data behind them and the period.',
      access: 'member',
      response: previewJson,
      handler: ({ principal }) => previewDigest(principal.orgId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/email-confirmations/{token}',
      tag: 'Alerts',
      summary: 'Confirm an alert or digest address with the token from its confirmation mail (the dashboard\'s /confirm-email/{token} page calls this; no sign-in needed). Single-use; expires after 7 days.',
      access: 'public',
      params: confirmationParams,
      response: confirmationJson,
      handler: ({ params }) => confirmAddress(params.token),
    }),
  ];
};
