/**
 * Steady ingest load from several concurrent clients, as SDKs and exporters send it: each request a
 * Sentry envelope with one error event (a unique event_id, one of a handful of fingerprints) and, now
 * and then, an OTLP/JSON export of two spans with unique ids. Every id the service answered 2xx for is
 * recorded; anything else is counted by what came back (a status, or "no answer" when the connection
 * failed or timed out), never retried, so a refusal costs the user nothing they were promised.
 */
import { envelope, errorEvent, hex, otlpTraces, type ProjectWithDsn } from '../support/factories/telemetry.js';

export interface LoadOptions {
  project: ProjectWithDsn;
  /** The ingest base URLs currently behind the "load balancer"; read before each request. */
  targets: () => string[];
  clients: number;
  /** Bounds: whichever comes first ends the load (or stop()). */
  maxRequests: number;
  maxMs: number;
  fingerprints: number;
  /** Every how many envelopes a client also exports spans. */
  spansEvery: number;
  /** Pause between one client's requests, so the load is steady rather than flat out. */
  pauseMs: number;
}

export interface Tally {
  sent: { events: number; spans: number };
  /** Ids answered 2xx: event ids, and `traceId:spanId` of spans. */
  acknowledged: { events: Set<string>; spans: Set<string> };
  /** Items refused, by status ("no answer": connection refused, reset or timed out). */
  refused: { events: Record<string, number>; spans: Record<string, number> };
}

/** Longer than the store's own 10 s wait for a server, so a slow answer is still an answer. */
const REQUEST_TIMEOUT_MS = 20_000;

async function post(url: string, body: string, headers: Record<string, string>): Promise<number | 'no answer'> {
  try {
    const reply = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await reply.arrayBuffer();
    return reply.status;
  } catch {
    return 'no answer';
  }
}

const isSuccess = (status: number | 'no answer') => typeof status === 'number' && status >= 200 && status < 300;

export function startLoad(options: LoadOptions) {
  const tally: Tally = { sent: { events: 0, spans: 0 }, acknowledged: { events: new Set(), spans: new Set() }, refused: { events: {}, spans: {} } };
  const refuse = (kind: 'events' | 'spans', status: number | 'no answer', items = 1) => (tally.refused[kind][String(status)] = (tally.refused[kind][String(status)] ?? 0) + items);
  const deadline = Date.now() + options.maxMs;
  let requests = 0;
  let stopped = false;
  const { project } = options;

  const sendEvent = async (base: string, n: number) => {
    const event = errorEvent({ fingerprint: [`chaos-${n % options.fingerprints}`] });
    tally.sent.events++;
    const status = await post(`${base}/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]), {});
    if (isSuccess(status)) tally.acknowledged.events.add(event.event_id);
    else refuse('events', status);
  };

  const sendSpans = async (base: string) => {
    const traceId = hex(16);
    const root = { traceId, id: hex(8), name: 'GET /checkout', kind: 'server' as const, startMs: Date.now() - 40, durationMs: 40 };
    const child = { traceId, id: hex(8), parent: root.id, name: 'SELECT orders', kind: 'client' as const, startMs: Date.now() - 30, durationMs: 10 };
    tally.sent.spans += 2;
    const status = await post(`${base}/v1/traces`, JSON.stringify(otlpTraces({ shop: [root, child] })), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
    if (!isSuccess(status)) {
      refuse('spans', status, 2);
      return;
    }
    for (const span of [root, child]) tally.acknowledged.spans.add(`${traceId}:${span.id}`);
  };

  const client = async (index: number) => {
    for (let round = 0; !stopped && requests < options.maxRequests && Date.now() < deadline; round++) {
      const targets = options.targets();
      const base = targets[(index + round) % targets.length]!;
      const n = requests++;
      await (round % options.spansEvery === options.spansEvery - 1 ? sendSpans(base) : sendEvent(base, n));
      await new Promise((r) => setTimeout(r, options.pauseMs));
    }
  };
  const running = Promise.all(Array.from({ length: options.clients }, (_, index) => client(index)));

  return {
    tally,
    /** Resolves when every client has had its last answer. */
    finished: running.then(() => tally),
    stop: async () => {
      stopped = true;
      await running;
      return tally;
    },
  };
}
