import type { Types } from 'mongoose';
import type { z } from 'zod';
import { notFound } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { Organization, type OrganizationDoc } from '../accounts/model.js';
import { changeOrganizationSlug, organizationSlug } from '../accounts/organization-slug.js';
import { auditAs } from '../audit/service.js';
import type { settingsJson, settingsPatchBody } from './schemas.js';

const settingsJsonOf = async (org: OrganizationDoc): Promise<z.infer<typeof settingsJson>> => ({
  organization: { id: org._id.toHexString(), name: org.name, slug: await organizationSlug(org) },
  retention_days: org.retentionDays,
  thresholds: thresholdsOf(org),
});

/** The organisation's thresholds for the approaching view, defaults filled in. */
export function thresholdsOf(org: { thresholds?: { errorRate?: number | null; p95Ms?: number | null; gauges?: { name?: string | null; threshold?: number | null }[] | null } | null }) {
  return {
    error_rate: org.thresholds?.errorRate ?? 0.05,
    p95_ms: org.thresholds?.p95Ms ?? 1000,
    gauges: (org.thresholds?.gauges ?? []).map((gauge) => ({ name: gauge.name!, threshold: gauge.threshold! })),
  };
}

export async function getSettings(orgId: Types.ObjectId) {
  const org = await Organization.findById(orgId).lean<OrganizationDoc>();
  if (!org) throw notFound('organization');
  return settingsJsonOf(org);
}

export async function updateSettings(principal: MemberPrincipal, input: z.infer<typeof settingsPatchBody>, ip: string | undefined) {
  const before = await Organization.findById(principal.orgId).lean<OrganizationDoc>();
  if (!before) throw notFound('organization');
  const thresholds = input.thresholds;
  const slugBefore = await organizationSlug(before);
  if (input.slug !== undefined) await changeOrganizationSlug(before, input.slug);
  const changes = {
    ...(input.name !== undefined && { name: input.name }),
    ...(input.retention_days !== undefined && { retentionDays: input.retention_days }),
    ...(thresholds?.error_rate !== undefined && { 'thresholds.errorRate': thresholds.error_rate }),
    ...(thresholds?.p95_ms !== undefined && { 'thresholds.p95Ms': thresholds.p95_ms }),
    ...(thresholds?.gauges !== undefined && { 'thresholds.gauges': thresholds.gauges }),
  };
  const after = Object.keys(changes).length
    ? await Organization.findByIdAndUpdate(principal.orgId, { $set: changes }, { returnDocument: 'after' }).lean<OrganizationDoc>()
    : await Organization.findById(principal.orgId).lean<OrganizationDoc>();
  if (!after) throw notFound('organization');
  await auditAs(principal, ip)('settings.update', { type: 'organization', id: principal.orgId }, {
    ...(input.name !== undefined && { name: { from: before.name, to: after.name } }),
    ...(input.slug !== undefined && { slug: { from: slugBefore, to: input.slug } }),
    ...(input.retention_days !== undefined && { retention_days: { from: before.retentionDays, to: after.retentionDays } }),
    ...(thresholds && { thresholds: { from: thresholdsOf(before), to: thresholdsOf(after) } }),
  });
  return settingsJsonOf(after);
}
