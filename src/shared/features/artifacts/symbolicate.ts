import type { Types } from 'mongoose';
import { SourceMapConsumer, type BasicSourceMapConsumer, type IndexedSourceMapConsumer } from 'source-map';
import type { BlobStore } from '../../clients/blob.js';
import type { ArtifactDoc } from './model.js';
import { normalizeDebugId } from './schemas.js';
import { artifactByNames, parseSourceMap, projectHasArtifacts, sourceMapByDebugId, sourceMappingUrlOf } from './service.js';

/**
 * JavaScript symbolication: minified frames resolved through uploaded source maps, by debug id
 * (`debug_meta.images`), else by release + dist + file name, else by the minified file's
 * `//# sourceMappingURL`. A resolved frame carries the original location and source lines, keeps the
 * minified one under `minified`, and says how it was resolved under `symbolication`; a frame that
 * could not be resolved says why, so a read can try again once the map is uploaded.
 */

type Frame = Record<string, unknown>;
type Consumer = BasicSourceMapConsumer | IndexedSourceMapConsumer;

export type FrameSymbolication =
  | { status: 'resolved'; via: 'debug_id' | 'release' | 'source_mapping_url'; artifact_id: string; source_map: string | null }
  | { status: 'missing' | 'failed'; reason: string };

export interface Symbolicator {
  /**
   * One project's events with their JavaScript frames symbolicated: a copy of each event that has a
   * frame to resolve (the input is not changed), the event itself otherwise. Frames resolved before
   * are left as they are; lookups are shared by the events of one call.
   */
  symbolicate(projectId: Types.ObjectId, events: Record<string, unknown>[]): Promise<Record<string, unknown>[]>;
}

const CONTEXT_LINES = 5;
const MAX_CONTEXT_LINE = 500;
const JS_PLATFORMS = new Set(['javascript', 'node']);
const JS_FILE = /\.(?:m?js|cjs)(?:[?#].*)?$/i;
/** Already original: TypeScript frames (Node with --enable-source-maps) and engine internals. */
const NOT_MINIFIED = /\.(?:m?ts|cts|tsx)(?:[?#].*)?$|^(?:node:|native\b|<anonymous>|\[native code\])/i;
const URL_ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i;
/** A path on the machine that ran the code (`/srv/app/index.mjs`, `C:\\app\\index.js`, `file:///…`), not a URL a browser loaded. */
const LOCAL_FILE = /^(?:\/|[a-z]:[\\/]|file:\/\/)/i;

const str = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);
const obj = (value: unknown) => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined);

// ---------------------------------------------------------------------------------------------
// Parsed maps, cached per process
// ---------------------------------------------------------------------------------------------

interface LoadedMap {
  consumer: Consumer;
  /** Each source's lines, split on first use. */
  lines: Map<string, string[] | null>;
}

/**
 * A small LRU of parsed maps, bounded by entries and by the maps' byte size. An evicted consumer's
 * wasm memory is freed; a frame still holding it only makes it parse its mappings again.
 */
class MapCache {
  private readonly entries = new Map<string, { map: Promise<LoadedMap | undefined>; bytes: number }>();
  private bytes = 0;
  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  get(key: string, size: number, load: () => Promise<LoadedMap | undefined>): Promise<LoadedMap | undefined> {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit.map;
    }
    const map = load();
    // A failed load is not kept: the next event tries again.
    map.then(
      (loaded) => loaded ?? this.drop(key),
      () => this.drop(key),
    );
    this.entries.set(key, { map, bytes: size });
    this.bytes += size;
    while (this.entries.size > 1 && (this.entries.size > this.maxEntries || this.bytes > this.maxBytes)) this.drop(this.entries.keys().next().value!);
    return map;
  }

  private drop(key: string) {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    void entry.map.then((loaded) => loaded?.consumer.destroy(), () => undefined);
  }
}

async function parseMap(text: Buffer | string): Promise<LoadedMap | undefined> {
  const raw = parseSourceMap(text);
  if (!raw) return undefined;
  const consumer = await new SourceMapConsumer(raw as never);
  return { consumer, lines: new Map() };
}

// ---------------------------------------------------------------------------------------------
// Finding a frame's map
// ---------------------------------------------------------------------------------------------

/** The names an artifact may have been uploaded under for a file: as given, without query, `~/path`, basename. */
export function nameForms(path: string): string[] {
  const bare = path.replace(/[?#].*$/s, '');
  const forms = [path, bare];
  const urlPath = URL_ORIGIN.exec(bare) ? bare.replace(URL_ORIGIN, '') : bare.startsWith('/') ? bare : undefined;
  if (urlPath) forms.push(`~${urlPath.startsWith('/') ? '' : '/'}${urlPath}`);
  const basename = bare.split('/').filter(Boolean).pop();
  if (basename) forms.push(basename);
  return [...new Set(forms)];
}

/** A `sourceMappingURL` reference resolved against the file that carries it. */
function resolveReference(reference: string, base: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(reference)) return reference;
  const tilde = base.startsWith('~/');
  try {
    const resolved = new URL(reference, tilde ? `http://tilde.invalid${base.slice(1)}` : URL_ORIGIN.test(base) ? base : `http://path.invalid${base.startsWith('/') ? '' : '/'}${base}`);
    if (tilde) return `~${resolved.pathname}`;
    if (!URL_ORIGIN.test(base)) return resolved.pathname;
    return resolved.href;
  } catch {
    return reference;
  }
}

type Lookup = { map: LoadedMap; symbolication: Extract<FrameSymbolication, { status: 'resolved' }> } | { map?: undefined; symbolication: Extract<FrameSymbolication, { status: 'missing' | 'failed' }> };

interface EventKeys {
  projectId: Types.ObjectId;
  release: string | undefined;
  dist: string | null;
  /** `debug_meta.images` of type sourcemap: code file → debug id. */
  debugIds: Map<string, string>;
}

function debugIdsOf(event: Record<string, unknown>): Map<string, string> {
  const images = obj(event.debug_meta)?.images;
  const ids = new Map<string, string>();
  for (const image of Array.isArray(images) ? images : []) {
    const record = obj(image);
    const codeFile = str(record?.code_file);
    const debugId = normalizeDebugId(str(record?.debug_id) ?? '');
    if (record?.type === 'sourcemap' && codeFile && debugId) ids.set(codeFile, debugId);
  }
  return ids;
}

export function createSymbolicator(blobs: BlobStore, options: { maxMaps?: number; maxBytes?: number } = {}): Symbolicator {
  const cache = new MapCache(options.maxMaps ?? 32, options.maxBytes ?? 256 * 1024 * 1024);

  const loadArtifact = (artifact: ArtifactDoc) =>
    cache.get(artifact._id.toHexString(), artifact.size, async () => {
      const bytes = await blobs.get(artifact.blobKey);
      return bytes ? parseMap(bytes) : undefined;
    });

  const resolved = async (artifact: ArtifactDoc, via: 'debug_id' | 'release' | 'source_mapping_url'): Promise<Lookup> => {
    const map = await loadArtifact(artifact);
    const label = artifact.name ?? artifact.debugId ?? artifact._id.toHexString();
    if (!map) return { symbolication: { status: 'failed', reason: `source map ${label} could not be read` } };
    return { map, symbolication: { status: 'resolved', via, artifact_id: artifact._id.toHexString(), source_map: artifact.name ?? null } };
  };

  /** A minified file's own reference to its map: inline (data: URL) or another artifact of the release. */
  async function viaSourceMappingUrl(keys: EventKeys, path: string, release: string): Promise<Lookup | undefined> {
    const minified = await artifactByNames(keys.projectId, release, keys.dist, nameForms(path), 'minified_source');
    if (!minified?.sourceMappingUrl) return undefined;
    if (minified.sourceMappingUrl === 'inline') {
      const map = await cache.get(`inline:${minified._id.toHexString()}`, minified.size, async () => {
        const source = (await blobs.get(minified.blobKey))?.toString('utf8');
        const dataUrl = source ? sourceMappingUrlOf(source) : undefined;
        const payload = dataUrl && /^data:[^,]*?(;base64)?,(.*)$/s.exec(dataUrl);
        if (!payload) return undefined;
        return parseMap(payload[1] ? Buffer.from(payload[2]!, 'base64') : decodeURIComponent(payload[2]!));
      });
      if (!map) return undefined;
      return { map, symbolication: { status: 'resolved', via: 'source_mapping_url', artifact_id: minified._id.toHexString(), source_map: minified.name ?? null } };
    }
    const target = resolveReference(minified.sourceMappingUrl, URL_ORIGIN.test(path) ? path : (minified.name ?? path));
    const artifact = await artifactByNames(keys.projectId, release, keys.dist, nameForms(target), 'source_map');
    return artifact ? resolved(artifact, 'source_mapping_url') : undefined;
  }

  async function lookup(keys: EventKeys, path: string, debugId: string | undefined): Promise<Lookup> {
    if (debugId) {
      const artifact = await sourceMapByDebugId(keys.projectId, debugId);
      if (artifact) return resolved(artifact, 'debug_id');
    }
    const release = keys.release;
    if (release) {
      const map = await artifactByNames(keys.projectId, release, keys.dist, nameForms(path).map((name) => `${name}.map`), 'source_map');
      if (map) return resolved(map, 'release');
      const referenced = await viaSourceMappingUrl(keys, path, release);
      if (referenced) return referenced;
    }
    return missing(path, debugId, keys);
  }

  async function symbolicateEvent(event: Record<string, unknown>, projectId: Types.ObjectId, lookups: Map<string, Promise<Lookup>>, anyArtifacts: boolean) {
    const platform = str(event.platform);
    const copy = withOwnFrames(event);
    const keys: EventKeys = { projectId, release: str(copy.release), dist: str(copy.dist) ?? null, debugIds: debugIdsOf(copy) };
    for (const frames of stacksOf(copy)) {
      // Oldest first: a frame's caller is the one before it, whose call site names the function called.
      let callerToken: string | null = null;
      for (const frame of frames) {
        if (!isCandidate(frame, platform)) {
          callerToken = null;
          continue;
        }
        const path = (str(frame.abs_path) ?? str(frame.filename))!;
        const debugId = keys.debugIds.get(path) ?? keys.debugIds.get(path.replace(/[?#].*$/s, ''));
        const key = JSON.stringify([keys.release ?? null, keys.dist, debugId ?? null, path]);
        if (!lookups.has(key)) lookups.set(key, anyArtifacts ? lookup(keys, path, debugId) : Promise.resolve(missing(path, debugId, keys)));
        const found = await lookups.get(key)!;
        // a server's own file run as it is (Node without a bundler) has no map to find: nothing to report
        if (!found.map && !debugId && LOCAL_FILE.test(path)) {
          callerToken = null;
          continue;
        }
        if (found.map) callerToken = applyMap(frame, found.map, found.symbolication, callerToken);
        else {
          frame.symbolication = found.symbolication;
          callerToken = null;
        }
      }
    }
    return copy;
  }

  return {
    async symbolicate(projectId, events) {
      const needed = events.map((event) => stacksOf(event).some((frames) => frames.some((frame) => isCandidate(frame, str(event.platform)))));
      if (!needed.includes(true)) return events;
      // A project without artifacts (most Node services) costs one query, not one per file.
      const anyArtifacts = await projectHasArtifacts(projectId);
      const lookups = new Map<string, Promise<Lookup>>();
      const out: Record<string, unknown>[] = [];
      for (const [index, event] of events.entries()) out.push(needed[index] ? await symbolicateEvent(event, projectId, lookups, anyArtifacts) : event);
      return out;
    },
  };
}

function missing(path: string, debugId: string | undefined, keys: EventKeys): Lookup {
  const { release, dist } = keys;
  const where = [debugId && `debug id ${debugId}`, release && `release ${release}${dist ? ` (dist ${dist})` : ''}`].filter(Boolean).join(' or ');
  return { symbolication: { status: 'missing', reason: `no source map for ${path}${where ? ` with ${where}` : ' (the event has no release and no debug id)'}` } };
}

// ---------------------------------------------------------------------------------------------
// Frames
// ---------------------------------------------------------------------------------------------

/**
 * The event with its stack traces copied down to each frame, the only parts symbolication changes (a
 * frame's own fields): the caller's event stays as it was, without the cost of a deep copy of the
 * whole event (its breadcrumbs, contexts and extra), which the workers paid for every event.
 */
function withOwnFrames(event: Record<string, unknown>): Record<string, unknown> {
  const ownStacktrace = (stacktrace: unknown) => {
    const trace = obj(stacktrace);
    return trace && Array.isArray(trace.frames) ? { ...trace, frames: trace.frames.map((frame: unknown) => (obj(frame) ? { ...(frame as Frame) } : frame)) } : stacktrace;
  };
  const ownException = (value: unknown) => {
    const exception = obj(value);
    return exception && exception.stacktrace !== undefined ? { ...exception, stacktrace: ownStacktrace(exception.stacktrace) } : value;
  };
  const copy = { ...event };
  const exception = event.exception;
  const chain = obj(exception);
  if (Array.isArray(exception)) copy.exception = exception.map(ownException);
  else if (chain && Array.isArray(chain.values)) copy.exception = { ...chain, values: chain.values.map(ownException) };
  if (event.stacktrace !== undefined) copy.stacktrace = ownStacktrace(event.stacktrace);
  return copy;
}

function stacksOf(event: Record<string, unknown>): Frame[][] {
  const exception = event.exception;
  const values = Array.isArray(exception) ? exception : obj(exception)?.values;
  const stacktraces = [...(Array.isArray(values) ? values.map((value) => obj(value)?.stacktrace) : []), event.stacktrace];
  return stacktraces.flatMap((stacktrace) => {
    const frames = obj(stacktrace)?.frames;
    return Array.isArray(frames) ? [frames.filter((frame): frame is Frame => !!obj(frame))] : [];
  });
}

/** A JavaScript frame with a file and a line that has not been resolved yet; library frames (`in_app: false`) are left alone. */
function isCandidate(frame: Frame, eventPlatform: string | undefined): boolean {
  if (obj(frame.symbolication)?.status === 'resolved' || frame.in_app === false) return false;
  const path = str(frame.abs_path) ?? str(frame.filename);
  if (!path || typeof frame.lineno !== 'number' || NOT_MINIFIED.test(path)) return false;
  const platform = str(frame.platform) ?? eventPlatform;
  return (platform !== undefined && JS_PLATFORMS.has(platform)) || JS_FILE.test(path);
}

/** `webpack://app/./src/a.ts` or `../src/a.ts` as a project path: `src/a.ts`. */
function displayPath(source: string): string {
  const path = source
    .replace(/^webpack:\/\/[^/]*\//, '')
    .replace(URL_ORIGIN, '')
    .replace(/^(?:\.{1,2}\/|\/)+/, '');
  return path || source;
}

function sourceLines(map: LoadedMap, source: string): string[] | null {
  if (!map.lines.has(source)) {
    const content = map.consumer.sourceContentFor(source, true);
    map.lines.set(source, content == null ? null : content.split(/\r\n|\r|\n/));
  }
  return map.lines.get(source)!;
}

const clip = (line: string) => (line.length > MAX_CONTEXT_LINE ? `${line.slice(0, MAX_CONTEXT_LINE)}…` : line);

/**
 * Resolves one frame in place. Answers the name at the frame's own position: the function this frame
 * was calling, which names its callee's function (Sentry's rule for minified names).
 */
function applyMap(frame: Frame, map: LoadedMap, symbolication: FrameSymbolication, callerToken: string | null): string | null {
  const line = frame.lineno as number;
  const column = typeof frame.colno === 'number' ? frame.colno - 1 : 0;
  let original = map.consumer.originalPositionFor({ line, column });
  if (original.source == null) original = map.consumer.originalPositionFor({ line, column, bias: SourceMapConsumer.LEAST_UPPER_BOUND });
  if (original.source == null || original.line == null) {
    frame.symbolication = { status: 'failed', reason: `the source map has no mapping for line ${line}, column ${column + 1}` };
    return null;
  }
  const minifiedFunction = str(frame.function);
  frame.minified = Object.fromEntries(
    ['filename', 'abs_path', 'function', 'module', 'lineno', 'colno'].flatMap((key) => (frame[key] !== undefined ? [[key, frame[key]]] : [])),
  );
  const lines = sourceLines(map, original.source);
  const index = original.line - 1;
  frame.abs_path = original.source;
  frame.filename = displayPath(original.source);
  delete frame.module;
  frame.lineno = original.line;
  frame.colno = (original.column ?? 0) + 1;
  // An anonymous minified function stays anonymous; a named one gets its original name when one is known.
  if (minifiedFunction) frame.function = callerToken ?? (lines ? enclosingFunction(lines, index, original.column ?? 0) : undefined) ?? minifiedFunction;
  if (lines && index < lines.length) {
    frame.context_line = clip(lines[index]!);
    frame.pre_context = lines.slice(Math.max(0, index - CONTEXT_LINES), index).map(clip);
    frame.post_context = lines.slice(index + 1, index + 1 + CONTEXT_LINES).map(clip);
  } else {
    delete frame.context_line;
    delete frame.pre_context;
    delete frame.post_context;
  }
  if (original.source.includes('/node_modules/')) frame.in_app = false;
  frame.symbolication = symbolication;
  return original.name ?? null;
}

const NOT_FUNCTIONS = new Set(['if', 'for', 'while', 'switch', 'catch', 'return', 'function', 'with', 'else']);
const DECLARATION =
  /\bfunction\s*\*?\s*([A-Za-z_$][\w$]*)\s*[<(]|([A-Za-z_$][\w$]*)\s*[:=]\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*(?::[^=;{]*)?=>|[A-Za-z_$][\w$]*\s*=>)|^[ \t]*(?:(?:public|private|protected|static|async|override|get|set)\s+)*\*?([A-Za-z_$][\w$]*)\s*\([^()]*\)\s*(?::[^{;]*)?\{/gm;

/**
 * The name of the innermost named function around a position of the original source: the last
 * declaration before it whose braces are still open there. A heuristic for frames whose caller is
 * not in the map (strings holding braces can fool it; the frame's minified name is kept beside).
 */
export function enclosingFunction(lines: string[], index: number, column: number): string | undefined {
  const before = [...lines.slice(Math.max(0, index - 400), index), (lines[index] ?? '').slice(0, column)].join('\n');
  const text = before.slice(-40_000);
  const declarations = [...text.matchAll(DECLARATION)];
  for (const match of declarations.reverse()) {
    const name = match[1] ?? match[2] ?? match[3];
    if (!name || NOT_FUNCTIONS.has(name)) continue;
    let depth = 0;
    let opened = false;
    for (const char of text.slice(match.index)) {
      if (char === '{') {
        depth += 1;
        opened = true;
      } else if (char === '}') depth -= 1;
    }
    if (opened && depth > 0) return name;
  }
  return undefined;
}
