import type { Queue } from 'bullmq';
import { setTimeout as sleep } from 'node:timers/promises';
import { TELEMETRY_JOB } from '../../src/shared/queues.js';
import { envelope, errorEvent, useQueueProject, type ProjectWithDsn } from '../support/factories/telemetry.js';
import type { Harness } from '../support/harness.js';

/**
 * How ingest sizes its jobs: while the workers keep up, a request's records are written at once;
 * while more than 128 jobs wait or are being stored, requests arriving close together share a job,
 * written 20 ms after the first or as soon as 16 requests have joined.
 * This file's harness runs no workers, so the queue holds what ingest wrote.
 */
let h: Harness;
let project: ProjectWithDsn;
let queue: Queue;
useQueueProject((started, telemetry, made) => {
  [h, queue, project] = [started, telemetry, made];
});

/** Sends one envelope of one event; answers its reply and its event id. */
function sendOne(): { reply: Promise<{ status: number }>; id: string } {
  const event = errorEvent({}, { type: 'LingerError' });
  const reply = h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  return { reply, id: event.event_id as string };
}

/**
 * Sends `count` envelopes of one event each, `gapMs` apart, without waiting for the answers in between.
 * Answers their statuses, their event ids and how long the sending took (timers run late on a busy machine).
 */
async function sendSpaced(count: number, gapMs: number): Promise<{ statuses: number[]; ids: string[]; sendingMs: number }> {
  const replies: Promise<{ status: number }>[] = [];
  const ids: string[] = [];
  const started = Date.now();
  for (let i = 0; i < count; i++) {
    const { reply, id } = sendOne();
    [replies[i], ids[i]] = [reply, id];
    await sleep(gapMs);
  }
  const sendingMs = Date.now() - started;
  return { statuses: (await Promise.all(replies)).map((reply) => reply.status), ids, sendingMs };
}

/** The queued jobs holding any of these event ids, and how many of the ids they hold. */
async function jobsHolding(ids: string[]): Promise<{ jobs: number; events: number }> {
  const wanted = new Set(ids);
  let [jobs, events] = [0, 0];
  for (const job of await queue.getJobs(['waiting'])) {
    const held = ((job.data.records?.errors ?? []) as { record: { eventId: string } }[]).filter((item) => wanted.has(item.record.eventId)).length;
    if (held > 0) [jobs, events] = [jobs + 1, events + held];
  }
  return { jobs, events };
}

test('while the workers keep up, each request is written at once, in a job of its own', async () => {
  const sent: string[] = [];
  for (let i = 0; i < 5; i++) {
    const { statuses, ids } = await sendSpaced(1, 0);
    expect(statuses).toEqual([200]);
    sent.push(...ids);
  }
  expect(await jobsHolding(sent)).toEqual({ jobs: 5, events: 5 });
});

/** A backlog, as when the workers fall behind: jobs no worker here will take. */
async function fallBehind(): Promise<void> {
  await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: TELEMETRY_JOB, data: { v: 2, records: {} }, opts: { jobId: `backlog-${i}` } })));
  // ingest looks at the backlog every 250 ms
  await sleep(600);
}

test('while more than 128 jobs wait, requests a few milliseconds apart share jobs, and every one is kept', async () => {
  await fallBehind();
  const { statuses, ids, sendingMs } = await sendSpaced(20, 3);
  expect(statuses.every((status) => status === 200)).toBe(true);
  const { jobs, events } = await jobsHolding(ids);
  expect(events).toBe(20);
  // a job takes what arrives in the 20 ms after its first request: at most one per 20 ms of sending,
  // and one more for the requests after the last (each request makes its own job without the linger)
  expect(jobs).toBeLessThanOrEqual(Math.floor(sendingMs / 20) + 2);
});

test('while the workers are behind, a job that 16 requests have joined is written without waiting out the linger', async () => {
  // connections opened first (fetch keeps them), so that 16 requests sent together arrive together
  await Promise.all(Array.from({ length: 17 }, () => sendOne().reply));
  await fallBehind();
  // 16 requests at once, then one more 5 ms later: within the linger, but after the job is full enough
  const together = Array.from({ length: 16 }, sendOne);
  await sleep(5);
  const after = sendOne();
  const statuses = await Promise.all([...together, after].map(({ reply }) => reply.then((answer) => answer.status)));
  expect(statuses.every((status) => status === 200)).toBe(true);
  expect(await jobsHolding(together.map(({ id }) => id))).toEqual({ jobs: 1, events: 16 });
  expect(await jobsHolding([after.id])).toEqual({ jobs: 1, events: 1 });
  expect(await jobsHolding([...together, after].map(({ id }) => id))).toEqual({ jobs: 2, events: 17 });
});
