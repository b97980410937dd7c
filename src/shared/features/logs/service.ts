import { Types } from 'mongoose';
import { sha256 } from '../../secrets.js';
import type { LogRecord, Stamped } from '../../telemetry/records.js';
import { attributePairs, contentId, insertNew, upsertAll } from '../../telemetry/storage.js';
import { normalizeMessage } from '../issues/grouping.js';
import { Log, LogPattern } from './model.js';

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

/** The log's template: the SDK's own when it sent one, else the body with its variable parts masked. */
function logPattern(record: LogRecord): { pattern: string; patternId: string } {
  const pattern = record.template ?? normalizeMessage(record.body);
  return { pattern, patternId: sha256(pattern).slice(0, 16) };
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
    source: record.source,
  };
}

interface PatternSighting {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  patternId: string;
  pattern: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/**
 * Stores logs and registers their patterns. A log has no id of its own, so its `_id` is derived from
 * its content: a replayed batch inserts nothing new (and the registry only takes $min/$max).
 */
export async function ingestLogs(items: Stamped<LogRecord>[]): Promise<void> {
  const sightings = new Map<string, PatternSighting>();
  const docs = items.map((item) => {
    const { pattern, patternId } = logPattern(item.record);
    const doc = logDoc(item, patternId);
    const key = `${item.projectId}:${patternId}`;
    const seen = sightings.get(key);
    if (!seen) sightings.set(key, { orgId: doc.orgId, projectId: doc.projectId, patternId, pattern, firstSeenAt: doc.time, lastSeenAt: doc.time });
    else if (doc.time < seen.firstSeenAt) seen.firstSeenAt = doc.time;
    else if (doc.time > seen.lastSeenAt) seen.lastSeenAt = doc.time;
    return doc;
  });
  await insertNew(Log.collection, docs);
  await upsertAll(
    LogPattern.collection,
    [...sightings.values()].map((sighting) => ({
      updateOne: {
        filter: { _id: contentId('log-pattern', sighting.projectId.toHexString(), sighting.patternId) },
        update: {
          $setOnInsert: { orgId: sighting.orgId, projectId: sighting.projectId, patternId: sighting.patternId, pattern: sighting.pattern },
          $min: { firstSeenAt: sighting.firstSeenAt },
          $max: { lastSeenAt: sighting.lastSeenAt },
        },
        upsert: true,
      },
    })),
  );
}
