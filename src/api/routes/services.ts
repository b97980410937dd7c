import { approachingJson, approachingQuery, dependenciesJson, serviceMapJson, servicesJson, servicesQuery, structureJson, trafficJson, trafficQuery } from '../../shared/features/services/schemas.js';
import { listDependencies, listServices, serviceMap, serviceStructure, traffic } from '../../shared/features/services/service.js';
import { approachingThresholds } from '../../shared/features/services/approaching.js';
import { viewScope } from '../../shared/views.js';
import { defineRoute } from '../routing.js';

export const serviceRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/services',
    tag: 'Services',
    summary: 'Services that served requests in the window: volume, errors, latency percentiles and health, with the rule, value and threshold behind each health reason.',
    access: 'member',
    query: servicesQuery,
    response: servicesJson,
    handler: async ({ principal, query }) => listServices(await viewScope(principal.orgId, query)),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/services/map',
    tag: 'Services',
    summary: 'The observed topology: services, databases, queues and external hosts as nodes, and the calls between them as edges.',
    access: 'member',
    query: servicesQuery,
    response: serviceMapJson,
    handler: async ({ principal, query }) => serviceMap(await viewScope(principal.orgId, query)),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/services/dependencies',
    tag: 'Services',
    summary: 'The edges of the service map as caller → callee dependencies, with their kind (http, rpc, db, messaging, other).',
    access: 'member',
    query: servicesQuery,
    response: dependenciesJson,
    handler: async ({ principal, query }) => listDependencies(await viewScope(principal.orgId, query)),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/services/structure',
    tag: 'Services',
    summary: 'Facts about the service map: entry points, leaves, cycles, single points of failure, fan-in and fan-out leaders, and the longest chain of calls.',
    access: 'member',
    query: servicesQuery,
    response: structureJson,
    handler: async ({ principal, query }) => serviceStructure(await viewScope(principal.orgId, query)),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/traffic',
    tag: 'Services',
    summary: 'Requests and errors over time by project, or by service within one project when `project` names one.',
    access: 'member',
    query: trafficQuery,
    response: trafficJson,
    handler: async ({ principal, query }) => traffic(await viewScope(principal.orgId, query), query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/services/approaching',
    tag: 'Services',
    summary: 'Service error rates, p95 latencies and configured gauges climbing toward their threshold: the least-squares slope per hour, when the line reaches the threshold, and the points it was fitted on.',
    access: 'member',
    query: approachingQuery,
    response: approachingJson,
    handler: async ({ principal, query }) => approachingThresholds(await viewScope(principal.orgId, query), query),
  }),
];
