import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { AppError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { TELEMETRY_JOB, TELEMETRY_JOB_VERSION, telemetryJobRecords, type OtlpExport, type TelemetryJob, type TelemetryRecords } from '../shared/queues.js';
import { categoryOfKind } from '../shared/features/usage/plan.js';
import type { OutcomeRecord, RecordKind, Stamped } from '../shared/telemetry/records.js';
import { SpoolFullError, type DiskSpool } from './spool.js';

interface Group {
  records: TelemetryRecords;
  exports: Stamped<OtlpExport>[];
  count: number;
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
  scheduled: boolean;
  /** The linger's timer while the group waits out LINGER_MS. */
  linger?: NodeJS.Timeout;
}

/**
 * Batches written to Redis at once. While they are all under way, new records gather into the next
 * batch; when one finishes, what gathered goes at once: batches grow with the load, and a request on
 * an idle service waits for nothing but its own write.
 */
const MAX_WRITES_IN_FLIGHT = 2;

/**
 * Jobs waiting or being stored above which the workers are behind. Then a request's records wait
 * LINGER_MS for other requests' before they are written, so that the workers get fewer, larger jobs:
 * each job costs them store and queue commands of its own, whatever it holds.
 */
const BACKLOG_JOBS = 128;
const LINGER_MS = 20;
/**
 * A lingering batch that has gathered the records of this many requests is written at once: it is
 * already large enough that the workers' cost per job is small beside its records', and clients that
 * wait for their answer before sending again (an SDK's transport, a load test) would otherwise wait
 * the whole linger on every request however many joined.
 */
const LINGER_REQUESTS = 16;
/** How often ingest reads the queue's backlog. */
const BACKLOG_CHECK_MS = 250;

/** How long a write to Redis may take before the batch goes to the disk spool instead. */
const ADD_TIMEOUT_MS = 1000;
/** How often a non-empty spool tries Redis again (also at once when the connection comes back). */
const REPLAY_INTERVAL_MS = 1000;
/** What a client told to back off waits before retrying while the spool is full. */
const RETRY_AFTER_SECONDS = '10';

const JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: 1000,
  removeOnFail: 10_000,
} as const;

export interface BatcherOptions {
  /** A batch is written once this many records gather, even while the other writes are under way. */
  maxItems: number;
  /** Spooled batches older than this are discarded at replay instead of queued. */
  spoolMaxAgeMs: number;
}

/** What an expired batch would have counted as, per project: its dropped items for the usage figures. */
function expiredOutcomes(records: TelemetryRecords): Stamped<OutcomeRecord>[] {
  const outcomes = new Map<string, Stamped<OutcomeRecord>>();
  for (const [kind, list] of Object.entries(records) as [RecordKind, Stamped<unknown>[]][]) {
    const category = kind === 'sessions' ? 'sessions' : categoryOfKind.get(kind);
    if (!category) continue;
    for (const { orgId, projectId } of list) {
      const key = `${projectId}/${category}`;
      const outcome = outcomes.get(key) ?? { orgId, projectId, record: { category, reason: 'spool_expired', quantity: 0 } };
      outcome.record.quantity += 1;
      outcomes.set(key, outcome);
    }
  }
  return [...outcomes.values()];
}

/**
 * Gathers the records of concurrent requests into one BullMQ job (group commit: written as soon as a
 * write slot is free, or when `maxItems` are waiting; while the workers are behind, LINGER_MS later
 * unless LINGER_REQUESTS requests have joined by then).
 * A request's records, of every kind, go into one job, so they are queued all together or not at all
 * and a resent request never counts twice. `enqueue` resolves only
 * once the job is in Redis or, while Redis cannot take it, in the disk spool: a 200 means the data is
 * durable. Spooled jobs are replayed under the same job id when Redis returns (BullMQ keeps the first
 * of two jobs with one id, so a write that timed out but landed is not queued twice). Only when the
 * spool is full too do the waiting requests fail, with 503 and Retry-After.
 */
export class TelemetryBatcher {
  private group: Group | undefined;
  private writesInFlight = 0;
  private replaying: Promise<void> | undefined;
  private readonly replayTimer: NodeJS.Timeout;
  private readonly backlogTimer: NodeJS.Timeout;
  private spooling = false;
  /** Whether the workers were behind at the last look (see BACKLOG_JOBS). */
  private behind = false;
  private checkingBacklog = false;

  constructor(
    private readonly queue: Queue,
    private readonly redis: Redis,
    private readonly spool: DiskSpool,
    private readonly logger: Logger,
    private readonly options: BatcherOptions,
  ) {
    this.replayTimer = setInterval(() => void this.replay(), REPLAY_INTERVAL_MS);
    this.replayTimer.unref();
    this.backlogTimer = setInterval(() => void this.checkBacklog(), BACKLOG_CHECK_MS);
    this.backlogTimer.unref();
    redis.on('ready', this.onReady);
    if (!spool.isEmpty) logger.warn({ spool: spool.status() }, 'ingest spool holds batches from an earlier run; replaying them once Redis answers');
  }

  private readonly onReady = () => void this.replay();

  /** Queues one request's records and OTLP exports; resolves once they are durable. */
  enqueue(records: Partial<Record<RecordKind, Stamped<unknown>[]>>, exports: Stamped<OtlpExport>[] = []): Promise<void> {
    const lists = Object.entries(records).filter(([, list]) => list && list.length > 0) as [RecordKind, Stamped<unknown>[]][];
    if (lists.length === 0 && exports.length === 0) return Promise.resolve();
    const group = (this.group ??= { records: {}, exports: [], count: 0, waiters: [], scheduled: false });
    for (const sent of exports) {
      group.exports.push(sent);
      group.count += sent.record.items;
    }
    for (const [kind, list] of lists) {
      const gathered = (group.records[kind] ??= []);
      // a loop, not push(...list): one OTLP request can carry more records than a call takes arguments
      for (const record of list) gathered.push(record);
      group.count += list.length;
    }
    const done = new Promise<void>((resolve, reject) => group.waiters.push({ resolve, reject }));
    if (group.count >= this.options.maxItems) void this.flush();
    else if (group.linger && group.waiters.length >= LINGER_REQUESTS) {
      // what the linger's timer would do, now
      clearTimeout(group.linger);
      void this.flush();
    } else this.schedule();
    return done;
  }

  /** The spool's figures, for /readyz. */
  spoolStatus() {
    return this.spool.status();
  }

  /**
   * Flushes after the requests of this turn of the event loop have joined (while the workers are
   * behind, after those of the next LINGER_MS or once LINGER_REQUESTS have), if a write slot is free.
   */
  private schedule(): void {
    const group = this.group;
    if (!group || group.scheduled || this.writesInFlight >= MAX_WRITES_IN_FLIGHT) return;
    group.scheduled = true;
    const flushGroup = () => {
      if (this.group === group) void this.flush();
    };
    if (this.behind && group.waiters.length < LINGER_REQUESTS) group.linger = setTimeout(flushGroup, LINGER_MS);
    else setImmediate(flushGroup);
  }

  /** Reads how many jobs wait or are being stored; while Redis does not answer, the last answer stands. */
  private async checkBacklog(): Promise<void> {
    if (this.checkingBacklog || this.redis.status !== 'ready') return;
    this.checkingBacklog = true;
    try {
      const { waiting = 0, active = 0 } = await this.queue.getJobCounts('waiting', 'active');
      this.behind = waiting + active > BACKLOG_JOBS;
    } catch (error) {
      this.logger.debug({ err: error }, 'could not read the telemetry backlog');
    } finally {
      this.checkingBacklog = false;
    }
  }

  private async flush(): Promise<void> {
    const group = this.group;
    if (!group) return;
    this.group = undefined;
    this.writesInFlight += 1;
    try {
      await this.keep(`b${randomBytes(12).toString('hex')}`, {
        v: TELEMETRY_JOB_VERSION,
        records: group.records,
        ...(group.exports.length > 0 && { exports: group.exports }),
      });
      for (const waiter of group.waiters) waiter.resolve();
    } catch (error) {
      for (const waiter of group.waiters) waiter.reject(error);
    } finally {
      this.writesInFlight -= 1;
      this.schedule();
    }
  }

  /** Into Redis, else onto the disk spool, else a 503 for every request in the batch. */
  private async keep(id: string, data: TelemetryJob): Promise<void> {
    let queueError: unknown;
    try {
      await this.add(id, data);
      return;
    } catch (error) {
      queueError = error;
    }
    try {
      await this.spool.write(id, data);
    } catch (error) {
      const full = error instanceof SpoolFullError;
      this.logger.error({ err: error, queueError, spool: this.spool.status() }, full ? 'Redis is unreachable and the ingest spool is full: refusing telemetry' : 'Redis is unreachable and the ingest spool cannot be written: refusing telemetry');
      throw new AppError('not_ready', full ? 'telemetry cannot be kept right now: the queue is unreachable and the local spool is full; retry later' : 'telemetry cannot be kept right now; retry later', {
        headers: { 'Retry-After': RETRY_AFTER_SECONDS },
        cause: error,
      });
    }
    if (!this.spooling) {
      this.spooling = true;
      this.logger.warn({ err: queueError, dir: this.spool.dir }, 'Redis cannot take telemetry: accepted batches go to the ingest spool on disk until it returns');
    }
  }

  private async add(id: string, data: TelemetryJob): Promise<void> {
    if (this.redis.status !== 'ready') throw new Error(`Redis connection ${this.redis.status}`);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add(TELEMETRY_JOB, data, { ...JOB_OPTIONS, jobId: id }),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('Redis did not take the batch in time')), ADD_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Moves spooled batches into the queue, oldest first, one replay at a time. */
  private replay(): Promise<void> {
    if (this.spool.isEmpty || this.redis.status !== 'ready') return Promise.resolve();
    this.replaying ??= this.spool
      .drain(
        {
          deliver: (id, data) => this.add(id, data as TelemetryJob),
          expire: async (id, data, ageMs) => {
            const read = telemetryJobRecords(TELEMETRY_JOB, data);
            const records = typeof read === 'string' ? {} : read;
            const counts = Object.fromEntries(Object.entries(records).map(([kind, list]) => [kind, list?.length ?? 0]));
            this.logger.error({ id, ageMs, counts }, 'discarding a spooled batch older than INGEST_SPOOL_MAX_AGE_HOURS');
            const outcomes = expiredOutcomes(records);
            if (outcomes.length > 0) await this.add(`${id}-expired`, { v: TELEMETRY_JOB_VERSION, records: { outcomes } });
          },
          corrupt: (name, error) => this.logger.error({ err: error, name, dir: this.spool.dir }, 'a spooled batch no longer parses; moved aside as .corrupt'),
        },
        this.options.spoolMaxAgeMs,
      )
      .then((delivered) => {
        if (this.spool.isEmpty) {
          this.spooling = false;
          this.logger.info({ delivered }, 'ingest spool replayed into the queue');
        }
      })
      .catch((error: unknown) => this.logger.warn({ err: error, spool: this.spool.status() }, 'ingest spool replay stopped; retrying'))
      .finally(() => {
        this.replaying = undefined;
      });
    return this.replaying;
  }

  /** Writes whatever is waiting (to Redis or the spool); part of shutdown, before the queue closes. */
  async close(): Promise<void> {
    clearInterval(this.replayTimer);
    clearInterval(this.backlogTimer);
    this.redis.off('ready', this.onReady);
    await this.flush();
    await this.replaying;
    await this.spool.close();
  }
}
