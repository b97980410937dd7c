import { Types, type Model } from 'mongoose';
import { z } from 'zod';
import { AppError } from './errors.js';

export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(512).optional(),
};

export interface Page<T> {
  items: (T & { _id: Types.ObjectId })[];
  nextCursor: string | null;
}

type CursorPart = string | number | { date: string };

/** An opaque cursor from the values a page ended on (dates, strings, numbers). */
export function encodeCursor(values: unknown[]): string {
  const parts: CursorPart[] = values.map((value) => (value instanceof Date ? { date: value.toISOString() } : (value as string | number)));
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** The values of a cursor from encodeCursor; anything else is the client's mistake. */
export function decodeCursor(cursor: string, count: number): unknown[] {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as CursorPart[];
    if (!Array.isArray(parts) || parts.length !== count) throw new Error('wrong shape');
    return parts.map((part) => {
      if (typeof part !== 'object' || part === null) return part;
      const date = new Date(part.date);
      if (Number.isNaN(date.getTime())) throw new Error('bad date');
      return date;
    });
  } catch {
    throw new AppError('invalid_request', 'cursor is not one this API issued');
  }
}

/** A cursor's object id, checked like the rest of it. */
export function cursorId(value: unknown): Types.ObjectId {
  if (typeof value !== 'string' || !/^[0-9a-f]{24}$/.test(value)) throw new AppError('invalid_request', 'cursor is not one this API issued');
  return new Types.ObjectId(value);
}

/**
 * Keyset paging on (sort field, _id): stable while documents are inserted concurrently,
 * and each page costs one indexed range read however deep the caller pages.
 */
export async function paginate<T>(
  model: Model<T>,
  filter: Record<string, unknown>,
  options: { sortField: string; direction: 1 | -1; limit: number; cursor?: string | undefined; projection?: Record<string, 0> },
): Promise<Page<T>> {
  const { sortField, direction, limit } = options;
  const query: Record<string, unknown> = { ...filter };
  if (options.cursor) {
    const [value, id] = decodeCursor(options.cursor, 2);
    const beyond = direction === -1 ? '$lt' : '$gt';
    query.$and = [{ $or: [{ [sortField]: { [beyond]: value } }, { [sortField]: value, _id: { [beyond]: cursorId(id) } }] }];
  }
  const docs = (await model
    .find(query, options.projection)
    .sort({ [sortField]: direction, _id: direction })
    .limit(limit + 1)
    .lean()) as (T & { _id: Types.ObjectId })[];
  const items = docs.slice(0, limit);
  const last = items.at(-1);
  const nextCursor =
    docs.length > limit && last ? encodeCursor([(last as Record<string, unknown>)[sortField], last._id.toHexString()]) : null;
  return { items, nextCursor };
}

/** Parses an opaque id from a URL; anything that cannot be one of ours is simply not found. */
export function parseId(id: string, what: string): Types.ObjectId {
  if (!Types.ObjectId.isValid(id) || !/^[0-9a-f]{24}$/i.test(id)) throw new AppError('not_found', `${what} not found`);
  return new Types.ObjectId(id);
}

/** One page of a ranking computed whole (from rollups): the cursor is the offset of the next page. */
export function offsetPage<T>(ranked: T[], query: { cursor?: string | undefined; limit: number }): { page: T[]; next_cursor: string | null } {
  const offset = query.cursor ? Number(decodeCursor(query.cursor, 1)[0]) : 0;
  if (!Number.isInteger(offset) || offset < 0) throw new AppError('invalid_request', 'cursor is not one this API issued');
  return { page: ranked.slice(offset, offset + query.limit), next_cursor: offset + query.limit < ranked.length ? encodeCursor([offset + query.limit]) : null };
}
