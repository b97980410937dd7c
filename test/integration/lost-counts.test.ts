/**
 * A worker completes a job once its error events are stored, and counts them into their issues
 * after; a note in the store lists the batches until the count is done. A worker that dies between
 * the two leaves the note, and the recount sweep counts those events from it, once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ErrorEventRecord, Stamped } from '../../src/shared/telemetry/records.js';
import { createProject, signUp, type Account } from '../support/factories/accounts.js';
import { hex } from '../support/factories/telemetry.js';
import { placeInAnotherWorker } from '../support/another-worker.js';
import { type Harness, useHarness, useScheduledJob } from '../support/harness.js';
import { eventually } from '../support/wait.js';

/** How old a note is before the sweep takes its count for lost, in this file. */
const RECOUNT_AFTER_MS = 4000;

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), { WORKER_RECOUNT_AFTER_MS: String(RECOUNT_AFTER_MS) }, { workers: true });

beforeAll(async () => {
  owner = await signUp(h);
});
// the test runs the sweep itself, at the moments it names
const recount = useScheduledJob(() => h, 'recount-error-events');
const sweep = () => recount.run() as Promise<{ batches: number }>;

test('error events stored by a worker that died before counting them are counted once by the recount sweep', async () => {
  const project = await createProject(owner);
  const stamp = (record: ErrorEventRecord): Stamped<ErrorEventRecord> => ({ orgId: owner.organization.id, projectId: project.id, record });
  const event = (user: string) => ({
    level: 'error',
    platform: 'javascript',
    release: 'shop@4.1.0',
    user: { id: user },
    exception: { values: [{ type: 'RangeError', value: 'cart total is negative', stacktrace: { frames: [{ function: 'checkout', filename: 'cart.js', lineno: 12 }] } }] },
  });
  const batches = ['a', 'b'].map((name) => ({
    batchId: `lost-${hex(8)}/errors/${name}`,
    items: ['ada', 'grace', 'ada'].map((user) => stamp({ eventId: hex(16), timeMs: Date.now(), event: event(user) })),
  }));
  await placeInAnotherWorker(batches);
  const issuesOfProject = async () => (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data as { id: string; count: number; user_count: number }[];
  // stored, and its count gone with the worker: no issue says so yet
  expect(await issuesOfProject()).toEqual([]);

  // a note younger than WORKER_RECOUNT_AFTER_MS may be a count still running: the sweep leaves it
  expect(await sweep()).toEqual({ batches: 0 });
  await sleep(RECOUNT_AFTER_MS);
  expect(await sweep()).toEqual({ batches: 2 });
  const [issue] = await issuesOfProject();
  expect(issue).toMatchObject({ count: 6, user_count: 2 });
  const listed = (await owner.client.get(`/v1/issues/${issue!.id}/events?limit=100`)).body.data as { event_id: string }[];
  expect(listed.map((e) => e.event_id).sort()).toEqual(batches.flatMap((batch) => batch.items.map((item) => item.record.eventId)).sort());

  // the note is gone with the count: the next sweep counts nothing twice
  expect(await sweep()).toEqual({ batches: 0 });
  expect((await issuesOfProject())[0]).toMatchObject({ count: 6, user_count: 2 });
  // the end users come in with the workers' next write of them
  const users = await eventually(async () => {
    const listed = (await owner.client.get(`/v1/users?project=${project.id}&limit=10`)).body.data as { user_id: string; event_count: number }[];
    return listed.length === 2 ? listed : undefined;
  }, 'the end users written', 15_000);
  expect(users.map((user) => [user.user_id, user.event_count]).sort()).toEqual([['ada', 4], ['grace', 2]]);
}, 90_000);
