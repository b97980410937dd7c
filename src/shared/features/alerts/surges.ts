import { Types } from 'mongoose';
import { Organization } from '../accounts/model.js';
import { endpointSurgesQuery } from '../endpoints/schemas.js';
import { endpointSurges } from '../endpoints/service.js';
import { logSurgesQuery } from '../logs/schemas.js';
import { logSurges } from '../logs/service.js';
import { syncConditionAlerts } from './service.js';

/** The window surge alerts judge, against the window of equal length before it (the surge views' rules). */
const SURGE_ALERT_WINDOW_MS = 15 * 60_000;

const onlyProject = (ids: string[]) => (ids.length === 1 ? new Types.ObjectId(ids[0]) : null);

/**
 * Endpoint and log surges as alerts: every tick judges the last 15 minutes of each organisation
 * with the surge views' rules; a surge opens an alert while it lasts and resolves it when it ends.
 */
export async function detectSurgeAlerts(now = Date.now()): Promise<{ opened: number; resolved: number }> {
  const at = new Date(now);
  const totals = { opened: 0, resolved: 0 };
  for await (const org of Organization.find({}, { _id: 1 }).lean().cursor()) {
    const scope = { orgId: org._id, projectIds: undefined, from: new Date(now - SURGE_ALERT_WINDOW_MS), to: at };
    const [endpoints, logs] = await Promise.all([endpointSurges(scope, endpointSurgesQuery.parse({})), logSurges(scope, logSurgesQuery.parse({}))]);
    const results = await Promise.all([
      syncConditionAlerts(
        org._id,
        'endpoint.surge',
        endpoints.data.map((surge) => ({
          subjectType: 'endpoint',
          subjectId: [surge.service, surge.method ?? '', surge.route].join(' ').replace(/\s+/g, ' '),
          projectId: onlyProject(surge.project_ids),
          title: `Surge on ${surge.method ? `${surge.method} ` : ''}${surge.route} (${surge.service})`,
          details: { service: surge.service, route: surge.route, requests: surge.requests, baseline_requests: surge.baseline_requests, reasons: surge.reasons.join('; ') },
        })),
        at,
      ),
      syncConditionAlerts(
        org._id,
        'log.surge',
        logs.data.map((surge) => ({
          subjectType: surge.kind === 'pattern' ? 'log_pattern' : 'service',
          subjectId: surge.pattern_id ?? surge.service ?? surge.services.join(','),
          projectId: null,
          title: surge.kind === 'pattern' ? `Log surge: "${surge.pattern}"` : `Log surge in ${surge.service}`,
          details: { observed: surge.observed, baseline: surge.baseline, new_pattern: surge.new_pattern, reason: surge.reason },
        })),
        at,
      ),
    ]);
    for (const result of results) {
      totals.opened += result.opened;
      totals.resolved += result.resolved;
    }
  }
  return totals;
}
