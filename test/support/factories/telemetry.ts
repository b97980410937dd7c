import { randomBytes } from 'node:crypto';
import { deflateSync, gzipSync } from 'node:zlib';
import type { Queue } from 'bullmq';
import { useQueueHarness, type Harness } from '../harness.js';
import type { Account } from './accounts.js';
import { createProject, signUp } from './accounts.js';

export interface ProjectWithDsn {
  id: string;
  number: number;
  publicKey: string;
  dsn: string;
  dsnId: string;
}

/** A project and its first DSN, with the DSN string pointing at this harness's ingest port. */
export async function projectWithDsn(account: Account, ingestBaseUrl: string): Promise<ProjectWithDsn> {
  const project = await createProject(account);
  const [dsn] = (await account.client.get(`/v1/projects/${project.id}/dsns`)).body.data;
  const host = new URL(ingestBaseUrl).host;
  return { id: project.id, number: project.number, publicKey: dsn.public_key, dsnId: dsn.id, dsn: `http://${dsn.public_key}@${host}/${project.number}` };
}

/**
 * A test file's harness without workers and its telemetry queue (see useQueueHarness), with a project
 * of a new account and its DSN: `use` receives all three once started.
 */
export function useQueueProject(use: (harness: Harness, queue: Queue, project: ProjectWithDsn) => void): void {
  useQueueHarness(async (harness, queue) => use(harness, queue, await projectWithDsn(await signUp(harness), harness.ingest.baseUrl)));
}

export const eventId = () => randomBytes(16).toString('hex');

/** A Sentry envelope: header line, then each item's header and payload (JSON items without length, as JS SDKs send them). */
export function envelope(header: Record<string, unknown>, items: Array<{ type: string; payload: unknown; length?: boolean }>): string {
  const lines = [JSON.stringify(header)];
  for (const item of items) {
    const payload = typeof item.payload === 'string' ? item.payload : JSON.stringify(item.payload);
    lines.push(JSON.stringify({ type: item.type, ...(item.length && { length: Buffer.byteLength(payload) }) }), payload);
  }
  return `${lines.join('\n')}\n`;
}

export interface ReplaySegmentOptions {
  segmentId?: number;
  /** The segment's rrweb events; by default one meta event on https://shop.example/cart. */
  events?: unknown[];
  /** How the SDK packed the events: gzip, zlib (the browser SDK's compression worker) or plain JSON. */
  compression?: 'gzip' | 'zlib' | 'none';
  /** Fields of the replay_event item over the defaults (a session replay of https://shop.example/cart, started 5 s ago). */
  event?: Record<string, unknown>;
}

/**
 * One replay segment as a browser SDK sends it: a replay_event item and its replay_recording item, whose
 * payload is a `{"segment_id":N}` line followed by the rrweb events.
 */
export function replayEnvelope(replayId: string, options: ReplaySegmentOptions = {}): Buffer {
  const segmentId = options.segmentId ?? 0;
  const events = JSON.stringify(options.events ?? [{ type: 4, data: { href: 'https://shop.example/cart' }, timestamp: Date.now() }]);
  const packed = { gzip: gzipSync, zlib: deflateSync, none: (text: string) => Buffer.from(text) }[options.compression ?? 'gzip'](events);
  const recording = Buffer.concat([Buffer.from(`${JSON.stringify({ segment_id: segmentId })}\n`), packed]);
  const event = {
    type: 'replay_event',
    replay_id: replayId,
    segment_id: segmentId,
    replay_type: 'session',
    timestamp: Date.now() / 1000,
    replay_start_timestamp: Date.now() / 1000 - 5,
    urls: ['https://shop.example/cart'],
    trace_ids: [],
    error_ids: [],
    ...options.event,
  };
  const header = Buffer.from(
    `${JSON.stringify({ event_id: replayId })}\n${JSON.stringify({ type: 'replay_event' })}\n${JSON.stringify(event)}\n${JSON.stringify({ type: 'replay_recording', length: recording.length })}\n`,
  );
  return Buffer.concat([header, recording, Buffer.from('\n')]);
}

/** An error event as @sentry/node shapes one: exception chain with in-app frames, oldest frame first. */
export function errorEvent(overrides: Record<string, unknown> = {}, options: { type?: string; value?: string; lineno?: number; fn?: string } = {}) {
  return {
    event_id: eventId(),
    timestamp: Date.now() / 1000,
    platform: 'node',
    level: 'error',
    environment: 'production',
    release: 'shop@1.0.0',
    exception: {
      values: [
        {
          type: options.type ?? 'TypeError',
          value: options.value ?? "Cannot read properties of undefined (reading 'price')",
          mechanism: { type: 'generic', handled: true },
          stacktrace: {
            frames: [
              { filename: 'node:internal/process/task_queues', function: 'process.processTicksAndRejections', lineno: 95, colno: 5, in_app: false },
              { filename: '/app/src/cart.js', module: 'cart', function: options.fn ?? 'totalOf', lineno: options.lineno ?? 42, colno: 17, in_app: true, context_line: '  return item.price * item.quantity;' },
            ],
          },
        },
      ],
    },
    ...overrides,
  };
}

/**
 * 256 MiB of zeros as 16 concatenated gzip members (a valid gzip stream), about 256 KB on the wire and
 * past the 100 MiB decompressed cap, built without ever holding more than 16 MiB.
 */
export function gzipBomb(): Buffer {
  const member = gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 });
  return Buffer.concat(Array.from({ length: 16 }, () => member));
}

export const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** Epoch milliseconds as OTLP/JSON's nanosecond strings. */
export const nanos = (ms: number) => String(BigInt(ms) * 1_000_000n);

export const SPAN_KINDS = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** A span as the OTLP tests plant it, times in epoch milliseconds. */
export interface OtlpSpan {
  traceId: string;
  id: string;
  parent?: string;
  name: string;
  kind: keyof typeof SPAN_KINDS;
  startMs: number;
  durationMs: number;
  /** Unset unless given. */
  status?: 'ok' | 'error';
  flags?: number;
  links?: { traceId: string; spanId: string }[];
  events?: { name: string; timeMs: number; attributes?: Record<string, string | number> }[];
  attributes?: Record<string, string | number>;
}

export const otlpValue = (value: string | number) => (typeof value === 'string' ? { stringValue: value } : Number.isInteger(value) ? { intValue: value } : { doubleValue: value });
const otlpAttributes = (attributes: Record<string, string | number> = {}) => Object.entries(attributes).map(([key, value]) => ({ key, value: otlpValue(value) }));

/** An OTLP/JSON trace export body: each service's spans under a resource of its own. */
export function otlpTraces(byService: Record<string, OtlpSpan[]>) {
  return {
    resourceSpans: Object.entries(byService).map(([service, spans]) => ({
      resource: { attributes: otlpAttributes({ 'service.name': service }) },
      scopeSpans: [
        {
          spans: spans.map((span) => ({
            traceId: span.traceId,
            spanId: span.id,
            ...(span.parent && { parentSpanId: span.parent }),
            ...(span.flags !== undefined && { flags: span.flags }),
            name: span.name,
            kind: SPAN_KINDS[span.kind],
            startTimeUnixNano: nanos(span.startMs),
            endTimeUnixNano: nanos(span.startMs + span.durationMs),
            attributes: otlpAttributes(span.attributes),
            events: (span.events ?? []).map((event) => ({ name: event.name, timeUnixNano: nanos(event.timeMs), attributes: otlpAttributes(event.attributes) })),
            links: span.links ?? [],
            status: { code: span.status ? { ok: 1, error: 2 }[span.status] : 0 },
          })),
        },
      ],
    })),
  };
}

export const OTLP_SEVERITY = { debug: 5, info: 9, warn: 13, error: 17 } as const;

/** A log line as a test describes it: its service, text, level, time (epoch ms), attributes and trace. */
export interface OtlpLogLine {
  service: string;
  body: string;
  level: keyof typeof OTLP_SEVERITY;
  at: number;
  attributes?: Record<string, string>;
  traceId?: string;
}

/** An OTLP/JSON log export body: each service's lines under a resource of its own. */
export function otlpLogs(lines: readonly OtlpLogLine[]) {
  const services = [...new Set(lines.map((line) => line.service))];
  return {
    resourceLogs: services.map((service) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeLogs: [
        {
          logRecords: lines
            .filter((line) => line.service === service)
            .map((line) => ({
              timeUnixNano: nanos(line.at),
              severityNumber: OTLP_SEVERITY[line.level],
              body: { stringValue: line.body },
              attributes: Object.entries(line.attributes ?? {}).map(([key, value]) => ({ key, value: { stringValue: value } })),
              ...(line.traceId && { traceId: line.traceId, spanId: hex(8) }),
            })),
        },
      ],
    })),
  };
}
