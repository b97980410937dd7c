import type { Types } from 'mongoose';
import { AppError, isDuplicateKey, notFound } from '../../errors.js';
import { slugify } from '../../slug.js';
import { Organization, OrganizationSlug, type OrganizationDoc } from './model.js';

/** Lower-case letters, digits, `-` and `_`, starting with a letter or digit, not only digits (those read as ids). */
export const ORGANIZATION_SLUG = /^(?!\d+$)[a-z0-9][a-z0-9_-]{0,49}$/;

const slugTaken = (slug: string) => new AppError('conflict', `the organization slug "${slug}" is taken`);

/** Takes `slug` for the organisation, or fails with conflict when another organisation holds it. */
async function claim(orgId: Types.ObjectId, slug: string): Promise<void> {
  try {
    await OrganizationSlug.create({ _id: slug, orgId });
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
    const holder = await OrganizationSlug.findById(slug).lean();
    if (!holder?.orgId.equals(orgId)) throw slugTaken(slug);
  }
}

/** The organisation's name as a slug, with a number after it when that is taken: acme, acme-2, acme-3… */
async function claimFromName(orgId: Types.ObjectId, name: string): Promise<string> {
  const base = slugify(name, { max: 40, fallback: 'organization' }).replace(/^(\d+)$/, 'org-$1');
  for (let attempt = 1; ; attempt += 1) {
    const slug = attempt === 1 ? base : `${base}-${attempt}`;
    try {
      await claim(orgId, slug);
      return slug;
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'conflict' || attempt >= 50) throw error;
    }
  }
}

/**
 * The organisation's slug. Organisations made before slugs get one from their name the first time it is
 * asked for; of two requests doing that at once, the first to set it wins and the other's claim is let go.
 */
export async function organizationSlug(org: Pick<OrganizationDoc, '_id' | 'name' | 'slug'>): Promise<string> {
  if (org.slug) return org.slug;
  const slug = await claimFromName(org._id, org.name);
  const set = await Organization.updateOne({ _id: org._id, slug: { $exists: false } }, { $set: { slug } });
  if (set.modifiedCount === 1) return slug;
  await OrganizationSlug.deleteOne({ _id: slug, orgId: org._id });
  const current = await Organization.findById(org._id, { slug: 1 }).lean<OrganizationDoc>();
  if (!current?.slug) throw notFound('organization');
  return current.slug;
}

/** Renames the organisation's slug: the new one is taken first, then set, then the old one let go. */
export async function changeOrganizationSlug(org: Pick<OrganizationDoc, '_id' | 'name' | 'slug'>, slug: string): Promise<void> {
  const previous = await organizationSlug(org);
  if (previous === slug) return;
  await claim(org._id, slug);
  await Organization.updateOne({ _id: org._id }, { $set: { slug } });
  await OrganizationSlug.deleteOne({ _id: previous, orgId: org._id });
}

/** An organisation with its slug, or undefined when it does not exist. */
export async function organizationWithSlug(orgId: Types.ObjectId): Promise<(Pick<OrganizationDoc, '_id' | 'name' | 'createdAt'> & { slug: string }) | undefined> {
  const org = await Organization.findById(orgId).lean<OrganizationDoc>();
  return org ? { _id: org._id, name: org.name, createdAt: org.createdAt, slug: await organizationSlug(org) } : undefined;
}
