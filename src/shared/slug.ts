/** A URL-safe name: lower-case letters, digits and single dashes, or the fallback when nothing is left. */
export const slugify = (name: string, { max, fallback }: { max: number; fallback: string }) =>
  name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9_]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, max) || fallback;
