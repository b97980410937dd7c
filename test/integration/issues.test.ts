import mongoose, { Types } from 'mongoose';
import { type Harness, useHarness } from '../support/harness.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, eventId, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { placeInAnotherWorker } from '../support/another-worker.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
});

async function send(project: ProjectWithDsn, ...events: Record<string, unknown>[]) {
  for (const event of events) {
    const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    expect(reply.status).toBe(200);
  }
}

/** An error event as the workers take it from a job, received now or at `timeMs`. */
function workerItem(project: ProjectWithDsn, event: Record<string, unknown>, timeMs = Date.now()) {
  return { orgId: owner.organization.id, projectId: project.id, record: { eventId: event.event_id as string, timeMs, event } };
}

/** `count` new events of one exception type, as the workers take them. */
const workerItems = (project: ProjectWithDsn, count: number, type: string) => Array.from({ length: count }, () => workerItem(project, errorEvent({}, { type })));

/** Takes an issue's write turn and keeps it, as a slow count in another process would, until `release`. */
async function holdTurn(issueId: Types.ObjectId): Promise<{ release: () => void; done: Promise<void> }> {
  const { inTurn } = await import('../../src/shared/telemetry/storage.js');
  const { Issue } = await import('../../src/shared/features/issues/model.js');
  let release!: () => void;
  let taken!: () => void;
  const turnTaken = new Promise<void>((resolve) => (taken = resolve));
  const done = inTurn(Issue.collection.collectionName, issueId, () => {
    taken();
    return new Promise<void>((resolve) => (release = resolve));
  });
  await turnTaken;
  return { release, done };
}

async function issuesOnceCounted(account: Account, project: ProjectWithDsn, total: number) {
  return eventually(async () => {
    const reply = await account.client.get(`/v1/issues?project=${project.id}`);
    const counted = reply.body.data.reduce((sum: number, issue: { count: number }) => sum + issue.count, 0);
    return counted >= total ? reply.body.data : undefined;
  }, `${total} events counted`);
}

describe('grouping through the pipeline', () => {
  test('the same error from different lines is one issue; another exception type is another', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    await send(project, errorEvent({}, { lineno: 10 }), errorEvent({}, { lineno: 99 }), errorEvent({}, { type: 'RangeError', value: 'index out of range' }));
    const issues = await issuesOnceCounted(owner, project, 3);
    expect(issues.map((i: { title: string; count: number }) => [i.title.split(':')[0], i.count]).sort()).toEqual([['RangeError', 1], ['TypeError', 2]]);
  });
});

describe('browser events', () => {
  test('minified frames from two builds, sent as text/plain, group into one issue', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const browserEvent = (build: string, colno: number) => ({
      event_id: eventId(),
      timestamp: Date.now() / 1000,
      platform: 'javascript',
      level: 'error',
      request: { url: 'https://shop.example/cart', headers: { 'User-Agent': 'Mozilla/5.0' } },
      exception: {
        values: [{
          type: 'TypeError',
          value: "Cannot read properties of null (reading 'addEventListener')",
          mechanism: { type: 'onerror', handled: false },
          stacktrace: { frames: [
            { filename: `https://cdn.shop.example/static/js/vendor.${build}.js`, function: 'r', lineno: 1, colno: colno + 5000, in_app: true },
            { filename: `https://cdn.shop.example/static/js/main.${build}.js?v=${build}`, function: 'HTMLDocument.n', lineno: 1, colno, in_app: true },
          ] },
        }],
      },
    });
    for (const [build, colno] of [['3f2a1b9c', 18211], ['9e8d7c6b', 19942]] as const) {
      const event = browserEvent(build, colno);
      const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}&sentry_version=7`, envelope({ event_id: event.event_id, sdk: { name: 'sentry.javascript.browser', version: '11.12.0' } }, [{ type: 'event', payload: event }]), {
        'content-type': 'text/plain;charset=UTF-8',
        origin: 'https://shop.example',
      });
      expect(reply.status).toBe(200);
    }
    const [issue] = await issuesOnceCounted(owner, project, 2);
    expect(issue).toMatchObject({ count: 2, platform: 'javascript', title: "TypeError: Cannot read properties of null (reading 'addEventListener')" });
    const detail = await owner.client.get(`/v1/issues/${issue.id}`);
    expect(detail.body.latest_event.exception[0].frames.at(-1)).toMatchObject({ function: 'HTMLDocument.n', in_app: true });
    expect(detail.body.latest_event.request.url).toBe('https://shop.example/cart');
  });
});

describe('clocks', () => {
  test('an event stamped in the future counts as seen when it was processed', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const nextYear = Date.now() / 1000 + 365 * 86_400;
    const before = Date.now();
    await send(project, errorEvent({ timestamp: nextYear }, { type: 'ClockSkewError' }));
    const [issue] = await issuesOnceCounted(owner, project, 1);
    expect(Date.parse(issue.last_seen)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(issue.last_seen)).toBeLessThanOrEqual(Date.now());
  });
});

describe('idempotency', () => {
  test('one event_id sent twice, and 50 times concurrently, is stored once and counted once', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const twice = errorEvent();
    await send(project, twice, twice);
    const many = errorEvent({}, { type: 'ConcurrencyError', value: 'sent fifty times' });
    const body = envelope({ event_id: many.event_id }, [{ type: 'event', payload: many }]);
    const replies = await Promise.all(Array.from({ length: 50 }, () => h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, body)));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const marker = errorEvent({}, { type: 'MarkerError', value: 'sent after the others' });
    await send(project, marker);
    const issues = await issuesOnceCounted(owner, project, 3);
    await eventually(async () => ((await mongoose.connection.db!.collection('errorevents').countDocuments({ eventId: marker.event_id })) === 1 ? true : undefined), 'the marker');
    expect(issues.map((i: { type: string; count: number }) => [i.type, i.count]).sort()).toEqual([['ConcurrencyError', 1], ['MarkerError', 1], ['TypeError', 1]]);
    const stored = await mongoose.connection.db!.collection('errorevents').countDocuments({ eventId: { $in: [twice.event_id, many.event_id] } });
    expect(stored).toBe(2);
  });
});

describe('the error processor after a crash and under concurrency', () => {
  test('a retried batch counts the events it stored but never counted; another batch leaves them alone', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { eventKey, ingestErrorEvents, issueKey } = await import('../../src/shared/features/issues/store.js');
    const { groupingHash } = await import('../../src/shared/features/issues/grouping.js');
    const { ErrorEvent, Issue } = await import('../../src/shared/features/issues/model.js');
    const projectId = new Types.ObjectId(project.id);
    const item = (event: Record<string, unknown>) => workerItem(project, event);
    // As a batch that crashed after storing its events would leave them: stored, uncounted.
    const crashed = errorEvent({}, { type: 'CrashRecoveryError' });
    const inFlight = errorEvent({}, { type: 'InFlightError' });
    for (const [event, batchId] of [[crashed, 'batch-1'], [inFlight, 'batch-2']] as const) {
      await ErrorEvent.collection.insertOne({
        _id: eventKey(projectId, event.event_id),
        orgId: new Types.ObjectId(owner.organization.id),
        projectId,
        eventId: event.event_id,
        issueId: issueKey(projectId, groupingHash(event as Parameters<typeof groupingHash>[0]).hash),
        page: 0,
        batchId,
        timestamp: new Date(),
        receivedAt: new Date(),
        level: 'error',
        title: 't',
        data: '{}',
      });
    }
    await ingestErrorEvents([item(crashed), item(inFlight)], 'batch-1');
    expect(await Issue.find({ projectId: new Types.ObjectId(project.id) }, { errorType: 1, eventCount: 1, _id: 0 }).lean()).toEqual([{ errorType: 'CrashRecoveryError', eventCount: 1 }]);
    await ingestErrorEvents([item(crashed)], 'batch-1');
    await ingestErrorEvents([item(crashed)], 'batch-3');
    expect((await Issue.findOne({ errorType: 'CrashRecoveryError', projectId: new Types.ObjectId(project.id) }).lean())!.eventCount).toBe(1);
  });

  test('a batch run again long after it counted (its worker died before the job was marked done) counts nothing twice', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { ingestErrorEvents } = await import('../../src/shared/features/issues/store.js');
    const { Issue } = await import('../../src/shared/features/issues/model.js');
    const batch = (events: number) => workerItems(project, events, 'LateRetryError');
    const first = batch(2);
    await ingestErrorEvents(first, 'late-1');
    // more batches into the same issue than it ever remembered before
    for (let n = 0; n < 70; n++) await ingestErrorEvents(batch(1), `late-next-${n}`);
    await ingestErrorEvents(first, 'late-1');
    const issue = (await Issue.findOne({ projectId: new Types.ObjectId(project.id) }).lean())!;
    // the issue keeps only the last batch's id: each count drops those of the finished batches before it
    expect({ eventCount: issue.eventCount, remembered: issue.countedBatches }).toEqual({ eventCount: 72, remembered: ['late-next-69'] });
  }, 60_000);
});

describe('a flush of several batches', () => {
  test('one write per issue counts every batch once, skipping a retried batch that counted before; end users and releases count once too', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { storeErrorBatches } = await import('../../src/shared/features/issues/store.js');
    const { Issue } = await import('../../src/shared/features/issues/model.js');
    const item = (type: string, user: string) => workerItem(project, errorEvent({ user: { id: user }, release: 'flush@1.0.0', environment: 'production' }, { type }));
    const retried = { batchId: 'flush-1', items: [item('FlushError', 'ada'), item('FlushError', 'bob')] };
    await storeErrorBatches([retried]);
    // the first batch again (its job retried after its worker died), with two new batches in the same flush
    const flush = [retried, { batchId: 'flush-2', items: [item('FlushError', 'ada'), item('OtherFlushError', 'cy')] }, { batchId: 'flush-3', items: [item('FlushError', 'cy')] }];
    await storeErrorBatches(flush);
    const { writeEndUsers } = await import('../../src/shared/features/users/service.js');
    const counted = async () => {
      // the end users this process's flushes saw, written as a workers process writes them every few seconds
      await writeEndUsers();
      const issues = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
      const users = (await owner.client.get(`/v1/users?project=${project.id}&limit=10`)).body.data;
      const releases = (await owner.client.get(`/v1/releases?project=${project.id}`)).body.data;
      return {
        issues: issues.map((i: { type: string; count: number; user_count: number }) => [i.type, i.count, i.user_count]).sort(),
        users: Object.fromEntries(users.map((user: { user_id: string; event_count: number }) => [user.user_id, user.event_count])),
        releases: releases.map((release: { version: string; events: number }) => [release.version, release.events]),
      };
    };
    const expected = {
      issues: [
        ['FlushError', 4, 3],
        ['OtherFlushError', 1, 1],
      ],
      users: { ada: 2, bob: 1, cy: 2 },
      releases: [['flush@1.0.0', 5]],
    };
    expect(await counted()).toEqual(expected);
    const flushIssue = await Issue.findOne({ projectId: new Types.ObjectId(project.id), errorType: 'FlushError' }).lean();
    expect(flushIssue!.countedBatches.sort()).toEqual(['flush-2', 'flush-3']);
    // that whole flush once more, as when every one of its jobs is retried, then its batches one by one
    await storeErrorBatches(flush);
    for (const batch of flush) await storeErrorBatches([batch]);
    expect(await counted()).toEqual(expected);
  });

  test('an issue shows its newest event’s level and message, every release and environment, and the release of its earliest event', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { storeErrorBatches } = await import('../../src/shared/features/issues/store.js');
    const { Issue } = await import('../../src/shared/features/issues/model.js');
    const now = Date.now();
    // the same exception from the same frames (one issue), each with its own message
    const item = (secondsAgo: number, fields: Record<string, unknown>, value: string) =>
      workerItem(project, errorEvent({ timestamp: (now - secondsAgo * 1000) / 1000, ...fields }, { type: 'FactsError', value }), now - secondsAgo * 1000);
    // one flush, its events out of time order: the newest is in the middle, the earliest last
    await storeErrorBatches([
      { batchId: 'facts-1', items: [item(20, { level: 'warning', release: 'facts@1.1.0', environment: 'staging' }, 'second')] },
      { batchId: 'facts-2', items: [item(5, { level: 'fatal', release: 'facts@1.2.0', environment: 'production' }, 'newest')] },
      { batchId: 'facts-3', items: [item(30, { level: 'error', release: 'facts@1.0.0', environment: 'production' }, 'earliest')] },
    ]);
    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
    expect(issue).toMatchObject({ title: 'FactsError: newest', type: 'FactsError', value: 'newest', level: 'fatal', platform: 'node', count: 3 });
    expect(issue.culprit).toMatch(/totalOf/);
    expect([...issue.releases].sort()).toEqual(['facts@1.0.0', 'facts@1.1.0', 'facts@1.2.0']);
    expect([...issue.environments].sort()).toEqual(['production', 'staging']);
    expect((await Issue.findById(issue.id).lean())!.firstRelease).toBe('facts@1.0.0');
    // the stored events keep their own level, release and environment
    const events = (await owner.client.get(`/v1/issues/${issue.id}/events`)).body.data;
    expect(events.map((e: { level: string; release: string; environment: string }) => [e.level, e.release, e.environment])).toEqual([
      ['fatal', 'facts@1.2.0', 'production'],
      ['warning', 'facts@1.1.0', 'staging'],
      ['error', 'facts@1.0.0', 'production'],
    ]);
  });
});

describe('concurrent batches', () => {
  test('eight batches counting into one issue at once lose no event, user or usage count', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { ingestErrorEvents } = await import('../../src/shared/features/issues/store.js');
    const { countUsage } = await import('../../src/shared/features/usage/service.js');
    const item = (event: Record<string, unknown>) => workerItem(project, event);
    const { writeEndUsers } = await import('../../src/shared/features/users/service.js');
    const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 25 }, (_, i) => item(errorEvent({ user: { id: `user-${b}-${i % 5}` } }, { type: 'ContendedError' }))));
    await Promise.all(batches.map((batch, b) => ingestErrorEvents(batch, `contended-${b}`)));
    await Promise.all(batches.map((batch, b) => countUsage('errors', [{ batchId: `contended-${b}`, items: batch }])));
    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
    expect(issue).toMatchObject({ count: 200, user_count: 40 });
    // the workers' 5 s timer may have written some of them already: what is left goes now
    await writeEndUsers();
    const users = await owner.client.get(`/v1/users?project=${project.id}&limit=200`);
    expect(users.body.data).toHaveLength(40);
    expect(users.body.data.reduce((sum: number, user: { event_count: number }) => sum + user.event_count, 0)).toBe(200);
    const usage = await mongoose.connection.db!.collection('usage').find({ projectId: new Types.ObjectId(project.id), category: 'errors' }).toArray();
    expect(usage.map((counter) => counter.quantity)).toEqual([200]);
  });
});

describe('an issue’s occurrences', () => {
  test('230 events page newest first, 50 at a time, each exactly once; the detail shows the newest', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { ingestErrorEvents } = await import('../../src/shared/features/issues/store.js');
    const start = Date.now() - 3_600_000;
    const sent = Array.from({ length: 230 }, (_, i) => errorEvent({ timestamp: (start + i * 1000) / 1000 }, { type: 'PagedError' }));
    const item = (event: Record<string, unknown>) => workerItem(project, event, (event.timestamp as number) * 1000);
    // two batches, as the workers would store them: 150 events, then 80 (spread over three pages of 100)
    await ingestErrorEvents(sent.slice(0, 150).map(item), 'paged-1');
    await ingestErrorEvents(sent.slice(150).map(item), 'paged-2');

    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
    expect(issue.count).toBe(230);
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { event_id: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/issues/${issue.id}/events?limit=50${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(50);
      listed.push(...page.body.data.map((event) => event.event_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(listed).toEqual(sent.map((event) => event.event_id).reverse());
    const detail = await owner.client.get(`/v1/issues/${issue.id}`);
    expect(detail.body.latest_event.event_id).toBe(sent.at(-1)!.event_id);
    expect((await owner.client.get(`/v1/issues/${issue.id}/events?cursor=not-a-cursor`)).body.code).toBe('invalid_request');
  });

  test('two batches counted into one issue at once put their events on the pages their counts give them', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { ingestErrorEvents } = await import('../../src/shared/features/issues/store.js');
    const { ErrorEvent } = await import('../../src/shared/features/issues/model.js');
    const batch = (events: number) => workerItems(project, events, 'CrowdedPageError');
    await ingestErrorEvents(batch(95), 'crowded-1');
    // both plan their events after the first 95; whichever counts second finds 105 before its own
    await Promise.all([ingestErrorEvents(batch(10), 'crowded-2'), ingestErrorEvents(batch(10), 'crowded-3')]);
    const pages = await ErrorEvent.find({ projectId: new Types.ObjectId(project.id) }, { page: 1 }).lean();
    expect(pages.filter((doc) => doc.page === 0).length).toBe(100);
    expect(pages.filter((doc) => doc.page === 1).length).toBe(15);
  });
});

describe('an issue over time, and what led to it', () => {
  test('events per hour come from the counts written with each batch, and a retried batch adds nothing', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { ingestErrorEvents } = await import('../../src/shared/features/issues/store.js');
    const hour = 3_600_000;
    const thisHour = Math.floor(Date.now() / hour) * hour;
    // three events two hours ago, one an hour ago, two in this hour
    const times = [thisHour - 2 * hour + 60_000, thisHour - 2 * hour + 120_000, thisHour - 2 * hour + 180_000, thisHour - hour + 1_000, thisHour + 1_000, thisHour + 2_000].map((ms) => Math.min(ms, Date.now()));
    const sent = times.map((ms) => errorEvent({ timestamp: ms / 1000 }, { type: 'HourlyError' }));
    const item = (event: Record<string, unknown>) => workerItem(project, event, (event.timestamp as number) * 1000);
    await ingestErrorEvents(sent.slice(0, 4).map(item), 'hourly-1');
    await ingestErrorEvents(sent.slice(4).map(item), 'hourly-2');
    await ingestErrorEvents(sent.slice(4).map(item), 'hourly-2');
    const [issue] = (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data;
    expect(issue).not.toHaveProperty('hourly');
    const series = await owner.client.get(`/v1/issues/${issue.id}/series?from=${new Date(thisHour - 3 * hour).toISOString()}&to=${new Date(thisHour + 30 * 60_000).toISOString()}`);
    expect(series.status).toBe(200);
    expect(series.body).toEqual({
      step_seconds: 3600,
      data: [0, 3, 1, 2].map((events, index) => ({ time: new Date(thisHour - (3 - index) * hour).toISOString(), events })),
    });
    const other = await signUp(h, 'stranger');
    expect((await other.client.get(`/v1/issues/${issue.id}/series`)).body.code).toBe('not_found');
    expect((await owner.client.get(`/v1/issues/${issue.id}/series?from=yesterday`)).body.code).toBe('validation_failed');
  });

  test('an event answers its breadcrumbs oldest first, in either form the SDKs send, with times as ISO-8601', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    // whole seconds: a fraction of a millisecond would round differently here and in the service
    const at = Math.floor(Date.now() / 1000);
    await send(
      project,
      errorEvent({ breadcrumbs: { values: [{ timestamp: at - 2, category: 'http', type: 'http', level: 'info', data: { method: 'GET', url: '/cart', status_code: 200 } }, { timestamp: new Date((at - 1) * 1000).toISOString(), category: 'ui.click', message: 'button#checkout' }, 'not a crumb'] } }, { type: 'CrumbError' }),
    );
    const [issue] = await issuesOnceCounted(owner, project, 1);
    const { latest_event: event } = (await owner.client.get(`/v1/issues/${issue.id}`)).body;
    expect(event.breadcrumbs).toEqual([
      { timestamp: new Date((at - 2) * 1000).toISOString(), type: 'http', category: 'http', level: 'info', message: null, data: { method: 'GET', url: '/cart', status_code: 200 } },
      { timestamp: new Date((at - 1) * 1000).toISOString(), type: null, category: 'ui.click', level: null, message: 'button#checkout', data: null },
    ]);
  });
});

describe('status changes', () => {
  let project: ProjectWithDsn;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
  });

  /** The issue once its count (and, when given, its status) shows: the worker counts first, then applies transitions. */
  const issueOf = async (type: string, count: number, status?: string) =>
    eventually(async () => {
      const reply = await owner.client.get(`/v1/issues?project=${project.id}`);
      return reply.body.data.find((i: { type: string; count: number; status: string }) => i.type === type && i.count === count && (!status || i.status === status));
    }, `${type} with ${count} events${status ? ` and ${status}` : ''}`);

  test('ignore until N more events: ignored until the count passes, then unresolved', async () => {
    await send(project, errorEvent({}, { type: 'NoisyError' }));
    const issue = await issueOf('NoisyError', 1);
    const ignored = await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'ignore', until_count: 2 });
    expect(ignored.body).toMatchObject({ status: 'ignored', ignore: { until: null, until_count: 3 } });
    await send(project, errorEvent({}, { type: 'NoisyError' }));
    expect((await issueOf('NoisyError', 2)).status).toBe('ignored');
    await send(project, errorEvent({}, { type: 'NoisyError' }));
    expect((await issueOf('NoisyError', 3, 'unresolved')).ignore).toBeNull();
  });

  test('ignored without a condition stays ignored; reopen makes it unresolved; actions are idempotent', async () => {
    await send(project, errorEvent({}, { type: 'QuietError' }));
    const issue = await issueOf('QuietError', 1);
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'ignore' })).body).toMatchObject({ status: 'ignored', ignore: { until: null, until_count: null } });
    await send(project, errorEvent({}, { type: 'QuietError' }));
    expect((await issueOf('QuietError', 2)).status).toBe('ignored');
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'reopen' })).body.status).toBe('unresolved');
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'reopen' })).status).toBe(200);
  });

  test('ignore until a time: the scheduled job reopens it once the time passes', async () => {
    await send(project, errorEvent({}, { type: 'TimedError' }));
    const issue = await issueOf('TimedError', 1);
    const until = new Date(Date.now() + 1500).toISOString();
    expect((await owner.client.patch(`/v1/issues/${issue.id}`, { action: 'ignore', until })).body).toMatchObject({ status: 'ignored', ignore: { until } });
    const { reopenExpiredIgnores } = await import('../../src/shared/features/issues/service.js');
    expect(await reopenExpiredIgnores()).toBe(0);
    await new Promise((r) => setTimeout(r, 1600));
    expect(await reopenExpiredIgnores()).toBe(1);
    expect((await owner.client.get(`/v1/issues/${issue.id}`)).body.status).toBe('unresolved');
  });

  test('bad actions and conditions answer validation_failed', async () => {
    await send(project, errorEvent({}, { type: 'ValidatedError' }));
    const issue = await issueOf('ValidatedError', 1);
    for (const body of [{ action: 'delete' }, { action: 'resolve', until_count: 5 }, { action: 'ignore', until_count: 0 }, { action: 'ignore', until: '2001-01-01T00:00:00Z' }]) {
      const reply = await owner.client.patch(`/v1/issues/${issue.id}`, body);
      expect({ body, status: reply.status, code: reply.body.code }).toEqual({ body, status: 400, code: 'validation_failed' });
    }
  });
});

describe('feedback', () => {
  test('submitted with a session, an API key or a DSN, and listed newest first', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const key = (await owner.client.post('/v1/api-keys', { name: 'feedback', role: 'member' })).body.secret;
    const bySession = await owner.client.post('/v1/feedback', { project_id: project.id, message: 'The checkout button does nothing', email: 'buyer@example.com' });
    expect(bySession.status).toBe(201);
    expect((await h.api.with({ bearer: key }).post('/v1/feedback', { project_id: project.id, message: 'from a script' })).status).toBe(201);
    const byDsn = await h.api.with({ authorization: `DSN ${project.publicKey}` }).post('/v1/feedback', { message: 'from the widget', associated_event_id: eventId() });
    expect(byDsn.status).toBe(201);
    expect(byDsn.body.project_id).toBe(project.id);
    expect((await h.api.with({ authorization: `DSN ${project.publicKey}` }).post('/v1/feedback', { message: 'x', project_id: (await projectWithDsn(owner, h.ingest.baseUrl)).id })).status).toBe(403);
    expect((await owner.client.post('/v1/feedback', { message: 'no project' })).status).toBe(400);
    const listed = await owner.client.get(`/v1/feedback?project=${project.id}`);
    expect(listed.body.data.map((f: { message: string; source: string }) => [f.message, f.source])).toEqual([
      ['from the widget', 'api'],
      ['from a script', 'api'],
      ['The checkout button does nothing', 'api'],
    ]);
  });

  test('a customer’s page may post feedback cross-origin with a DSN, without cookies', async () => {
    const preflight = await h.api.request('OPTIONS', '/v1/feedback', undefined, { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await h.api.request('OPTIONS', '/v1/projects', undefined, { origin: 'https://shop.example', 'access-control-request-method': 'GET' });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('feedback items from an SDK envelope arrive in the list', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const id = eventId();
    const item = { event_id: id, timestamp: Date.now() / 1000, type: 'feedback', contexts: { feedback: { message: 'Love the new search', contact_email: 'fan@example.com', name: 'Fan' } } };
    const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: id }, [{ type: 'feedback', payload: item }]));
    expect(reply.status).toBe(200);
    const listed = await eventually(async () => {
      const r = await owner.client.get(`/v1/feedback?project=${project.id}`);
      return r.body.data.length ? r.body.data : undefined;
    }, 'the feedback');
    expect(listed).toEqual([expect.objectContaining({ message: 'Love the new search', email: 'fan@example.com', name: 'Fan', source: 'feedback' })]);
  });
});

describe('tenant isolation and credentials', () => {
  test('another organisation’s issue answers exactly like a missing one; DSNs cannot read', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    await send(project, errorEvent({}, { type: 'PrivateError' }));
    const issue = await eventually(async () => (await owner.client.get(`/v1/issues?project=${project.id}`)).body.data[0], 'the issue');
    const intruder = await signUp(h, 'intruder');
    const missing = '0123456789abcdef01234567';
    for (const [method, path, body] of [
      ['GET', `/v1/issues/${issue.id}`, undefined],
      ['GET', `/v1/issues/${issue.id}/events`, undefined],
      ['PATCH', `/v1/issues/${issue.id}`, { action: 'resolve' }],
    ] as const) {
      const theirs = await intruder.client.request(method, path, body);
      const absent = await intruder.client.request(method, path.replace(issue.id, missing), body);
      expect(theirs.status).toBe(404);
      expect({ ...theirs.body, request_id: '' }).toEqual({ ...absent.body, request_id: '' });
    }
    expect((await intruder.client.get(`/v1/issues?project=${project.id}`)).status).toBe(404);
    expect((await intruder.client.get('/v1/issues')).body.data).toEqual([]);
    expect((await owner.client.get(`/v1/issues/${issue.id}`)).body.status).toBe('unresolved');
    const dsn = h.api.with({ authorization: `DSN ${project.publicKey}` });
    for (const path of ['/v1/issues', `/v1/issues/${issue.id}`, '/v1/users', '/v1/feedback']) expect((await dsn.get(path)).status).toBe(403);
  });
});

describe('events listed before their issue counts them', () => {
  test('while a count waits on its issue, the events placed meanwhile are already listed, on the issue’s next page; then it counts them all once', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { placeErrorBatches, storeErrorBatches } = await import('../../src/shared/features/issues/store.js');
    const { Issue } = await import('../../src/shared/features/issues/model.js');
    const items = (count: number) => workerItems(project, count, 'PagedError');
    await storeErrorBatches([{ batchId: 'paged-1', items: items(100) }]);
    const issue = (await Issue.findOne({ projectId: new Types.ObjectId(project.id), errorType: 'PagedError' }).lean())!;
    expect({ count: issue.eventCount, lastPage: issue.lastPage }).toEqual({ count: 100, lastPage: 0 });

    const held = await holdTurn(issue._id);
    const second = items(5);
    const third = items(3);
    const placed = [await placeErrorBatches([{ batchId: 'paged-2', items: second }]), await placeErrorBatches([{ batchId: 'paged-3', items: third }])];

    const newest = await owner.client.get(`/v1/issues/${issue._id.toHexString()}/events?limit=10`);
    expect(newest.status).toBe(200);
    expect(newest.body.data.slice(0, 8).map((event: { event_id: string }) => event.event_id).sort()).toEqual([...second, ...third].map((item) => item.record.eventId).sort());
    expect((await owner.client.get(`/v1/issues/${issue._id.toHexString()}`)).body.count).toBe(100);

    held.release();
    await held.done;
    await Promise.all(placed.map(({ counted }) => counted));
    const after = (await Issue.findById(issue._id).lean())!;
    expect({ count: after.eventCount, lastPage: after.lastPage }).toEqual({ count: 108, lastPage: 1 });
    // paging through lists each of the 108 once
    const seen: string[] = [];
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const reply: { body: { data: { event_id: string }[]; next_cursor: string | null } } = await owner.client.get(`/v1/issues/${issue._id.toHexString()}/events?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...reply.body.data.map((event) => event.event_id));
      cursor = reply.body.next_cursor;
    }
    expect(new Set(seen).size).toBe(108);
    expect(seen).toHaveLength(108);
  });

  test('with its count held back, a busy issue lists its newest events from six pages past the counted one, and pages through every event once', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { placeErrorBatches, storeErrorBatches } = await import('../../src/shared/features/issues/store.js');
    const { Issue } = await import('../../src/shared/features/issues/model.js');
    const start = Date.now() - 3_600_000;
    // one event a second from an hour ago, so the newest first order is the order they were sent in, reversed
    const timed = (from: number, count: number) =>
      Array.from({ length: count }, (_, n) => workerItem(project, errorEvent({ timestamp: (start + (from + n) * 1000) / 1000 }, { type: 'BusyPagesError' }), start + (from + n) * 1000));
    const first = timed(0, 100);
    await storeErrorBatches([{ batchId: 'busy-1', items: first }]);
    const issue = (await Issue.findOne({ projectId: new Types.ObjectId(project.id), errorType: 'BusyPagesError' }).lean())!;
    const held = await holdTurn(issue._id);
    // 560 more placed on pages 1 to 6 while the count of each waits
    const later = [timed(100, 250), timed(350, 250), timed(600, 60)];
    const placed = [];
    for (const [n, items] of later.entries()) placed.push(await placeErrorBatches([{ batchId: `busy-${n + 2}`, items }]));
    const newestFirst = [...first, ...later.flat()].map((item) => item.record.eventId).reverse();

    const listPages = async (limit: number) => {
      const seen: string[] = [];
      for (let cursor: string | null = null, first = true; first || cursor; first = false) {
        const reply: { status: number; body: { data: { event_id: string }[]; next_cursor: string | null } } = await owner.client.get(
          `/v1/issues/${issue._id.toHexString()}/events?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
        expect(reply.status).toBe(200);
        seen.push(...reply.body.data.map((event) => event.event_id));
        cursor = reply.body.next_cursor;
      }
      return seen;
    };
    try {
      const newest = await owner.client.get(`/v1/issues/${issue._id.toHexString()}/events?limit=150`);
      expect(newest.body.data.map((event: { event_id: string }) => event.event_id)).toEqual(newestFirst.slice(0, 150));
      expect(await listPages(100)).toEqual(newestFirst);
      expect((await owner.client.get(`/v1/issues/${issue._id.toHexString()}`)).body.latest_event.event_id).toBe(newestFirst[0]);
    } finally {
      held.release();
      await held.done;
    }
    await Promise.all(placed.map(({ counted }) => counted));
    const after = (await Issue.findById(issue._id).lean())!;
    expect({ count: after.eventCount, lastPage: after.lastPage }).toEqual({ count: 660, lastPage: 6 });
    expect(await listPages(70)).toEqual(newestFirst);
  }, 60_000);

  test('a flush into 40 issues another worker counted reads their counts at once, lists each new event first on the page its count gives it, then counts it once', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const { placeErrorBatches } = await import('../../src/shared/features/issues/store.js');
    const { ErrorEvent, Issue } = await import('../../src/shared/features/issues/model.js');
    const types = Array.from({ length: 40 }, (_, n) => `ElsewhereError${n}`);
    const projectId = new Types.ObjectId(project.id);
    // counted by a worker process this one knows nothing of
    const before = types.map((type) => workerItem(project, errorEvent({}, { type }), Date.now() - 60_000));
    await placeInAnotherWorker([{ batchId: 'elsewhere-1', items: before }], { counted: true });
    // as if each issue held 150 events, its newest (the one stored) on page 1
    await Issue.updateMany({ projectId }, { $set: { eventCount: 150, lastPage: 1 } });
    await ErrorEvent.updateMany({ projectId }, { $set: { page: 1 } });
    const issues = await Issue.find({ projectId }, { errorType: 1 }).lean();
    expect(issues).toHaveLength(40);

    // their counts held back, as slow counts in another process would hold them
    const held = await Promise.all(issues.map((issue) => holdTurn(issue._id)));
    const next = new Map(types.map((type) => [type, workerItem(project, errorEvent({}, { type }))]));
    let counted: Promise<void> | undefined;
    try {
      ({ counted } = await placeErrorBatches([{ batchId: 'elsewhere-2', items: [...next.values()] }]));
      for (const issue of issues) {
        const newest = await owner.client.get(`/v1/issues/${issue._id.toHexString()}/events?limit=1`);
        expect(newest.body.data.map((event: { event_id: string }) => event.event_id)).toEqual([next.get(issue.errorType!)!.record.eventId]);
      }
    } finally {
      for (const { release } of held) release();
      await Promise.all(held.map(({ done }) => done));
    }
    await counted;
    const after = await Issue.find({ projectId }, { eventCount: 1, lastPage: 1 }).lean();
    expect(new Set(after.map((issue) => `${issue.eventCount}/${issue.lastPage}`))).toEqual(new Set(['151/1']));
  }, 60_000);
});
