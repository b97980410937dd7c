/**
 * The load generator, a child process of `npm run bench` so that the bench's own bookkeeping does not
 * share its event loop. It takes a run over IPC, builds every body before the clock starts, sends them
 * with node:http over keep-alive connections, and answers with the latencies' summary.
 *
 * - closed loop: `concurrency` senders, each sending its next request when the last was answered;
 * - open loop: request i is due at start + i / rate, whether or not earlier ones were answered, and its
 *   latency counts from when it was due, so a slow server cannot hide its queueing.
 */
import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { prepare, type Destination, type PayloadKind, type Prepared } from './payloads.js';

export interface LoadRun {
  kind: PayloadKind;
  to: Destination;
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
  const total = open ? Math.max(1, Math.round(spec.rate! * spec.seconds!)) : spec.requests!;
  const bodies = Array.from({ length: total }, (_, n) => prepare(spec.kind, spec.to, n));
  const agent = new Agent({ keepAlive: true, maxSockets: open ? Infinity : spec.concurrency! });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let acceptedRecords = 0;
  let maxSendDelay = 0;
  const record = (prepared: Prepared, status: number, took: number) => {
    latencies.push(took);
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status === 200) acceptedRecords += prepared.records;
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
        const prepared = bodies[i]!;
        inFlight.push(post(agent, prepared).then((status) => record(prepared, status, performance.now() - due)));
      }
      if (i < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + i * interval - performance.now())));
    }
    await Promise.all(inFlight);
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: spec.concurrency! }, async () => {
        while (next < total) {
          const prepared = bodies[next++]!;
          const sent = performance.now();
          record(prepared, await post(agent, prepared), performance.now() - sent);
        }
      }),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!;
  return { sent: total, accepted: statuses[200] ?? 0, acceptedRecords, statuses, seconds, perSecond: total / seconds, p50: at(50), p99: at(99), max: latencies.at(-1)!, startedAt, endedAt: Date.now(), maxSendDelay };
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
