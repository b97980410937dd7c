/**
 * The load generator, a child process of `npm run bench` so that the bench's own bookkeeping does not
 * share its event loop. It takes a run over IPC, builds every body before the clock starts, sends them
 * with node:http over keep-alive connections, and answers with the latencies' summary.
 *
 * - closed loop: `concurrency` senders, each sending its next request when the last was answered;
 * - open loop: request i is due at start + i / rate, whether or not earlier ones were answered, and its
 *   latency counts from when it was due, so a slow server cannot hide its queueing.
 *
 * A run may interleave envelopes and span exports (`mix`), and may watch every so many envelopes: those go
 * to one issue of their own, and the generator answers each one's event_id with the wall-clock time of
 * its 200, for the bench to time until the event is readable through the API.
 */
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { prepare, sentryRequest, type Destination, type PayloadKind, type Prepared } from './payloads.js';

export interface LoadRun {
  kind: PayloadKind;
  to: Destination;
  /** Instead of `kind`: this many requests of each kind, interleaved evenly; `requests` is then their sum. */
  mix?: Partial<Record<PayloadKind, number>>;
  /** Envelopes only: every `every`-th request (the first included) is an event of the issue `issue`, and its answer is reported. */
  watch?: { every: number; issue: string };
  /** Closed loop: this many requests, `concurrency` at a time. */
  requests?: number;
  concurrency?: number;
  /** Open loop: `rate` requests per second for `seconds`. */
  rate?: number;
  seconds?: number;
}

export interface LoadResult {
  sent: number;
  /** Answered 200. */
  accepted: number;
  /** Records in the accepted requests. */
  acceptedRecords: number;
  /** Answers by status; 0 counts requests that got no answer. */
  statuses: Record<string, number>;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  /** Epoch ms of the first send and of the last answer. */
  startedAt: number;
  endedAt: number;
  /** Open loop: how late the generator sent its most late request (ms); large means it could not keep up. */
  maxSendDelay: number;
  /** Records in the accepted requests, by kind. */
  acceptedByKind: Partial<Record<PayloadKind, number>>;
  /**
   * The watched events that were accepted: event_id and the epoch ms (Date.now()) of their 200. Wall-clock
   * time because the bench compares it with times taken in its own process: performance.now() counts from
   * each process's own start, so it cannot be compared across processes; Date.now() is the one system clock.
   */
  watched: { eventId: string; answeredAt: number }[];
}

/** The kind of each request of a `mix`, spread evenly: each request is of the kind furthest behind its share. */
function interleave(mix: Partial<Record<PayloadKind, number>>): PayloadKind[] {
  const kinds = (Object.keys(mix) as PayloadKind[]).filter((kind) => mix[kind]! > 0);
  const total = kinds.reduce((sum, kind) => sum + mix[kind]!, 0);
  const sent: Partial<Record<PayloadKind, number>> = {};
  const behind = (kind: PayloadKind, i: number) => ((i + 1) * mix[kind]!) / total - (sent[kind] ?? 0);
  return Array.from({ length: total }, (_, i) => {
    const kind = kinds.reduce((a, b) => (behind(b, i) > behind(a, i) ? b : a));
    sent[kind] = (sent[kind] ?? 0) + 1;
    return kind;
  });
}

function post(agent: Agent, prepared: Prepared): Promise<number> {
  return new Promise((resolve) => {
    const req = request(prepared.url, { method: 'POST', agent, headers: { ...prepared.headers, 'content-length': String(prepared.body.length) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
    req.end(prepared.body);
  });
}

async function run(spec: LoadRun): Promise<LoadResult> {
  const open = spec.rate !== undefined;
  const kinds = spec.mix ? interleave(spec.mix) : undefined;
  const total = kinds?.length ?? (open ? Math.max(1, Math.round(spec.rate! * spec.seconds!)) : spec.requests!);
  const kindOf = (n: number) => kinds?.[n] ?? spec.kind;
  const watched = (n: number) => spec.watch !== undefined && kindOf(n) === 'sentry' && n % spec.watch.every === 0;
  const bodies = Array.from({ length: total }, (_, n) => (watched(n) ? sentryRequest(spec.to, n, spec.watch!.issue) : prepare(kindOf(n), spec.to, n)));
  const agent = new Agent({ keepAlive: true, maxSockets: open ? Infinity : spec.concurrency! });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let acceptedRecords = 0;
  const acceptedByKind: Partial<Record<PayloadKind, number>> = {};
  const watchedAnswers: LoadResult['watched'] = [];
  let maxSendDelay = 0;
  const record = (n: number, status: number, took: number) => {
    const prepared = bodies[n]!;
    latencies.push(took);
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status !== 200) return;
    acceptedRecords += prepared.records;
    acceptedByKind[kindOf(n)] = (acceptedByKind[kindOf(n)] ?? 0) + prepared.records;
    if (watched(n)) watchedAnswers.push({ eventId: prepared.eventId!, answeredAt: Date.now() });
  };
  const startedAt = Date.now();
  const started = performance.now();
  if (open) {
    const interval = 1000 / spec.rate!;
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < total; ) {
      const now = performance.now();
      // send every request that is due; then sleep until the next one is
      for (; i < total && started + i * interval <= now; i++) {
        const due = started + i * interval;
        maxSendDelay = Math.max(maxSendDelay, now - due);
        const n = i;
        inFlight.push(post(agent, bodies[n]!).then((status) => record(n, status, performance.now() - due)));
      }
      if (i < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + i * interval - performance.now())));
    }
    await Promise.all(inFlight);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: spec.concurrency! }, async () => {
        while (next < total) {
          const n = next++;
          const sent = performance.now();
          record(n, await post(agent, bodies[n]!), performance.now() - sent);
        }
      }),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  return { sent: total, accepted: statuses[200] ?? 0, acceptedRecords, statuses, seconds, perSecond: total / seconds, p50: at(50), p99: at(99), max: latencies.at(-1)!, startedAt, endedAt: Date.now(), maxSendDelay, acceptedByKind, watched: watchedAnswers };
}

export interface LoadGenerator {
  run(spec: LoadRun): Promise<LoadResult>;
  stop(): Promise<void>;
}

/** Starts the generator process; runs go one at a time. */
export function startLoadGenerator(): LoadGenerator {
  const child = fork(fileURLToPath(import.meta.url), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, NODE_OPTIONS: '' } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    run: (spec) =>
      new Promise((resolve, reject) => {
        const onExit = () => reject(new Error('the load generator exited'));
        child.once('exit', onExit);
        child.once('message', (answer) => {
          child.off('exit', onExit);
          const { result, error } = answer as { result?: LoadResult; error?: string };
          if (result) resolve(result);
          else reject(new Error(`the load generator failed: ${error}`));
        });
        child.send(spec);
      }),
    stop: async () => {
      if (child.exitCode === null) child.disconnect();
      await exited;
    },
  };
}

// As the child: one run per message, until the bench disconnects.
if (process.send && process.argv[1] === fileURLToPath(import.meta.url)) {
  process.on('message', (spec: LoadRun) => {
    run(spec).then(
      (result) => process.send!({ result }),
      (error: unknown) => process.send!({ error: error instanceof Error ? error.stack : String(error) }),
    );
  });
}
