import { AppError } from '../../shared/errors.js';

/**
 * Rate-limit category of each item type we know (PROTOCOLS.md), as named in `X-Sentry-Rate-Limits`.
 * The parser returns items of any type; callers skip the ones not listed here.
 */
export const itemCategories = {
  event: 'error',
  transaction: 'transaction',
  span: 'span',
  log: 'log_item',
  trace_metric: 'trace_metric',
  check_in: 'monitor',
  session: 'session',
  sessions: 'session',
  feedback: 'feedback',
  user_report: 'feedback',
  replay_event: 'replay',
  replay_recording: 'replay',
  attachment: 'attachment',
  client_report: 'internal',
  profile: 'profile',
  profile_chunk: 'profile',
  statsd: 'profile',
} as const;

export type KnownItemType = keyof typeof itemCategories;

export const knownItemTypes = Object.keys(itemCategories) as KnownItemType[];

export function isKnownItemType(type: string): type is KnownItemType {
  return Object.hasOwn(itemCategories, type);
}

export interface EnvelopeItemHeader {
  type: string;
  length?: number;
  [key: string]: unknown;
}

export interface EnvelopeItem {
  header: EnvelopeItemHeader;
  /** A view into the envelope's buffer, not a copy. */
  payload: Buffer;
}

export interface Envelope {
  header: Record<string, unknown>;
  items: EnvelopeItem[];
}

export interface EnvelopeLimits {
  /** Longest header line (envelope or item) accepted, in bytes; longer ones are refused unread. */
  maxHeaderBytes?: number;
  maxItems?: number;
}

export const DEFAULT_MAX_HEADER_BYTES = 64 * 1024;
export const DEFAULT_MAX_ITEMS = 1000;

const NEWLINE = 0x0a;

/**
 * Parses `Header { "\n" ItemHeader "\n" Payload } [ "\n" ]` as Relay does:
 * - JSON whitespace (space, tab, CR, LF) before a header is skipped, as Relay's streaming JSON reader
 *   does, so blank lines between items and after the last one are accepted.
 * - A header is the rest of its line parsed as JSON, so `\r\n` line ends are accepted after headers
 *   (Relay itself requires a bare `\n` there) and an implicit-length payload keeps its `\r`, which
 *   JSON ignores. A payload with `length` must be followed by exactly `\n` or the end of input.
 */
export function parseEnvelope(body: Buffer, limits: EnvelopeLimits = {}): Envelope {
  const maxHeaderBytes = limits.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  const maxItems = limits.maxItems ?? DEFAULT_MAX_ITEMS;

  const { header, next } = readEnvelopeHeader(body, maxHeaderBytes);

  const items: EnvelopeItem[] = [];
  let offset = skipWhitespace(body, next);
  while (offset < body.length) {
    const name = `item ${items.length + 1}`;
    if (items.length === maxItems) throw malformed(`envelope has more than ${maxItems} items`);
    const line = readHeaderLine(body, offset, maxHeaderBytes, `${name} header`);
    const itemHeader = parseItemHeader(line.text, name);
    const payloadStart = line.next;
    let payloadEnd: number;
    if (itemHeader.length === undefined) {
      const newline = body.indexOf(NEWLINE, payloadStart);
      payloadEnd = newline === -1 ? body.length : newline;
    } else {
      payloadEnd = payloadStart + itemHeader.length;
      if (payloadEnd > body.length) {
        throw malformed(`${name} (${itemHeader.type}) declares length ${itemHeader.length} but only ${body.length - payloadStart} bytes follow`);
      }
      const after = body[payloadEnd];
      if (after !== undefined && after !== NEWLINE) {
        throw malformed(`${name} (${itemHeader.type}) payload of length ${itemHeader.length} is followed by byte 0x${after.toString(16).padStart(2, '0')}, not a newline`);
      }
    }
    items.push({ header: itemHeader, payload: body.subarray(payloadStart, payloadEnd) });
    offset = skipWhitespace(body, payloadEnd + 1);
  }
  return { header, items };
}

/**
 * The envelope header alone, from the start of an envelope (its first line is enough): where a request
 * without a key in its URL or headers names its DSN, read before the rest of the body.
 */
export function parseEnvelopeHeader(head: Buffer, limits: EnvelopeLimits = {}): Record<string, unknown> {
  return readEnvelopeHeader(head, limits.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES).header;
}

function readEnvelopeHeader(body: Buffer, maxHeaderBytes: number): { header: Record<string, unknown>; next: number } {
  const start = skipWhitespace(body, 0);
  if (start === body.length) throw malformed('envelope is empty');
  const line = readHeaderLine(body, start, maxHeaderBytes, 'envelope header');
  return { header: parseHeaderJson(line.text, 'envelope header'), next: line.next };
}

/** `\u0000` written in a JSON text, not preceded by an escaped backslash (`\\u0000` is a backslash and "u0000"). */
const ESCAPED_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * JSON.parse, with every U+0000 in a text or key read as U+FFFD: the store cannot hold it (PostgreSQL's
 * jsonb under FerretDB refuses it in any text, BSON in any key), and an event is kept rather than lost for
 * one character. The search for it is all that other texts cost.
 */
export function parseTelemetryJson(text: string): unknown {
  return JSON.parse(text.includes('\\u0000') ? text.replace(ESCAPED_NUL, '$1\\ufffd') : text);
}

/** The JSON object an item carries; invalid_request when it is not JSON or not an object. */
export function parseJsonItem(item: EnvelopeItem): Record<string, unknown> {
  let value: unknown;
  try {
    value = parseTelemetryJson(item.payload.toString('utf8'));
  } catch {
    throw malformed(`${item.header.type} item is not valid JSON`);
  }
  if (!isObject(value)) throw malformed(`${item.header.type} item must be a JSON object`);
  return value;
}

function skipWhitespace(body: Buffer, offset: number): number {
  let at = offset;
  while (at < body.length && (body[at] === 0x20 || body[at] === 0x09 || body[at] === 0x0d || body[at] === NEWLINE)) at += 1;
  return at;
}

/** The header line starting at `offset`; `next` is where its payload starts (the end of input for a last header without newline). */
function readHeaderLine(body: Buffer, offset: number, maxBytes: number, name: string): { text: string; next: number } {
  // Search only a bounded window so a huge newline-free body costs no more than the limit.
  const window = body.subarray(offset, offset + maxBytes + 1);
  const newline = window.indexOf(NEWLINE);
  const length = newline === -1 ? window.length : newline;
  if (length > maxBytes) throw malformed(`${name} exceeds ${maxBytes} bytes`);
  return { text: body.toString('utf8', offset, offset + length), next: Math.min(offset + length + 1, body.length) };
}

function parseHeaderJson(text: string, name: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = parseTelemetryJson(text);
  } catch {
    throw malformed(`${name} is not valid one-line JSON`);
  }
  if (!isObject(value)) throw malformed(`${name} must be a JSON object`);
  return value;
}

function parseItemHeader(text: string, name: string): EnvelopeItemHeader {
  const { type, length, ...rest } = parseHeaderJson(text, `${name} header`);
  if (typeof type !== 'string' || type === '') throw malformed(`${name} header needs a non-empty string "type"`);
  // Relay reads `length` as an optional integer, so an explicit null means "no length".
  if (length === undefined || length === null) return { ...rest, type };
  if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
    throw malformed(`${name} (${type}) header "length" must be a non-negative integer`);
  }
  return { ...rest, type, length };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const malformed = (reason: string) => new AppError('invalid_request', `malformed envelope: ${reason}`);
