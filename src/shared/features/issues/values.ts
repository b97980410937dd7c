/** Reading fields of an SDK's loosely-typed event. */

/** A non-empty string, else null. */
export const str = (value: unknown) => (typeof value === 'string' && value ? value : null);
/** A plain object, else null. */
export const obj = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null);
