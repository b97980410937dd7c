/**
 * The write side of logs: the workers' storing of log lines (each with its words, for search), their
 * patterns (the SDK's template or a Drain template, drain.ts) and registry, and their per-minute counts.
 * The reads are in service.ts.
 */
import { Types } from 'mongoose';
import { sha256 } from '../../secrets.js';
import type { LogRecord, Stamped } from '../../telemetry/records.js';
import { RollupBatch } from '../../telemetry/rollups.js';
import { attributePairs, contentId, insertNew, upsertAll } from '../../telemetry/storage.js';
import { epochMinuteOf } from '../../telemetry/time-buckets.js';
import { placeLine, templateText, wordsOf, type Template } from './drain.js';
import { Log, LogPattern, LogRollup, LogRollupHourly } from './model.js';

/** Bounds on a log's token array, which is indexed: enough words to find a line, not a whole payload. */
const MAX_TOKENS = 64;
const MAX_TOKEN_LENGTH = 64;
const TOKEN = /[\p{L}\p{N}_]+/gu;

/**
 * The distinct lower-cased words of a text, in order of appearance, each cut to MAX_TOKEN_LENGTH
 * code points. Log search tokenizes its query the same way.
 */
export function logTokens(text: string): string[] {
  const tokens = new Set<string>();
  for (const [word] of text.toLowerCase().matchAll(TOKEN)) {
    if (tokens.size === MAX_TOKENS) break;
    tokens.add(word.length > MAX_TOKEN_LENGTH ? Array.from(word).slice(0, MAX_TOKEN_LENGTH).join('') : word);
  }
  return [...tokens];
}

/** How long a worker trusts its copy of a group's templates before reading other workers' additions. */
const TEMPLATES_FRESH_MS = 60_000;
/** Groups whose templates a worker keeps in memory; past this the copy starts over. */
const MAX_CACHED_GROUPS = 10_000;
const templateCache = new Map<string, { templates: Template[]; loadedAt: number }>();

/** A project's templates of a group, from this worker's copy or, when stale, from the pattern registry. */
async function templatesOf(projectId: string, group: string): Promise<Template[]> {
  const key = `${projectId}\n${group}`;
  const cached = templateCache.get(key);
  if (cached && Date.now() - cached.loadedAt < TEMPLATES_FRESH_MS) return cached.templates;
  const stored = await LogPattern.find({ projectId: new Types.ObjectId(projectId), group }, { patternId: 1, pattern: 1 }).lean();
  // another job of this worker may have loaded the group meanwhile: keep its (possibly widened) copy
  const again = templateCache.get(key);
  if (again && again !== cached) return again.templates;
  if (templateCache.size >= MAX_CACHED_GROUPS) templateCache.clear();
  const templates = stored.map((doc) => ({ id: doc.patternId, words: doc.pattern.split(' ') }));
  templateCache.set(key, { templates, loadedAt: Date.now() });
  return templates;
}

interface Placed {
  patternId: string;
  pattern: string;
  group: string | null;
  /** The template was created or widened by this batch. */
  changed: boolean;
}

/**
 * Each log's pattern: the SDK's own template when it sent one (`sentry.message.template`), else
 * the Drain template (drain.ts) its masked words join among its project's.
 */
async function placeLogs(items: Stamped<LogRecord>[]): Promise<Placed[]> {
  const lines = items.map((item) => (item.record.template === undefined ? wordsOf(item.record.body) : undefined));
  const groups = new Map<string, Template[]>();
  await Promise.all(
    [...new Set(items.flatMap((item, index) => (lines[index] ? [`${item.projectId}\n${lines[index].group}`] : [])))].map(async (key) => {
      const [projectId, group] = key.split('\n') as [string, string];
      groups.set(key, await templatesOf(projectId, group));
    }),
  );
  return items.map((item, index) => {
    const line = lines[index];
    if (!line) return { patternId: sha256(item.record.template!).slice(0, 16), pattern: item.record.template!, group: null, changed: false };
    const { template, changed } = placeLine(groups.get(`${item.projectId}\n${line.group}`)!, line.words, line.group);
    return { patternId: template.id, pattern: templateText(template.words), group: line.group, changed };
  });
}

function logDoc({ orgId, projectId, record }: Stamped<LogRecord>, patternId: string) {
  const attributes = attributePairs(record.attributes);
  return {
    _id: contentId(projectId, record.timeMs, record.severityNumber, record.service, record.body, record.traceId ?? null, record.spanId ?? null, attributes),
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    time: new Date(record.timeMs),
    observedAt: record.observedTimeMs === undefined ? null : new Date(record.observedTimeMs),
    severityNumber: record.severityNumber,
    level: record.level,
    body: record.body,
    attributes,
    traceId: record.traceId ?? null,
    spanId: record.spanId ?? null,
    service: record.service,
    environment: record.environment ?? null,
    release: record.release ?? null,
    patternId,
    tokens: logTokens(record.body),
    minute: epochMinuteOf(record.timeMs),
    source: record.source,
  };
}

export type StoredLog = ReturnType<typeof logDoc>;

interface PatternSighting {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  patternId: string;
  pattern: string;
  group: string | null;
  changed: boolean;
  example: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/** Per-minute counts of newly stored logs, per project, service and pattern, with a count per level. */
function rollupCounts(logs: StoredLog[]): RollupBatch {
  const batch = new RollupBatch('log-rollup');
  for (const log of logs) {
    batch.add({ orgId: log.orgId, projectId: log.projectId, atMs: log.time.getTime() }, { service: log.service, patternId: log.patternId }, { count: 1, [`levels.${log.level}`]: 1 });
  }
  return batch;
}

/**
 * Stores logs, registers their patterns and counts them into the per-minute rollups. A log has no id
 * of its own, so its `_id` is derived from its content: a replayed batch inserts nothing new, and
 * only newly inserted logs are counted (the registry only takes $min/$max).
 */
export async function ingestLogs(items: Stamped<LogRecord>[]): Promise<void> {
  const sightings = new Map<string, PatternSighting>();
  const placed = await placeLogs(items);
  const docs = items.map((item, index) => {
    const { pattern, patternId, group, changed } = placed[index]!;
    const doc = logDoc(item, patternId);
    const key = `${item.projectId}:${patternId}`;
    const seen = sightings.get(key);
    if (!seen) sightings.set(key, { orgId: doc.orgId, projectId: doc.projectId, patternId, pattern, group, changed, example: doc.body, firstSeenAt: doc.time, lastSeenAt: doc.time });
    else {
      // the template as the batch's last line left it
      Object.assign(seen, { pattern, changed: seen.changed || changed });
      if (doc.time < seen.firstSeenAt) Object.assign(seen, { firstSeenAt: doc.time, example: doc.body });
      else if (doc.time > seen.lastSeenAt) seen.lastSeenAt = doc.time;
    }
    return doc;
  });
  const inserted = await insertNew(Log.collection, docs);
  await upsertAll(
    LogPattern.collection,
    [...sightings.values()].map((sighting) => ({
      updateOne: {
        filter: { _id: contentId('log-pattern', sighting.projectId.toHexString(), sighting.patternId) },
        update: {
          $setOnInsert: { orgId: sighting.orgId, projectId: sighting.projectId, patternId: sighting.patternId, group: sighting.group, example: sighting.example, ...(!sighting.changed && { pattern: sighting.pattern }) },
          ...(sighting.changed && { $set: { pattern: sighting.pattern } }),
          $min: { firstSeenAt: sighting.firstSeenAt },
          $max: { lastSeenAt: sighting.lastSeenAt },
        },
        upsert: true,
      },
    })),
  );
  await rollupCounts(inserted).write(LogRollup.collection, LogRollupHourly.collection);
}
