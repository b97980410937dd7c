import { Router } from 'express';
import { AppError } from '../../shared/errors.js';
import { readBody } from '../body.js';
import { authorizeDsn, enqueueRecords, requestKey, type IngestContext } from '../context.js';
import { parseEnvelope } from '../sentry/envelope.js';
import { normalizeEnvelope, normalizeStoreEvent } from '../sentry/normalize.js';

function projectNumberOf(value: string | undefined): number {
  if (!value || !/^\d{1,15}$/.test(value)) throw new AppError('not_found', 'the project in a Sentry URL is a number');
  return Number(value);
}

/** Something was invalid and nothing could be stored: the request is refused rather than answered 200. */
const nothingKept = (dropped: number, records: Record<string, unknown[]>) => dropped > 0 && Object.values(records).every((list) => list.length === 0);

/** Sentry's ingest routes, answering as Relay does: 200 `{"id"}` once the data is durable. */
export function sentryRouter(ctx: IngestContext): Router {
  const router = Router();

  router.post('/api/:projectNumber/envelope', async (req, res) => {
    const projectNumber = projectNumberOf(req.params.projectNumber);
    // SDKs put the key in the URL or a header: check it before reading up to 100 MiB of body.
    const early = requestKey(req) ? await authorizeDsn(ctx, req, res, { projectNumber }) : undefined;
    const envelope = parseEnvelope(await readBody(req));
    const { dsn, limit } = early ?? (await authorizeDsn(ctx, req, res, { envelopeHeader: envelope.header, projectNumber }));
    await limit;
    const { records, eventId, dropped, outcomes } = await normalizeEnvelope(envelope, { nowMs: Date.now(), replayCapture: dsn.replayCapture });
    // Items of kinds Sluice does not keep (client reports…) are skipped quietly; invalid ones are only
    // refused when nothing else could be stored, so one bad item never costs the rest.
    if (nothingKept(dropped, records)) {
      throw new AppError('invalid_request', `none of the envelope's items could be stored: ${dropped} ${dropped === 1 ? 'item was' : 'items were'} invalid (not JSON of their type, a missing or malformed id, or over their size limit)`);
    }
    await enqueueRecords(ctx, dsn, { ...records, outcomes });
    res.json(eventId ? { id: eventId } : {});
  });

  // The legacy endpoint: one JSON event per request.
  router.post('/api/:projectNumber/store', async (req, res) => {
    const projectNumber = projectNumberOf(req.params.projectNumber);
    const { dsn, limit } = await authorizeDsn(ctx, req, res, { projectNumber });
    const body = await readBody(req, { maxDecompressed: 1024 * 1024 });
    await limit;
    let event: unknown;
    try {
      event = JSON.parse(body.toString('utf8'));
    } catch {
      throw new AppError('invalid_request', 'the event is not valid JSON');
    }
    if (!event || typeof event !== 'object' || Array.isArray(event)) throw new AppError('invalid_request', 'the event must be a JSON object');
    const { records, eventId, dropped, outcomes } = normalizeStoreEvent(event as Record<string, unknown>, Date.now());
    if (nothingKept(dropped, records)) throw new AppError('invalid_request', 'the event could not be stored: it is not a valid event or is nested too deep');
    await enqueueRecords(ctx, dsn, { ...records, outcomes });
    res.json({ id: eventId });
  });

  return router;
}
