import { parsePlanIncluded } from '../../shared/features/usage/plan.js';
import { usageJson, usageQuery } from '../../shared/features/usage/schemas.js';
import { usageReport } from '../../shared/features/usage/service.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../routing.js';

export const usageRoutes = (deps: Pick<ApiDeps, 'config'>) => {
  // parsed once, at boot: an unknown category in PLAN_INCLUDED stops the API from starting
  const plan = parsePlanIncluded(deps.config.PLAN_INCLUDED);
  return [
    defineRoute({
      method: 'get',
      path: '/v1/usage',
      tag: 'Billing',
      summary:
        'Usage this calendar month (UTC) per category, in total and per project, against the plan figures. Informational: exceeding a figure never throttles or drops telemetry (see `caveat`).',
      access: 'member',
      query: usageQuery,
      response: usageJson,
      handler: ({ principal, query }) => usageReport(principal.orgId, query, plan, new Date()),
    }),
  ];
};
