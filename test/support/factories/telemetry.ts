import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Account } from './accounts.js';
import { createProject } from './accounts.js';

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
