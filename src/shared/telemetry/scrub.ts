import type { RecordKind, RecordOf, Stamped } from './records.js';

/**
 * Data scrubbing, as Sentry's Relay does by default: credentials and card numbers that SDKs send along
 * with telemetry are replaced before anything is stored, so no role can read them back. The workers run
 * every record through `scrubRecords` before storing it; ingest stays untouched (it is the hot path).
 */

/** What a scrubbed value reads as (and what the API shows in place of an uptime monitor's header values). */
export const FILTERED = '[Filtered]';

/**
 * Name fragments that mark a field as a credential: matched case-insensitively as substrings of the
 * field's name, with `-`, `.` and spaces read as `_` (so `X-Api-Key` and `private.key` match).
 */
export const DEFAULT_SCRUBBED_NAMES = ['password', 'passwd', 'secret', 'token', 'api_key', 'apikey', 'auth', 'credentials', 'private_key', 'privatekey', 'session', 'cookie'] as const;

/** What the user fields of an error event keep unscrubbed: the identity Sentry keeps too. */
const USER_IDENTITY = new Set(['id', 'email', 'username', 'ip_address']);

/** Nesting deeper than this is filtered whole rather than walked. */
const MAX_DEPTH = 64;

/** A run of 13 to 19 digits, optionally grouped by spaces or dashes, not part of a longer word or number. */
const CARD_CANDIDATE = /(?<![0-9A-Za-z])\d(?:[ -]?\d){12,18}(?![0-9A-Za-z])/g;
/** A `key=value&…` text: a query string or a form-encoded body. */
const FORM_ENCODED = /^[^=&\s]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*$/;

export const normalizedName = (name: string) => name.toLowerCase().replace(/[-.\s]/g, '_');

function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return sum % 10 === 0;
}

/** Card numbers in a text, each replaced by `[Filtered]`; the rest of the text stays. */
export function scrubText(text: string): string {
  if (text.length < 13) return text;
  return text.replace(CARD_CANDIDATE, (run) => (passesLuhn(run.replace(/[ -]/g, '')) ? FILTERED : run));
}

class Scrubber {
  private readonly names: string[];
  constructor(extraNames: readonly string[]) {
    this.names = [...DEFAULT_SCRUBBED_NAMES, ...extraNames.map(normalizedName)];
  }

  /** Verdicts by field name: the events of a flush repeat the same few hundred names. */
  private readonly judged = new Map<string, boolean>();

  sensitive(name: string): boolean {
    let verdict = this.judged.get(name);
    if (verdict === undefined) {
      const normalized = normalizedName(name);
      verdict = this.names.some((fragment) => normalized.includes(fragment));
      this.judged.set(name, verdict);
    }
    return verdict;
  }

  /** A JSON value: fields with a credential's name are filtered whole (booleans and nulls carry none); texts lose their card numbers. */
  value(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return scrubText(value);
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return FILTERED;
    if (Array.isArray(value)) {
      // [name, value] pairs (Sentry's headers, cookies and query strings may come so) are judged by their name
      return value.map((item) =>
        Array.isArray(item) && item.length === 2 && typeof item[0] === 'string' ? [item[0], this.field(item[0], item[1], depth + 1)] : this.value(item, depth + 1),
      );
    }
    const scrubbed: Record<string, unknown> = {};
    for (const name of Object.keys(value)) {
      const field = this.field(name, (value as Record<string, unknown>)[name], depth + 1);
      // defined, not assigned: a "__proto__" key sent as data stays data
      if (name === '__proto__') Object.defineProperty(scrubbed, name, { value: field, enumerable: true, writable: true, configurable: true });
      else scrubbed[name] = field;
    }
    return scrubbed;
  }

  field(name: string, value: unknown, depth = 0): unknown {
    if (value === null || value === undefined || typeof value === 'boolean') return value;
    return this.sensitive(name) ? FILTERED : this.value(value, depth);
  }

  /** `a=1&token=x`: each parameter judged by its name. */
  formEncoded(text: string): string {
    return text
      .split('&')
      .map((parameter) => {
        const at = parameter.indexOf('=');
        const name = at < 0 ? parameter : parameter.slice(0, at);
        let decoded = name;
        try {
          decoded = decodeURIComponent(name.replace(/\+/g, ' '));
        } catch {
          // a malformed escape: judged as written
        }
        return at < 0 ? scrubText(parameter) : `${name}=${this.sensitive(decoded) ? FILTERED : scrubText(parameter.slice(at + 1))}`;
      })
      .join('&');
  }

  /** A request body sent as text: JSON and form-encoded bodies are scrubbed field by field. */
  bodyText(text: string): string {
    const trimmed = text.trim();
    if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
      try {
        return JSON.stringify(this.value(JSON.parse(trimmed)));
      } catch {
        // not JSON after all
      }
    }
    return FORM_ENCODED.test(trimmed) ? this.formEncoded(trimmed) : scrubText(text);
  }

  url(url: string): string {
    const at = url.indexOf('?');
    return at < 0 ? scrubText(url) : `${scrubText(url.slice(0, at))}?${this.formEncoded(url.slice(at + 1))}`;
  }

  attributes<T extends Record<string, unknown>>(attributes: T): T {
    return this.value(attributes) as T;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A Sentry request interface: headers, cookies, query string, body and URL; its texts are read as what they hold. */
function scrubRequest(request: Record<string, unknown>, s: Scrubber): Record<string, unknown> {
  const texts = new Map<string, (text: string) => string>([
    ['query_string', (text) => s.formEncoded(text.replace(/^\?/, ''))],
    ['data', (text) => s.bodyText(text)],
    ['url', (text) => s.url(text)],
  ]);
  return Object.fromEntries(
    Object.entries(request).map(([name, value]) => {
      const read = typeof value === 'string' ? texts.get(name) : undefined;
      return [name, read ? read(value as string) : s.field(name, value)];
    }),
  );
}

function scrubBreadcrumb(crumb: unknown, s: Scrubber): unknown {
  if (!isObject(crumb)) return crumb;
  const scrubbed = { ...crumb };
  if (crumb.data !== undefined) scrubbed.data = s.value(crumb.data);
  if (typeof crumb.message === 'string') scrubbed.message = scrubText(crumb.message);
  return scrubbed;
}

/** The local variables an SDK may attach to stack frames (Python's do by default). */
function scrubException(exception: unknown, s: Scrubber): unknown {
  if (!isObject(exception) || !isObject(exception.stacktrace) || !Array.isArray(exception.stacktrace.frames)) return exception;
  const frames = exception.stacktrace.frames.map((frame) => (isObject(frame) && frame.vars !== undefined ? { ...frame, vars: s.value(frame.vars) } : frame));
  return { ...exception, stacktrace: { ...exception.stacktrace, frames } };
}

function scrubEvent(event: Record<string, unknown>, s: Scrubber): Record<string, unknown> {
  const scrubbed = { ...event };
  if (isObject(event.request)) scrubbed.request = scrubRequest(event.request, s);
  if (event.extra !== undefined) scrubbed.extra = s.value(event.extra);
  if (event.contexts !== undefined) scrubbed.contexts = s.value(event.contexts);
  const crumbs = event.breadcrumbs;
  if (Array.isArray(crumbs)) scrubbed.breadcrumbs = crumbs.map((crumb) => scrubBreadcrumb(crumb, s));
  else if (isObject(crumbs) && Array.isArray(crumbs.values)) scrubbed.breadcrumbs = { ...crumbs, values: crumbs.values.map((crumb) => scrubBreadcrumb(crumb, s)) };
  if (isObject(event.user)) {
    scrubbed.user = Object.fromEntries(Object.entries(event.user).map(([name, value]) => [name, USER_IDENTITY.has(name) ? value : s.field(name, value)]));
  }
  const exception = event.exception;
  if (Array.isArray(exception)) scrubbed.exception = exception.map((value) => scrubException(value, s));
  else if (isObject(exception) && Array.isArray(exception.values)) scrubbed.exception = { ...exception, values: exception.values.map((value) => scrubException(value, s)) };
  return scrubbed;
}

type RecordScrubbers = { [K in RecordKind]?: (record: RecordOf<K>, s: Scrubber) => RecordOf<K> };

/** What each kind of record may carry a credential in; the kinds left out carry none (or only ids and counts). */
const byKind: RecordScrubbers = {
  errors: (record, s) => ({ ...record, event: scrubEvent(record.event, s) }),
  spans: (span, s) => ({
    ...span,
    ...(span.statusMessage !== undefined && { statusMessage: scrubText(span.statusMessage) }),
    attributes: s.attributes(span.attributes),
    events: span.events.map((event) => ({ ...event, attributes: s.attributes(event.attributes) })),
    links: span.links.map((link) => ({ ...link, attributes: s.attributes(link.attributes) })),
    // copies of attribute values read at ingest
    ...(span.http && { http: s.value(span.http) as typeof span.http }),
    ...(span.db && { db: s.value(span.db) as typeof span.db }),
  }),
  logs: (log, s) => ({
    ...log,
    body: scrubText(log.body),
    ...(log.template !== undefined && { template: scrubText(log.template) }),
    attributes: s.attributes(log.attributes),
  }),
  metrics: (point, s) => ({ ...point, attributes: s.attributes(point.attributes) }),
  feedback: (feedback) => ({ ...feedback, message: scrubText(feedback.message) }),
};

/**
 * A batch's records with their credentials filtered: the defaults, plus the field names each project
 * added (`scrub_fields`), looked up by project id.
 */
export function scrubRecords<K extends RecordKind>(kind: K, items: Stamped<RecordOf<K>>[], extraNamesOf: (projectId: string) => readonly string[]): Stamped<RecordOf<K>>[] {
  const scrub = byKind[kind] as ((record: RecordOf<K>, s: Scrubber) => RecordOf<K>) | undefined;
  if (!scrub) return items;
  const scrubbers = new Map<string, Scrubber>();
  return items.map((item) => {
    let s = scrubbers.get(item.projectId);
    if (!s) scrubbers.set(item.projectId, (s = new Scrubber(extraNamesOf(item.projectId))));
    return { ...item, record: scrub(item.record, s) };
  });
}
