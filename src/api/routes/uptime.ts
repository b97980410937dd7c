import { z } from 'zod';
import { createMonitorBody, listMonitorsQuery, monitorJson, probeResultJson, updateMonitorBody } from '../../shared/features/uptime/schemas.js';
import { createMonitor, deleteMonitor, getMonitor, listMonitors, listProbeResults, updateMonitor } from '../../shared/features/uptime/service.js';
import { pageQuery } from '../../shared/paging.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute, listOf } from '../routing.js';

const monitorParams = z.object({ monitorID: z.string() });

export const uptimeRoutes = (deps: ApiDeps) => [
  defineRoute({
    method: 'get',
    path: '/v1/uptime/monitors',
    tag: 'Uptime',
    summary: 'List uptime monitors, oldest first; filter by project and state (pending, up, down, paused).',
    access: 'member',
    query: listMonitorsQuery,
    response: listOf(monitorJson),
    handler: ({ principal, query }) => listMonitors(principal.orgId, query),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/uptime/monitors',
    tag: 'Uptime',
    summary: 'Create an HTTP monitor; its first probe runs within seconds. Private, loopback and metadata addresses are refused. Header values are sealed at rest and read back as "[Filtered]".',
    access: 'member',
    body: createMonitorBody,
    status: 201,
    response: monitorJson,
    handler: ({ principal, body, req }) => createMonitor(principal, body, deps, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/uptime/monitors/{monitorID}',
    tag: 'Uptime',
    summary: 'One uptime monitor.',
    access: 'member',
    params: monitorParams,
    response: monitorJson,
    handler: ({ principal, params }) => getMonitor(principal.orgId, params.monitorID),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/uptime/monitors/{monitorID}',
    tag: 'Uptime',
    summary: 'Change a monitor, or pause and resume it (a new URL is probed at once). A header sent with the value "[Filtered]" keeps its stored value.',
    access: 'member',
    params: monitorParams,
    body: updateMonitorBody,
    response: monitorJson,
    handler: ({ principal, params, body, req }) => updateMonitor(principal, params.monitorID, body, deps, req.ip),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/uptime/monitors/{monitorID}',
    tag: 'Uptime',
    summary: 'Delete a monitor and its probe results.',
    access: 'member',
    params: monitorParams,
    status: 204,
    handler: ({ principal, params, req }) => deleteMonitor(principal, params.monitorID, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/uptime/monitors/{monitorID}/checks',
    tag: 'Uptime',
    summary: 'Probe results, newest first: status code, latency, error and the days the TLS certificate has left.',
    access: 'member',
    params: monitorParams,
    query: z.object(pageQuery),
    response: listOf(probeResultJson),
    handler: ({ principal, params, query }) => listProbeResults(principal.orgId, params.monitorID, query),
  }),
];
