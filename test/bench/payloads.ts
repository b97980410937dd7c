/**
 * The request bodies the load generator sends, as SDKs send them: Sentry envelopes of one error event
 * (about 5 KB of JSON, gzipped) over many fingerprints, and OTLP span batches in protobuf, encoded with
 * the service's own descriptor of the OTLP messages.
 */
import { gzipSync } from 'node:zlib';
import protobuf from 'protobufjs';
import { otlpDescriptor } from '../../src/shared/telemetry/otlp/proto/descriptor.js';
import { envelope, errorEvent, hex, nanos } from '../support/factories/telemetry.js';

export const traceRequestType = protobuf.Root.fromJSON(otlpDescriptor).lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

export type PayloadKind = 'sentry' | 'otlp';

/** Where a payload goes: the ingest service (or the ceiling server, which takes the same paths). */
export interface Destination {
  baseUrl: string;
  projectNumber: number;
  publicKey: string;
}

export interface Prepared {
  url: string;
  headers: Record<string, string>;
  body: Buffer;
  /** Records the body carries (error events or spans). */
  records: number;
  /** Sentry only: the event's event_id. */
  eventId?: string;
}

const FINGERPRINTS = 500;
export const SPANS_PER_REQUEST = 20;

/** Breadcrumbs, contexts and request data as a Node SDK attaches them, which bring an event to about 5 KB. */
function eventBody(n: number, issue?: string) {
  const kind = n % FINGERPRINTS;
  const now = Date.now();
  return errorEvent(
    {
      user: { id: `user-${n % 1000}`, email: `user-${n % 1000}@example.test`, ip_address: '203.0.113.7' },
      tags: { region: `eu-${n % 3}`, route: `/api/orders/${kind}` },
      contexts: {
        trace: { trace_id: hex(16), span_id: hex(8), op: 'http.server' },
        os: { name: 'Linux', version: '6.1.0', kernel_version: '6.1.0-18-amd64' },
        runtime: { name: 'node', version: 'v20.19.0' },
        app: { app_start_time: new Date(now - 3_600_000).toISOString(), app_memory: 183_500_800 },
        device: { arch: 'x64', memory_size: 25_769_803_776, free_memory: 12_884_901_888, boot_time: new Date(now - 86_400_000).toISOString(), processor_count: 2 },
        culture: { locale: 'en-GB', timezone: 'Europe/London' },
      },
      request: {
        method: 'POST',
        url: `https://shop.example/api/orders/${kind}`,
        query_string: `page=${n % 7}&sort=created`,
        headers: { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36', accept: 'application/json', 'accept-language': 'en-GB,en;q=0.9', host: 'shop.example' },
      },
      breadcrumbs: Array.from({ length: 20 }, (_, b) => ({
        timestamp: (now - (20 - b) * 250) / 1000,
        category: b % 2 === 0 ? 'http' : 'console',
        level: 'info',
        ...(b % 2 === 0
          ? { type: 'http', data: { method: 'GET', url: `https://inventory.internal/api/items/${(n + b) % 977}`, status_code: 200 } }
          : { message: `loaded basket ${n} with ${b} items for customer ${n % 1000} in ${(n * b) % 300} ms` }),
      })),
      extra: { basketId: `basket-${n}`, items: n % 9, currency: 'EUR' },
      modules: { express: '5.1.0', mongoose: '9.1.0', bullmq: '6.7.0', ioredis: '6.0.0', pino: '10.0.0', zod: '4.1.0' },
      sdk: { name: 'sentry.javascript.node', version: '11.12.0', integrations: ['Http', 'Express', 'Console', 'OnUncaughtException', 'OnUnhandledRejection', 'LinkedErrors', 'Context', 'Modules'] },
      server_name: `web-${n % 4}`,
    },
    issue ? { type: issue, value: `${issue} while handling order ${n}`, fn: 'watched', lineno: 1 } : { type: `BenchError${kind}`, value: `failure ${kind} while handling order ${n}`, fn: `handler${kind}`, lineno: 10 + (kind % 300) },
  );
}

/** Envelope `n` of a run; with `issue`, an event of that exception type, which groups all of them into one issue of their own. */
export function sentryRequest(to: Destination, n: number, issue?: string): Prepared {
  const event = eventBody(n, issue);
  return {
    url: `${to.baseUrl}/api/${to.projectNumber}/envelope/?sentry_key=${to.publicKey}`,
    headers: { 'content-type': 'application/x-sentry-envelope', 'content-encoding': 'gzip' },
    body: gzipSync(envelope({ event_id: event.event_id, sent_at: new Date().toISOString() }, [{ type: 'event', payload: event }])),
    records: 1,
    eventId: event.event_id,
  };
}

/** One export of SPANS_PER_REQUEST spans: traces of five, a server span and four client calls each. */
export function otlpRequest(to: Destination, n: number): Prepared {
  const now = Date.now();
  const spans = [];
  let traceId = Buffer.alloc(0);
  let rootId = Buffer.alloc(0);
  for (let s = 0; s < SPANS_PER_REQUEST; s++) {
    const root = s % 5 === 0;
    const spanId = Buffer.from(hex(8), 'hex');
    if (root) [traceId, rootId] = [Buffer.from(hex(16), 'hex'), spanId];
    spans.push({
      traceId,
      spanId,
      ...(!root && { parentSpanId: rootId }),
      name: root ? `GET /api/items/{id}` : `SELECT items ${s % 5}`,
      kind: root ? 2 : 3,
      startTimeUnixNano: nanos(now + s),
      endTimeUnixNano: nanos(now + s + 5 + (s % 40)),
      attributes: root
        ? [{ key: 'http.route', value: { stringValue: '/api/items/{id}' } }, { key: 'http.response.status_code', value: { intValue: 200 } }]
        : [
            { key: 'db.system', value: { stringValue: 'postgresql' } },
            { key: 'db.query.text', value: { stringValue: `SELECT * FROM items_${s % 5} WHERE id = ${(n * SPANS_PER_REQUEST + s) % 10_000}` } },
          ],
      status: { code: s % 50 === 0 ? 2 : 0 },
    });
  }
  const message = traceRequestType.fromObject({
    resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${n % 5}` } }] }, scopeSpans: [{ scope: { name: 'bench' }, spans }] }],
  });
  return {
    url: `${to.baseUrl}/v1/traces`,
    headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${to.publicKey}` },
    body: Buffer.from(traceRequestType.encode(message).finish()),
    records: SPANS_PER_REQUEST,
  };
}

export const prepare = (kind: PayloadKind, to: Destination, n: number) => (kind === 'sentry' ? sentryRequest(to, n) : otlpRequest(to, n));
