import { Types } from 'mongoose';
import type { SpanRecord, Stamped } from '../../telemetry/records.js';
import { attributePairs, contentId, insertNew, upsertAll } from '../../telemetry/storage.js';
import { Span, Trace } from './model.js';

function spanDoc({ orgId, projectId, record }: Stamped<SpanRecord>) {
  return {
    orgId: new Types.ObjectId(orgId),
    projectId: new Types.ObjectId(projectId),
    traceId: record.traceId,
    spanId: record.spanId,
    parentSpanId: record.parentSpanId,
    name: record.name,
    kind: record.kind,
    service: record.service,
    serviceVersion: record.serviceVersion ?? null,
    environment: record.environment ?? null,
    release: record.release ?? null,
    startAt: new Date(record.startMs),
    endAt: new Date(record.endMs),
    durationMs: record.durationMs,
    status: record.status,
    statusMessage: record.statusMessage ?? null,
    category: record.category,
    http: record.http ?? null,
    db: record.db ?? null,
    messaging: record.messaging ?? null,
    peerService: record.peerService ?? null,
    isSegment: record.isSegment,
    attributes: attributePairs(record.attributes),
    events: record.events.map((event) => ({ name: event.name, time: new Date(event.timeMs), attributes: attributePairs(event.attributes) })),
    links: record.links.map((link) => ({ traceId: link.traceId, spanId: link.spanId, attributes: attributePairs(link.attributes) })),
    source: record.source,
  };
}

type StoredSpan = ReturnType<typeof spanDoc>;

interface TraceDelta {
  orgId: Types.ObjectId;
  projectId: Types.ObjectId;
  traceId: string;
  startAt: Date;
  endAt: Date;
  spanCount: number;
  errorCount: number;
  services: Set<string>;
  root: { rootName: string; rootService: string } | undefined;
}

/** A trace summary's `_id`: the same project and trace id always address the same document. */
export const traceKey = (projectId: Types.ObjectId, traceId: string) => contentId('trace', projectId.toHexString(), traceId);

/** What the newly stored spans add to each trace's summary. */
function traceDeltas(spans: StoredSpan[]): TraceDelta[] {
  const deltas = new Map<string, TraceDelta>();
  for (const span of spans) {
    const key = `${span.projectId.toHexString()}:${span.traceId}`;
    let delta = deltas.get(key);
    if (!delta) {
      delta = { orgId: span.orgId, projectId: span.projectId, traceId: span.traceId, startAt: span.startAt, endAt: span.endAt, spanCount: 0, errorCount: 0, services: new Set(), root: undefined };
      deltas.set(key, delta);
    }
    if (span.startAt < delta.startAt) delta.startAt = span.startAt;
    if (span.endAt > delta.endAt) delta.endAt = span.endAt;
    delta.spanCount += 1;
    if (span.status === 'error') delta.errorCount += 1;
    delta.services.add(span.service);
    if (span.parentSpanId === null) delta.root ??= { rootName: span.name, rootService: span.service };
  }
  return [...deltas.values()];
}

/**
 * Stores spans once per {project, trace, span} and folds them into their trace summaries. Only the
 * spans this call actually inserted are counted, so a replayed batch adds nothing; a crash between
 * the two writes leaves those spans uncounted rather than counted twice.
 */
export async function ingestSpans(items: Stamped<SpanRecord>[]): Promise<void> {
  const inserted = await insertNew(Span.collection, items.map(spanDoc));
  await upsertAll(
    Trace.collection,
    traceDeltas(inserted).map((delta) => ({
      updateOne: {
        // Addressed by a derived _id: FerretDB's SQLite backend answers _id lookups from its index
        // but scans the collection for other filters, which made each batch slower as traces grew.
        filter: { _id: traceKey(delta.projectId, delta.traceId) },
        update: {
          $setOnInsert: { orgId: delta.orgId, projectId: delta.projectId, traceId: delta.traceId },
          $min: { startAt: delta.startAt },
          $max: { endAt: delta.endAt },
          $inc: { spanCount: delta.spanCount, errorCount: delta.errorCount },
          $addToSet: { services: { $each: [...delta.services] } },
          ...(delta.root && { $set: delta.root }),
        },
        upsert: true,
      },
    })),
  );
}
