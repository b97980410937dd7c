import { createHash } from 'node:crypto';

/**
 * Groups Sentry error events into issues the way Sentry's "newstyle" grouping does, in outline:
 * an explicit fingerprint, else the stack trace, else exception type + value, else the message.
 * Pure functions over the raw event as sent by SDKs, so every field is read defensively.
 * `threads` are deliberately not used: only exceptions and a top-level stacktrace group.
 */

export interface SentryFrameLike {
  filename?: string | null;
  abs_path?: string | null;
  function?: string | null;
  module?: string | null;
  lineno?: number | null;
  colno?: number | null;
  in_app?: boolean | null;
  context_line?: string | null;
  platform?: string | null;
}

export interface SentryStacktraceLike {
  frames?: SentryFrameLike[] | null;
}

export interface SentryExceptionLike {
  type?: string | null;
  value?: string | null;
  mechanism?: { synthetic?: boolean | null } | null;
  stacktrace?: SentryStacktraceLike | null;
}

export interface SentryEventLike {
  platform?: string | null;
  transaction?: string | null;
  fingerprint?: (string | number)[] | null;
  /** Relay accepts the `{ values }` object and a bare array alike. */
  exception?: { values?: SentryExceptionLike[] | null } | SentryExceptionLike[] | null;
  /** Present on message events sent with `attachStacktrace`. */
  stacktrace?: SentryStacktraceLike | null;
  logentry?: { message?: string | null; formatted?: string | null } | null;
  message?: string | { message?: string | null; formatted?: string | null } | null;
}

export type GroupingKind = 'fingerprint' | 'stacktrace' | 'exception' | 'message';

export interface Grouping {
  /** 32 hex characters, like Sentry's group hashes. */
  hash: string;
  /** What was hashed, in order, labelled so a user can see why two events share an issue. */
  components: string[];
  kind: GroupingKind;
}

// ---------------------------------------------------------------------------------------------
// Message normalisation
// ---------------------------------------------------------------------------------------------

/** Relay trims messages and exception values to this length; it also bounds the regex work per event. */
const MAX_NORMALIZED_INPUT = 8192;

const HEX16 = '[0-9a-fA-F]{1,4}';
const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = `(?:${OCTET}\\.){3}${OCTET}`;
const IPV6_FORMS = [
  // IPv4-mapped and -embedded forms first, so the trailing dotted quad is not cut short.
  `::(?:ffff(?::0{1,4})?:)?${IPV4}`,
  `(?:${HEX16}:){1,4}:${IPV4}`,
  `(?:${HEX16}:){7}${HEX16}`,
  `(?:${HEX16}:){1,7}:`,
  ...[1, 2, 3, 4, 5, 6].map((left) => `(?:${HEX16}:){1,${left}}(?::${HEX16}){1,${7 - left}}`),
  // Leading `::` needs at least one group: a bare `::` is far more often punctuation than an address.
  `:(?::${HEX16}){1,7}`,
];
const MONTH = '(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)';
const WEEKDAY = '(?:Mon(?:day)?|Tue(?:sday)?|Wed(?:nesday)?|Thu(?:rsday)?|Fri(?:day)?|Sat(?:urday)?|Sun(?:day)?)';
const CLOCK = '(?:[01]?\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:[.,]\\d+)?)?';
const ZONE = '(?:Z|[+-][0-2]\\d(?::?[0-5]\\d)?)';
const NAMED_ZONE = `(?:GMT[+-]\\d{4}(?:\\s\\([^)]*\\))?|GMT|UTC|UT|[ECMP][SD]T|[+-]\\d{4})`;
const DATE_FORMS = [
  // ISO-8601 / RFC 3339, extended and basic, with optional time and offset.
  `\\d{4}-[01]\\d-[0-3]\\d(?:[T ]${CLOCK}${ZONE}?)?`,
  `\\d{8}T\\d{6}(?:[.,]\\d+)?${ZONE}?`,
  // 01/02/2024, 2024/01/02, optionally with a time.
  `(?:\\d{1,2}/\\d{1,2}/(?:\\d{4}|\\d{2})|\\d{4}/\\d{1,2}/\\d{1,2})(?:[ T]${CLOCK})?`,
  // RFC 1123/2822 ("Tue, 02 Jan 2024 10:00:00 GMT") and "2 January 2024".
  `(?:${WEEKDAY},?\\s)?\\d{1,2}\\s${MONTH}\\s\\d{4}(?:\\s${CLOCK}(?:\\s${NAMED_ZONE})?)?`,
  // JavaScript Date#toString ("Tue Jan 02 2024 10:00:00 GMT+0000 (…)") and "Jan 2, 2024".
  `(?:${WEEKDAY},?\\s)?${MONTH}\\s\\d{1,2}(?:st|nd|rd|th)?,?\\s\\d{4}(?:\\s${CLOCK}(?:\\s${NAMED_ZONE})?)?`,
  // A bare clock time; not after a digit, colon or dot, so `app.js:10:15` stays line and column.
  `(?<![\\d:.])${CLOCK}(?:\\s?[AaPp][Mm]\\b)?(?![\\d:])`,
];
/** Common TLDs only: without a list, `this.state` or `main.js` would look like host names. */
const TLDS = ['com', 'net', 'org', 'edu', 'gov', 'io', 'dev', 'app', 'co', 'uk', 'us', 'de', 'fr', 'jp', 'cn', 'ru', 'br', 'au', 'ca', 'nl', 'es', 'eu', 'ch', 'se', 'pl', 'info', 'biz', 'xyz', 'cloud', 'local', 'internal'];

/**
 * One alternation tried left to right at each position, earlier patterns winning ties, so the
 * specific patterns claim their text before the generic numbers can split it. Patterns that can
 * scan far only start at a token boundary, which keeps the whole pass linear in the input.
 */
const PLACEHOLDERS: [name: string, pattern: string][] = [
  ['email', '(?<![\\w.%+-])[\\w.%+-]+@[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*\\.[A-Za-z]{2,}\\b'],
  // Trailing punctuation is the sentence's, not the URL's.
  ['url', '(?<![\\w+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\\s\'"`<>]*[^\\s\'"`<>.,;:!?)\\]}]'],
  ['hostname', `(?<![\\w.-])(?:[A-Za-z0-9-]{1,63}\\.)+(?:${TLDS.join('|')}|${TLDS.join('|').toUpperCase()})\\b(?![.-]\\w)`],
  ['ip', `(?<![\\w:])(?:${IPV6_FORMS.join('|')})(?:%[\\w.]+)?(?![\\w:]|\\.\\d)|(?<![\\w.])${IPV4}(?![\\w]|\\.\\d)`],
  ['uuid', '\\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\\b'],
  // SHA-1 (40) and MD5 (32).
  ['hash', '\\b(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{32})\\b'],
  ['date', `(?<![\\w/-])(?:${DATE_FORMS.join('|')})(?![\\w/])`],
  // Without `0x`, only single-case runs with a digit: mixed case is usually an identifier.
  ['hex', '\\b0[xX][0-9a-fA-F]+\\b|\\b(?=[a-f]*\\d)[0-9a-f]{8,}\\b|\\b(?=[A-F]*\\d)[0-9A-F]{8,}\\b'],
  // A dash is a minus sign only when it does not join two words (`abc-123`). Numbers must start a
  // word (`user42` is a name) but may carry a unit (`1.25s`, `500ms`).
  ['float', '(?:(?<!\\w)-)?\\b\\d+\\.\\d+(?:[eE][+-]?\\d+)?'],
  ['int', '(?:(?<!\\w)-)?\\b\\d+'],
];
const PLACEHOLDER_RE = new RegExp(PLACEHOLDERS.map(([name, pattern]) => `(?<${name}>${pattern})`).join('|'), 'g');

/**
 * The first two non-empty lines of a message, with event-specific values (ids, addresses, times,
 * numbers) replaced by `<email>`, `<url>`, `<hostname>`, `<ip>`, `<uuid>`, `<hash>`, `<date>`,
 * `<hex>`, `<float>`, `<int>`, so messages that differ only in such values group together.
 */
export function normalizeMessage(message: string, placeholder: (name: string) => string = (name) => `<${name}>`): string {
  const lines = message
    .slice(0, MAX_NORMALIZED_INPUT)
    .split(/\r\n|\r|\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .slice(0, 2);
  return lines.join('\n').replace(PLACEHOLDER_RE, (...args: unknown[]) => {
    const groups = args[args.length - 1] as Record<string, string | undefined>;
    const name = PLACEHOLDERS.find(([candidate]) => groups[candidate] !== undefined)?.[0];
    return placeholder(name!);
  });
}

// ---------------------------------------------------------------------------------------------
// Reading the loosely-typed event
// ---------------------------------------------------------------------------------------------

const text = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function exceptionsOf(event: SentryEventLike): SentryExceptionLike[] {
  const exception: unknown = event.exception;
  const values: unknown = Array.isArray(exception) ? exception : isObject(exception) ? exception.values : undefined;
  return Array.isArray(values) ? values.filter(isObject) : [];
}

function framesOf(stacktrace: unknown): SentryFrameLike[] {
  const frames: unknown = isObject(stacktrace) ? stacktrace.frames : undefined;
  return Array.isArray(frames) ? frames.filter(isObject) : [];
}

/** The text that identifies a message event: the template when the SDK sent one, so parameters never split issues. */
function messageTemplate(event: SentryEventLike): string | undefined {
  const { logentry, message } = event;
  if (isObject(logentry)) {
    const found = text(logentry.message) ?? text(logentry.formatted);
    if (found) return found;
  }
  if (isObject(message)) return text(message.message) ?? text(message.formatted);
  return text(message);
}

/** The text a user would read: the formatted message. */
function formattedMessage(event: SentryEventLike): string | undefined {
  const { logentry, message } = event;
  const logentryText = isObject(logentry) ? (text(logentry.formatted) ?? text(logentry.message)) : undefined;
  if (isObject(message)) return logentryText ?? text(message.formatted) ?? text(message.message);
  return logentryText ?? text(message);
}

// ---------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------

const JS_PLATFORMS = new Set(['javascript', 'node']);
/** Platforms whose source lines are trustworthy enough to group on (Sentry's list). */
const CONTEXT_LINE_PLATFORMS = new Set(['javascript', 'node', 'python', 'ruby', 'php']);
/** Longer lines are almost always minified bundles, whose text changes with every build. */
const MAX_CONTEXT_LINE = 120;
const IGNORED_FILENAMES = new Set(['<anonymous>', '[native code]', 'native', 'native code', 'eval code']);
const IGNORED_FUNCTIONS = new Set(['?', '<anonymous>', '<anonymous function>', 'Anonymous function']);
const URL_ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i;
/** Bundler output names whose content hash is stripped: `main.3f2a1b9c.js`, `index-BxKq3w9a.js`. */
const BUNDLE_EXTENSION = /\.(?:m?js|cjs|jsx|tsx?|css)$/;

function looksLikeBuildHash(part: string): boolean {
  if (!/\d/.test(part)) return false;
  // webpack's hex [contenthash], or Rollup/Vite's 8-character base64url [hash] (already lower-cased here).
  return /^[0-9a-f]{6,}$/.test(part) || (/^[a-z0-9_-]{8}$/.test(part) && /[a-z]/.test(part));
}

function withoutBuildHash(basename: string): string {
  const extension = BUNDLE_EXTENSION.exec(basename)?.[0];
  if (!extension) return basename;
  const stem = basename
    .slice(0, -extension.length)
    .split('.')
    .filter((part) => !looksLikeBuildHash(part))
    .join('.')
    .replace(/-([a-z0-9_-]{8}|[0-9a-f]{6,})$/, (suffix, hash: string) => (looksLikeBuildHash(hash) ? '' : suffix));
  return `${stem || '<hash>'}${extension}`;
}

/** A frame's file as Sentry groups it: the lower-cased basename, without URL origin, query or build hash. */
function fileComponent(frame: SentryFrameLike): string | undefined {
  const raw = text(frame.filename) ?? text(frame.abs_path);
  if (!raw || IGNORED_FILENAMES.has(raw.trim())) return undefined;
  const path = raw.trim().replace(URL_ORIGIN, '').replace(/[?#].*$/s, '');
  const basename = path.split(/[/\\]/).filter((segment) => segment !== '').pop()?.toLowerCase();
  if (!basename || IGNORED_FILENAMES.has(basename)) return undefined;
  return withoutBuildHash(basename);
}

/** JS engines disagree on receivers (`Object.foo`, `Foo.foo`, `foo`), so only the last name part counts there. */
function functionComponent(frame: SentryFrameLike, js: boolean): string | undefined {
  let name = text(frame.function)?.trim();
  if (!name) return undefined;
  if (js) {
    // V8's `Foo.bar [as baz]` alias and `async`/`new` markers vary with how the function was called.
    name = name.replace(/\s*\[as [^\]]*\]$/, '').replace(/^(?:async\s+|new\s+)+/, '');
    name = name.slice(name.lastIndexOf('.') + 1);
    // Firefox names anonymous functions after their parent (`foo/<`); other engines leave them unnamed.
    if (name.endsWith('/<')) return undefined;
  }
  return name && !IGNORED_FUNCTIONS.has(name) ? name : undefined;
}

function contextLineComponent(frame: SentryFrameLike): string | undefined {
  // Measured after collapsing whitespace, so re-indenting code cannot flip whether a line counts.
  const line = text(frame.context_line)?.trim().replace(/\s+/g, ' ');
  return line && line.length <= MAX_CONTEXT_LINE ? line : undefined;
}

/** One frame's contribution, or undefined when it has nothing stable to offer. Line and column are never part of it. */
function frameComponent(frame: SentryFrameLike, eventPlatform: string | undefined): string | undefined {
  const platform = text(frame.platform) ?? eventPlatform;
  const location = text(frame.module)?.trim() ?? fileComponent(frame);
  const fn = functionComponent(frame, platform !== undefined && JS_PLATFORMS.has(platform));
  if (location === undefined && fn === undefined) return undefined;
  const context = platform !== undefined && CONTEXT_LINE_PLATFORMS.has(platform) ? contextLineComponent(frame) : undefined;
  // JSON keeps the three parts apart whatever characters they contain.
  return `frame:${JSON.stringify([location ?? null, fn ?? null, context ?? null])}`;
}

/** Frames as they group: only in-app ones when the event has any, with direct recursion counted once. */
function stacktraceComponents(frames: SentryFrameLike[], inAppOnly: boolean, eventPlatform: string | undefined): string[] {
  const components: string[] = [];
  for (const frame of frames) {
    if (inAppOnly && frame.in_app !== true) continue;
    const component = frameComponent(frame, eventPlatform);
    // Compared on what is hashed (not line numbers), so recursion depth never changes the hash.
    if (component !== undefined && component !== components[components.length - 1]) components.push(component);
  }
  return components;
}

// ---------------------------------------------------------------------------------------------
// Grouping
// ---------------------------------------------------------------------------------------------

function defaultGrouping(event: SentryEventLike): { components: string[]; kind: Exclude<GroupingKind, 'fingerprint'> } {
  const platform = text(event.platform);
  const exceptions = exceptionsOf(event);
  const topFrames = framesOf(event.stacktrace);
  // Decided once for the whole event (Sentry's "app" variant): library frames never split an issue
  // as soon as any application frame is known.
  const inAppOnly = [...exceptions.flatMap((exception) => framesOf(exception.stacktrace)), ...topFrames].some((frame) => frame.in_app === true);

  const components: string[] = [];
  let hasStacktrace = false;
  for (const exception of exceptions) {
    const frames = stacktraceComponents(framesOf(exception.stacktrace), inAppOnly, platform);
    for (const frame of frames) components.push(frame);
    if (frames.length > 0) hasStacktrace = true;
    const type = text(exception.type)?.trim();
    // Synthetic exceptions get an SDK-invented type (e.g. for a thrown non-Error), which says nothing about the bug.
    const synthetic = isObject(exception.mechanism) && exception.mechanism.synthetic === true;
    if (type && !synthetic) components.push(`type:${type}`);
    // The value usually carries event-specific detail, so it is only the fallback when this exception has no frames.
    const value = frames.length === 0 ? text(exception.value) : undefined;
    if (value) components.push(`value:${normalizeMessage(value)}`);
  }
  if (components.length > 0) return { components, kind: hasStacktrace ? 'stacktrace' : 'exception' };

  const frames = stacktraceComponents(topFrames, inAppOnly, platform);
  if (frames.length > 0) return { components: frames, kind: 'stacktrace' };

  return { components: [`message:${normalizeMessage(messageTemplate(event) ?? '')}`], kind: 'message' };
}

const DEFAULT_FINGERPRINT_VARIABLE = /^\{\{\s*default\s*\}\}$/;

function fingerprintEntries(event: SentryEventLike): string[] {
  const fingerprint: unknown = event.fingerprint;
  if (!Array.isArray(fingerprint)) return [];
  return fingerprint.flatMap((entry: unknown) => {
    if (typeof entry === 'string') return [entry];
    // Relay stringifies numbers in fingerprints; anything else is dropped.
    if (typeof entry === 'number' && Number.isFinite(entry)) return [String(entry)];
    return [];
  });
}

/** MD5 is only an identifier here (as in Sentry), and JSON encoding makes the component list unambiguous. */
const hashComponents = (components: string[]) => createHash('md5').update(JSON.stringify(components)).digest('hex');

/** The issue an event belongs to: events with the same hash are the same issue. */
export function groupingHash(event: SentryEventLike): Grouping {
  const fingerprint = fingerprintEntries(event);
  const isDefault = (entry: string) => DEFAULT_FINGERPRINT_VARIABLE.test(entry.trim());
  if (fingerprint.length === 0 || fingerprint.every(isDefault)) {
    const { components, kind } = defaultGrouping(event);
    return { hash: hashComponents(components), components, kind };
  }
  let defaults: string[] | undefined;
  const components = fingerprint.flatMap((entry) => {
    if (!isDefault(entry)) return [`fingerprint:${entry}`];
    defaults ??= defaultGrouping(event).components;
    return defaults;
  });
  return { hash: hashComponents(components), components, kind: 'fingerprint' };
}

// ---------------------------------------------------------------------------------------------
// Display
// ---------------------------------------------------------------------------------------------

const TITLE_VALUE_LENGTH = 200;

function firstLineTruncated(value: string, length: number): string {
  const line = value.split(/\r\n|\r|\n/).find((candidate) => candidate.trim() !== '')?.trim() ?? '';
  // By code point, so a cut never leaves half a surrogate pair.
  const chars = Array.from(line);
  return chars.length > length ? `${chars.slice(0, length).join('')}…` : line;
}

/** `Type: value` of the newest exception, else the message; what the issue list shows. */
export function issueTitle(event: SentryEventLike): string {
  const exception = exceptionsOf(event).at(-1);
  const type = text(exception?.type)?.trim();
  const value = text(exception?.value);
  // SDK 11 sends captureMessage as a typeless synthetic exception: its value is the message itself.
  if (value && !type && exception?.mechanism?.synthetic) return firstLineTruncated(value, TITLE_VALUE_LENGTH);
  if (value) return `${type ?? 'Error'}: ${firstLineTruncated(value, TITLE_VALUE_LENGTH)}`;
  if (type) return type;
  const message = formattedMessage(event);
  return message ? firstLineTruncated(message, TITLE_VALUE_LENGTH) : '<unlabeled event>';
}

/** The newest exception's frames (or the message's stack trace), oldest first and crashing frame last, as Sentry stores them. */
export function crashingFrames(event: SentryEventLike): SentryFrameLike[] {
  const exceptions = exceptionsOf(event);
  return exceptions.length > 0 ? framesOf(exceptions.at(-1)?.stacktrace) : framesOf(event.stacktrace);
}

/** Where the event happened: its transaction, else the crashing in-app frame (the newest frame when none is marked in-app). */
export function culprit(event: SentryEventLike): string | null {
  const transaction = text(event.transaction)?.trim();
  if (transaction) return transaction;
  const frames = crashingFrames(event);
  const frame = frames.findLast((candidate) => candidate.in_app === true) ?? frames.at(-1);
  if (!frame) return null;
  const fn = text(frame.function)?.trim();
  const name = fn && !IGNORED_FUNCTIONS.has(fn) ? fn : undefined;
  const location = (text(frame.module) ?? text(frame.filename) ?? text(frame.abs_path))?.trim();
  if (name && location) return `${name} (${location})`;
  return name ?? location ?? null;
}
