import { z } from 'zod';
import { auditEntryJson, listAudit } from '../../shared/features/audit/service.js';
import { settingsJson, settingsPatchBody } from '../../shared/features/settings/schemas.js';
import { getSettings, updateSettings } from '../../shared/features/settings/service.js';
import { pageQuery } from '../../shared/paging.js';
import { defineRoute, listOf } from '../routing.js';

export const settingsRoutes = () => [
  defineRoute({
    method: 'get',
    path: '/v1/settings',
    tag: 'Settings',
    summary: 'Organization settings, including retention.',
    access: 'member',
    response: settingsJson,
    handler: ({ principal }) => getSettings(principal.orgId),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/settings',
    tag: 'Settings',
    summary: 'Change the organization name, retention (1–365 days), or the thresholds GET /v1/services/approaching watches.',
    access: 'admin',
    body: settingsPatchBody,
    response: settingsJson,
    handler: ({ principal, body, req }) => updateSettings(principal, body, req.ip),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/audit-log',
    tag: 'Settings',
    summary: 'The audit trail, newest first. Read-only.',
    access: 'admin',
    query: z.object({ ...pageQuery, action: z.string().max(100).optional() }),
    response: listOf(auditEntryJson),
    handler: ({ principal, query }) => listAudit(principal.orgId, query),
  }),
];
