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

type CursorValue = string | number | { date: string };

function encode(value: unknown, id: Types.ObjectId): string {
  const key: CursorValue = value instanceof Date ? { date: value.toISOString() } : (value as string | number);
  return Buffer.from(JSON.stringify([key, id.toHexString()])).toString('base64url');
}

function decode(cursor: string): [unknown, Types.ObjectId] {
  try {
    const [key, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [CursorValue, string];
    const value = typeof key === 'object' && key !== null ? new Date(key.date) : key;
    if (value instanceof Date && Number.isNaN(value.getTime())) throw new Error('bad date');
    return [value, new Types.ObjectId(id)];
  } catch {
    throw new AppError('invalid_request', 'cursor is not one this API issued');
  }
}

/**
 * Keyset paging on (sort field, _id): stable while documents are inserted concurrently,
 * and each page costs one indexed range read however deep the caller pages.
 */
export async function paginate<T>(
  model: Model<T>,
  filter: Record<string, unknown>,
  options: { sortField: string; direction: 1 | -1; limit: number; cursor?: string | undefined },
): Promise<Page<T>> {
  const { sortField, direction, limit } = options;
  const query: Record<string, unknown> = { ...filter };
  if (options.cursor) {
    const [value, id] = decode(options.cursor);
    const beyond = direction === -1 ? '$lt' : '$gt';
    query.$and = [{ $or: [{ [sortField]: { [beyond]: value } }, { [sortField]: value, _id: { [beyond]: id } }] }];
  }
  const docs = (await model
    .find(query)
    .sort({ [sortField]: direction, _id: direction })
    .limit(limit + 1)
    .lean()) as (T & { _id: Types.ObjectId })[];
  const items = docs.slice(0, limit);
  const last = items.at(-1);
  const nextCursor =
    docs.length > limit && last ? encode((last as Record<string, unknown>)[sortField], last._id) : null;
  return { items, nextCursor };
}

/** Parses an opaque id from a URL; anything that cannot be one of ours is simply not found. */
export function parseId(id: string, what: string): Types.ObjectId {
  if (!Types.ObjectId.isValid(id) || !/^[0-9a-f]{24}$/i.test(id)) throw new AppError('not_found', `${what} not found`);
  return new Types.ObjectId(id);
}
