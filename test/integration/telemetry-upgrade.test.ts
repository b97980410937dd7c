import type { Queue } from 'bullmq';
import { randomBytes } from 'node:crypto';
import { closeRedis, createRedis } from '../../src/shared/clients/redis.js';
import { createLogger } from '../../src/shared/logger.js';
import { TELEMETRY_JOB, TELEMETRY_JOB_VERSION, telemetryJobRecords, type TelemetryRecords } from '../../src/shared/queues.js';
import { startWorkers } from '../../src/workers/main.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, otlpLogs, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useQueueHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

/**
 * A queue holding jobs an earlier release wrote, as after an upgrade with a backlog: ingest (of this
 * release) accepts telemetry while no worker runs, the jobs are rewritten into the earlier formats,
 * and then this release's workers start. Nothing may be lost.
 */
let h: Harness;
let owner: Account;
let project: ProjectWithDsn;
let queue: Queue;
useQueueHarness(async (started, telemetry) => {
  [h, queue] = [started, telemetry];
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
});

async function sendEvent(type: string) {
  const event = errorEvent({}, { type });
  const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  expect(reply.status).toBe(200);
}

async function sendLog(body: string) {
  const export_ = otlpLogs([{ service: 'upgrade', body, level: 'info', at: Date.now() }]);
  const reply = await h.ingest.request('POST', '/v1/logs', JSON.stringify(export_), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
  expect(reply.status).toBe(200);
}

/** The jobs ingest queued, once `count` are there. */
const queued = (count: number) =>
  eventually(async () => {
    const jobs = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
    return jobs.length >= count ? jobs : undefined;
  }, `${count} jobs queued`);

test('jobs in every earlier format are stored once this release’s workers start; a job from a newer release fails and says why', async () => {
  await sendEvent('FirstFormatError');
  await sendLog('written before job versions');
  await sendEvent('SecondFormatError');
  await sendEvent('UnversionedError');
  await sendEvent('FutureError');
  const jobs = await queued(5);
  // what this release writes carries its format
  expect(jobs.map((job) => [job.name, job.data.v])).toEqual(jobs.map(() => [TELEMETRY_JOB, TELEMETRY_JOB_VERSION]));
  // each job's records as this release's workers read them (the OTLP log travels as its export)
  const contents = jobs.map((job) => telemetryJobRecords(job.name, job.data) as TelemetryRecords);
  expect(jobs.filter((job) => job.data.exports?.length).length).toBe(1);
  const byContent = (test: (records: TelemetryRecords) => boolean) => contents.find(test)!;
  const hasType = (type: string) => (records: TelemetryRecords) => JSON.stringify(records.errors ?? []).includes(type);
  const first = byContent(hasType('FirstFormatError'));
  const log = byContent((records) => !!records.logs);
  const second = byContent(hasType('SecondFormatError'));
  const unversioned = byContent(hasType('UnversionedError'));
  const future = byContent(hasType('FutureError'));
  await Promise.all(jobs.map((job) => job.remove()));
  // format 1: one job per record kind, named after it, carrying `{items}`
  await queue.add('errors', { items: first.errors }, { jobId: randomBytes(8).toString('hex') });
  await queue.add('logs', { items: log.logs }, { jobId: randomBytes(8).toString('hex') });
  // format 2, records only, as written before OTLP exports travelled as they came
  await queue.add(TELEMETRY_JOB, { v: 2, records: second }, { jobId: randomBytes(8).toString('hex') });
  // format 2 as written before jobs carried a version
  await queue.add(TELEMETRY_JOB, { records: unversioned }, { jobId: randomBytes(8).toString('hex') });
  const newer = await queue.add(TELEMETRY_JOB, { v: 99, records: future }, { jobId: randomBytes(8).toString('hex') });

  const logger = createLogger('warn');
  const redis = createRedis(h.config.REDIS_URL!, 'queue', logger);
  const stop = await startWorkers({ config: h.config, logger, redis });
  try {
    const issues = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues?project=${project.id}`);
      return reply.body.data.length >= 3 ? reply.body.data : undefined;
    }, 'the three errors grouped');
    expect(issues.map((issue: { type: string; count: number }) => [issue.type, issue.count]).sort()).toEqual([
      ['FirstFormatError', 1],
      ['SecondFormatError', 1],
      ['UnversionedError', 1],
    ]);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const logs = await eventually(async () => {
      const reply = await owner.client.get(`/v1/logs?project=${project.id}&from=${since}`);
      return reply.body.data?.length ? reply.body.data : undefined;
    }, 'the log line stored');
    expect(logs.map((line: { body: string }) => line.body)).toEqual(['written before job versions']);
    const failed = await eventually(async () => {
      const job = await queue.getJob(newer.id!);
      return job?.failedReason ? job : undefined;
    }, 'the newer job failed');
    expect(failed.failedReason).toBe(`telemetry job format 99 is newer than this release reads (${TELEMETRY_JOB_VERSION})`);
    expect(failed.attemptsMade).toBe(1);
  } finally {
    await stop();
    await closeRedis(redis);
  }
});
