import { AppError } from '../../shared/errors.js';
import { readBody } from '../body.js';
import { authorizeDsn, chargeAddress, enqueueRecords, refundAddress, requestKey, type AdmittedDsn, type IngestContext } from '../context.js';
import { DEFAULT_MAX_HEADER_BYTES, parseEnvelope, parseEnvelopeHeader, parseTelemetryJson, type Envelope } from '../sentry/envelope.js';
import { normalizeEnvelope, normalizeStoreEvent } from '../sentry/normalize.js';
import { sendJson, type IngestCall } from '../http.js';

function projectNumberOf(value: string): number {
  if (!/^\d{1,15}$/.test(value)) throw new AppError('not_found', 'the project in a Sentry URL is a number');
  return Number(value);
}

/** Something was invalid and nothing could be stored: the request is refused rather than answered 200. */
const nothingKept = (dropped: number, records: Record<string, unknown[]>) => dropped > 0 && Object.values(records).every((list) => list.length === 0);

/** What of a key-less envelope is read before its header's DSN is checked: the header line, sent in at most 1 MiB. */
const KEYLESS_HEAD = { maxBytes: DEFAULT_MAX_HEADER_BYTES + 1, maxWire: 1024 * 1024 };

/**
 * Admits an envelope request and reads its body. SDKs put the key in the URL or a header: it is checked
 * before any of the body is read. Tunnels and some SDKs name the DSN only in the envelope header: such
 * a request is charged to its address first, and only its header line is decoded before that DSN is
 * checked; once it is live the point is given back and the rest is read under the usual caps.
 */
async function readEnvelope(ctx: IngestContext, call: IngestCall, projectNumber: number): Promise<{ envelope: Envelope; admitted: AdmittedDsn }> {
  if (requestKey(call)) {
    const admitted = await authorizeDsn(ctx, call, { projectNumber });
    return { admitted, envelope: parseEnvelope(await readBody(call.req)) };
  }
  await chargeAddress(ctx, call);
  let admitted: AdmittedDsn | undefined;
  const body = await readBody(call.req, {
    head: {
      ...KEYLESS_HEAD,
      admit: async (head) => {
        admitted = await authorizeDsn(ctx, call, { envelopeHeader: parseEnvelopeHeader(head), projectNumber, addressCharged: true });
        await refundAddress(ctx, call);
      },
    },
  });
  // readBody resolves only once the head was admitted
  return { admitted: admitted!, envelope: parseEnvelope(body) };
}

/** Sentry's envelope endpoint, answering as Relay does: 200 `{"id"}` once the data is durable. */
export async function acceptEnvelope(ctx: IngestContext, call: IngestCall, project: string): Promise<void> {
  const projectNumber = projectNumberOf(project);
  const { envelope, admitted: { dsn, limit } } = await readEnvelope(ctx, call, projectNumber);
  await limit;
  const { records, eventId, dropped, outcomes } = await normalizeEnvelope(envelope, { nowMs: Date.now(), replayCapture: dsn.replayCapture });
  // Items of kinds Sluice does not keep (client reports…) are skipped quietly; invalid ones are only
  // refused when nothing else could be stored, so one bad item never costs the rest.
  if (nothingKept(dropped, records)) {
    throw new AppError('invalid_request', `none of the envelope's items could be stored: ${dropped} ${dropped === 1 ? 'item was' : 'items were'} invalid (not JSON of their type, a missing or malformed id, or over their size limit)`);
  }
  await enqueueRecords(ctx, dsn, { ...records, outcomes });
  sendJson(call, 200, eventId ? { id: eventId } : {});
}

/** The legacy endpoint: one JSON event per request. */
export async function acceptStoreEvent(ctx: IngestContext, call: IngestCall, project: string): Promise<void> {
  const projectNumber = projectNumberOf(project);
  const { dsn, limit } = await authorizeDsn(ctx, call, { projectNumber });
  const body = await readBody(call.req, { maxDecompressed: 1024 * 1024 });
  await limit;
  let event: unknown;
  try {
    event = parseTelemetryJson(body.toString('utf8'));
  } catch {
    throw new AppError('invalid_request', 'the event is not valid JSON');
  }
  if (!event || typeof event !== 'object' || Array.isArray(event)) throw new AppError('invalid_request', 'the event must be a JSON object');
  const { records, eventId, dropped, outcomes } = normalizeStoreEvent(event as Record<string, unknown>, Date.now());
  if (nothingKept(dropped, records)) throw new AppError('invalid_request', 'the event could not be stored: it is not a valid event or is nested too deep');
  await enqueueRecords(ctx, dsn, { ...records, outcomes });
  sendJson(call, 200, { id: eventId });
}
