import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError } from '../shared/errors.js';
import type { RecordKind, Stamped } from '../shared/telemetry/records.js';

interface Pending {
  items: Stamped<unknown>[];
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
  timer: NodeJS.Timeout | undefined;
}

/** How long a write to Redis may take before ingest answers 503 instead of hanging. */
const ADD_TIMEOUT_MS = 1000;

const JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: 1000,
  removeOnFail: 10_000,
} as const;

/**
 * Gathers records of each kind from concurrent requests into one BullMQ job, written when `maxItems`
 * are waiting or `maxWaitMs` after the first. `enqueue` resolves only once the job is in Redis: a 200
 * means the data is durable. When Redis cannot take it, every waiting request fails with 503.
 */
export class TelemetryBatcher {
  private readonly pending = new Map<RecordKind, Pending>();

  constructor(
    private readonly queue: Queue,
    private readonly redis: Redis,
    private readonly options: { maxItems: number; maxWaitMs: number },
  ) {}

  enqueue(kind: RecordKind, items: Stamped<unknown>[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    // One huge request still becomes jobs of at most maxItems records each.
    if (items.length > this.options.maxItems) {
      const chunks = [];
      for (let i = 0; i < items.length; i += this.options.maxItems) chunks.push(this.enqueue(kind, items.slice(i, i + this.options.maxItems)));
      return Promise.all(chunks).then(() => undefined);
    }
    let batch = this.pending.get(kind);
    if (!batch) {
      batch = { items: [], waiters: [], timer: undefined };
      this.pending.set(kind, batch);
    }
    batch.items.push(...items);
    const done = new Promise<void>((resolve, reject) => batch.waiters.push({ resolve, reject }));
    if (batch.items.length >= this.options.maxItems) void this.flush(kind);
    else batch.timer ??= setTimeout(() => void this.flush(kind), this.options.maxWaitMs);
    return done;
  }

  private async flush(kind: RecordKind): Promise<void> {
    const batch = this.pending.get(kind);
    if (!batch) return;
    this.pending.delete(kind);
    clearTimeout(batch.timer);
    try {
      await this.write(kind, batch.items);
      for (const waiter of batch.waiters) waiter.resolve();
    } catch (error) {
      const refusal = new AppError('not_ready', 'telemetry cannot be kept right now; retry later', { headers: { 'Retry-After': '5' }, cause: error });
      for (const waiter of batch.waiters) waiter.reject(refusal);
    }
  }

  private async write(kind: RecordKind, items: Stamped<unknown>[]): Promise<void> {
    if (this.redis.status !== 'ready') throw new Error(`Redis connection ${this.redis.status}`);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add(kind, { items }, JOB_OPTIONS),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('Redis did not take the batch in time')), ADD_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Writes whatever is waiting; part of shutdown, before the queue closes. */
  async close(): Promise<void> {
    await Promise.all([...this.pending.keys()].map((kind) => this.flush(kind)));
  }
}
