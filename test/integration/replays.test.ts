import { randomBytes } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { Types } from 'mongoose';
import type { Redis } from 'ioredis';
import { createApiApp } from '../../src/api/app.js';
import { createBlobStore, type BlobStore } from '../../src/shared/clients/blob.js';
import { closeRedis, createRedis, redisReady } from '../../src/shared/clients/redis.js';
import { AuditEntry } from '../../src/shared/features/audit/model.js';
import { Replay, ReplaySegment } from '../../src/shared/features/replays/model.js';
import { listen, type RunningServer } from '../../src/shared/http/server.js';
import { createLogger } from '../../src/shared/logger.js';
import { type Harness, useHarness } from '../support/harness.js';
import { Client } from '../support/http.js';
import { addMember, createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { eventId, projectWithDsn, replayEnvelope, type ProjectWithDsn, type ReplaySegmentOptions } from '../support/factories/telemetry.js';
import { eventually } from '../support/wait.js';

let h: Harness;
useHarness((started) => (h = started), {}, { workers: true });

/**
 * Replay reads go to a second API app on the same database and blob directory whose blob store is the
 * real fs store with every `get` recorded, so a test can show which recording bytes a request read.
 */
const blobReads: string[] = [];
let reader: RunningServer;
let readerRedis: Redis;
const viaReader = (client: Client) => new Client(`http://127.0.0.1:${reader.port}`, client.options);

let owner: Account;
let project: ProjectWithDsn;
/** Capture switched off after ingest: its recordings must not be viewable. */
let withdrawn: ProjectWithDsn;
let withdrawnReplay: string;
/** Oldest first: started 3, 2 and 1 minutes ago. */
const replays = [eventId(), eventId(), eventId()];
const baseSeconds = Math.floor(Date.now() / 1000) - 180;
const eventsOf = (replayId: string, segmentId: number) => [
  { type: 4, data: { href: `https://shop.example/${replayId}/${segmentId}`, width: 1280, height: 720 }, timestamp: (baseSeconds + segmentId * 5) * 1000 },
  { type: 3, data: { source: 2, type: 2, id: segmentId }, timestamp: (baseSeconds + segmentId * 5) * 1000 + 1 },
];

async function sendSegment(target: ProjectWithDsn, replayId: string, options: ReplaySegmentOptions) {
  const response = await fetch(`${h.ingest.baseUrl}/api/${target.number}/envelope/?sentry_key=${target.publicKey}`, {
    method: 'POST',
    body: replayEnvelope(replayId, options),
    headers: { 'content-type': 'text/plain;charset=UTF-8' },
  });
  expect(response.status).toBe(200);
}

async function ingested(target: ProjectWithDsn, replayId: string, segments: number) {
  const projectId = new Types.ObjectId(target.id);
  await eventually(async () => {
    const summary = await Replay.findOne({ projectId, replayId }).lean();
    const stored = await ReplaySegment.countDocuments({ projectId, replayId });
    return summary?.segmentCount === segments && stored === segments ? true : undefined;
  }, `replay ${replayId} with ${segments} segments`);
}

const replayViews = async (account: Account) => (await account.client.get('/v1/audit-log?action=replay.view&limit=200')).body.data as any[];
const withoutRequestId = ({ request_id: _, ...body }: Record<string, unknown>) => body;

beforeAll(async () => {
  const real = createBlobStore(h.config);
  const recorded: BlobStore = {
    ...real,
    get: (key) => {
      blobReads.push(key);
      return real.get(key);
    },
  };
  const logger = createLogger('silent');
  readerRedis = createRedis(h.config.REDIS_URL!, 'fast', logger);
  await redisReady(readerRedis, 2000);
  reader = await listen(createApiApp({ config: h.config, logger, redis: readerRedis, blobs: recorded }), 0, '127.0.0.1');

  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  withdrawn = await projectWithDsn(owner, h.ingest.baseUrl);
  // Switched on before the first envelope, so no ingest process holds the "off" answer in its DSN cache.
  for (const target of [project, withdrawn]) expect((await owner.client.put(`/v1/projects/${target.id}/session-replay`, { enabled: true })).status).toBe(200);

  const user = { id: 'user-7', email: 'ada@example.test', username: 'ada', ip_address: '203.0.113.9' };
  const compressions = ['gzip', 'zlib', 'none'] as const;
  for (const [index, replayId] of replays.entries()) {
    const started = baseSeconds + index * 60;
    const segments = index === 0 ? 3 : 1;
    for (let segmentId = 0; segmentId < segments; segmentId++) {
      await sendSegment(project, replayId, {
        segmentId,
        compression: compressions[segmentId],
        events: eventsOf(replayId, segmentId),
        event: {
          replay_start_timestamp: started,
          timestamp: started + segmentId * 5,
          urls: [`https://shop.example/${index}/${segmentId}`],
          error_ids: segmentId === 1 ? [eventId()] : [],
          trace_ids: [eventId()],
          user,
          release: 'shop@2.0.0',
          environment: 'production',
        },
      });
    }
    await ingested(project, replayId, segments);
  }
  withdrawnReplay = eventId();
  await sendSegment(withdrawn, withdrawnReplay, { events: eventsOf(withdrawnReplay, 0) });
  await ingested(withdrawn, withdrawnReplay, 1);
  expect((await owner.client.put(`/v1/projects/${withdrawn.id}/session-replay`, { enabled: false })).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await reader?.close();
  if (readerRedis) await closeRedis(readerRedis);
});

beforeEach(() => {
  blobReads.length = 0;
});

describe('GET /v1/projects/{projectID}/replay', () => {
  test('lists recorded sessions newest first with their summary', async () => {
    const member = await addMember(h, owner, 'member');
    const reply = await member.client.get(`/v1/projects/${project.id}/replay`);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((r: { id: string }) => r.id)).toEqual([...replays].reverse());
    expect(reply.body.next_cursor).toBeNull();
    const oldest = reply.body.data[2];
    expect(oldest).toEqual({
      id: replays[0],
      project_id: project.id,
      replay_type: 'session',
      started_at: new Date(baseSeconds * 1000).toISOString(),
      last_seen_at: new Date((baseSeconds + 10) * 1000).toISOString(),
      duration_ms: 10_000,
      segment_count: 3,
      urls: ['https://shop.example/0/0', 'https://shop.example/0/1', 'https://shop.example/0/2'],
      user: { id: 'user-7', email: 'ada@example.test', username: 'ada', ip_address: '203.0.113.9' },
      error_ids: [expect.stringMatching(/^[0-9a-f]{32}$/)],
      trace_ids: expect.arrayContaining([expect.stringMatching(/^[0-9a-f]{32}$/)]),
      release: 'shop@2.0.0',
      environment: 'production',
    });
    expect(oldest.trace_ids).toHaveLength(3);
    expect(blobReads).toEqual([]);
  });

  test('pages by cursor, filters by start time and refuses unknown parameters', async () => {
    const first = await owner.client.get(`/v1/projects/${project.id}/replay?limit=2`);
    expect(first.body.data.map((r: { id: string }) => r.id)).toEqual([replays[2], replays[1]]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await owner.client.get(`/v1/projects/${project.id}/replay?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.data.map((r: { id: string }) => r.id)).toEqual([replays[0]]);
    expect(second.body.next_cursor).toBeNull();

    const from = new Date((baseSeconds + 60) * 1000).toISOString();
    const to = (baseSeconds + 120) * 1000;
    const window = await owner.client.get(`/v1/projects/${project.id}/replay?from=${from}&to=${to}`);
    expect(window.body.data.map((r: { id: string }) => r.id)).toEqual([replays[1]]);

    const unknown = await owner.client.get(`/v1/projects/${project.id}/replay?sort=oldest`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('invalid_request');
    expect((await owner.client.get(`/v1/projects/${project.id}/replay?cursor=nonsense`)).body.code).toBe('invalid_request');
  });
});

describe('GET /v1/projects/{projectID}/replay/{sessionID}', () => {
  test('an owner gets the recording: summary and every segment in order, decoded to its rrweb events', async () => {
    const path = `/v1/projects/${project.id}/replay/${replays[0]}`;
    const reply = await viaReader(owner.client).get(path);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ id: replays[0], project_id: project.id, segment_count: 3, duration_ms: 10_000, next_cursor: null });
    expect(reply.body.segments).toEqual(
      [0, 1, 2].map((segmentId) => ({ segment_id: segmentId, time: expect.any(String), size: expect.any(Number), encoding: 'json', data: eventsOf(replays[0]!, segmentId) })),
    );
    expect(blobReads).toEqual([0, 1, 2].map((segmentId) => `replays/${project.id}/${replays[0]}/${segmentId}`));

    const views = await replayViews(owner);
    expect(views.find((entry) => entry.request_id === reply.headers.get('x-request-id'))).toMatchObject({
      action: 'replay.view',
      actor: { type: 'user', id: owner.user.id },
      target: { type: 'replay', id: replays[0] },
      details: { project_id: project.id, from_segment: 0 },
      at: expect.any(String),
    });
  });

  test('segments come a page at a time, each page audited', async () => {
    const path = `/v1/projects/${project.id}/replay/${replays[0]}`;
    const first = await viaReader(owner.client).get(`${path}?limit=2`);
    expect(first.body.segments.map((s: { segment_id: number }) => s.segment_id)).toEqual([0, 1]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await viaReader(owner.client).get(`${path}?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.segments).toEqual([expect.objectContaining({ segment_id: 2, encoding: 'json', data: eventsOf(replays[0]!, 2) })]);
    expect(second.body.next_cursor).toBeNull();
    expect(blobReads).toHaveLength(3);
    const views = await replayViews(owner);
    expect(views.find((entry) => entry.request_id === second.headers.get('x-request-id'))?.details).toEqual({ project_id: project.id, from_segment: 2 });
  });

  test('a large recording is cut into pages by decoded size; a segment too large to decode comes as stored, base64', async () => {
    const large = eventId();
    const bulky = (megabytes: number) => Array.from({ length: megabytes * 1024 }, (_, i) => ({ type: 3, data: { source: 0, text: 'x'.repeat(1000) }, timestamp: i }));
    const sizes = [9, 9, 17, 0];
    for (const [segmentId, megabytes] of sizes.entries()) {
      await sendSegment(project, large, { segmentId, events: megabytes ? bulky(megabytes) : eventsOf(large, segmentId), event: { replay_start_timestamp: baseSeconds - 600 } });
    }
    await ingested(project, large, sizes.length);
    const path = `/v1/projects/${project.id}/replay/${large}`;

    const first = await viaReader(owner.client).get(path);
    expect(first.status).toBe(200);
    expect(first.body.segments.map((s: { segment_id: number; encoding: string }) => [s.segment_id, s.encoding])).toEqual([[0, 'json'], [1, 'json']]);
    expect(first.body.segments[0].data).toHaveLength(9 * 1024);
    expect(blobReads).toEqual([0, 1].map((segmentId) => `replays/${project.id}/${large}/${segmentId}`));

    const second = await viaReader(owner.client).get(`${path}?cursor=${first.body.next_cursor}`);
    expect(second.body.segments.map((s: { segment_id: number; encoding: string }) => [s.segment_id, s.encoding])).toEqual([[2, 'base64'], [3, 'json']]);
    const stored = Buffer.from(second.body.segments[0].data, 'base64');
    expect(stored.length).toBe(second.body.segments[0].size);
    expect(JSON.parse(gunzipSync(stored).toString())).toHaveLength(17 * 1024);
    expect(second.body.segments[1].data).toEqual(eventsOf(large, 3));
    expect(second.body.next_cursor).toBeNull();
  }, 30_000);

  test('an API key with the owner role may read; admin and member roles, by session or key, get 403 forbidden', async () => {
    const ownerKey = await createApiKey(owner, 'owner');
    const path = `/v1/projects/${project.id}/replay/${replays[1]}`;
    const byKey = await viaReader(new Client(h.api.baseUrl, { bearer: ownerKey.secret })).get(path);
    expect(byKey.status).toBe(200);
    expect(byKey.body.segments).toEqual([expect.objectContaining({ segment_id: 0, encoding: 'json', data: eventsOf(replays[1]!, 0) })]);
    expect((await replayViews(owner)).find((entry) => entry.request_id === byKey.headers.get('x-request-id'))?.actor).toEqual({ type: 'api_key', id: ownerKey.id });

    blobReads.length = 0;
    const viewsBefore = (await replayViews(owner)).length;
    const admin = await addMember(h, owner, 'admin');
    const member = await addMember(h, owner, 'member');
    const adminKey = await createApiKey(owner, 'admin');
    for (const client of [admin.client, member.client, new Client(h.api.baseUrl, { bearer: adminKey.secret })]) {
      const reply = await viaReader(client).get(path);
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
    expect(blobReads).toEqual([]);
    expect(await replayViews(owner)).toHaveLength(viewsBefore);
  });

  test('with capture switched off the recording is refused with consent_withdrawn, unaudited and unread', async () => {
    const viewsBefore = (await replayViews(owner)).length;
    const reply = await viaReader(owner.client).get(`/v1/projects/${withdrawn.id}/replay/${withdrawnReplay}`);
    expect(reply.status).toBe(403);
    expect(reply.body.code).toBe('consent_withdrawn');
    expect(blobReads).toEqual([]);
    expect(await replayViews(owner)).toHaveLength(viewsBefore);
    // The summary stays listed: it is metadata, and listing needs no consent to view a recording.
    expect((await owner.client.get(`/v1/projects/${withdrawn.id}/replay`)).body.data.map((r: { id: string }) => r.id)).toEqual([withdrawnReplay]);
  });

  test('when the audit entry cannot be written the answer is 503 not_ready and the blob store is never read', async () => {
    // A real failure of the store: a unique index that this request's entry (same action, target and
    // request id) clashes with, the clashing entry written first (in no organisation's trail).
    const requestId = `audit-clash-${randomBytes(6).toString('hex')}`;
    const index = await AuditEntry.collection.createIndex({ action: 1, 'target.id': 1, requestId: 1 }, { unique: true, name: 'replay_view_clash' });
    try {
      await AuditEntry.collection.insertOne({
        orgId: new Types.ObjectId(),
        actor: { type: 'system', id: null },
        action: 'replay.view',
        target: { type: 'replay', id: replays[0] },
        requestId,
        ip: null,
        at: new Date(),
      });
      const reply = await viaReader(owner.client).get(`/v1/projects/${project.id}/replay/${replays[0]}`, { 'x-request-id': requestId });
      expect(reply.status).toBe(503);
      expect(reply.body).toMatchObject({ code: 'not_ready', request_id: requestId });
      expect(blobReads).toEqual([]);
      expect(await AuditEntry.countDocuments({ requestId })).toBe(1);
    } finally {
      await AuditEntry.collection.dropIndex(index);
    }
    // Once the trail can be written again, so can the recording be read.
    const again = await viaReader(owner.client).get(`/v1/projects/${project.id}/replay/${replays[0]}`, { 'x-request-id': requestId });
    expect(again.status).toBe(200);
    expect(blobReads).toHaveLength(3);
  });

  test("another organisation's project or replay answers exactly like a missing one", async () => {
    const stranger = await signUp(h, 'stranger');
    const strangerProject = await projectWithDsn(stranger, h.ingest.baseUrl);
    const missingProject = new Types.ObjectId().toHexString();
    const cases = [
      [`/v1/projects/${project.id}/replay/${replays[0]}`, `/v1/projects/${missingProject}/replay/${replays[0]}`],
      [`/v1/projects/${project.id}/replay`, `/v1/projects/${missingProject}/replay`],
      [`/v1/projects/${strangerProject.id}/replay/${replays[0]}`, `/v1/projects/${strangerProject.id}/replay/${eventId()}`],
    ];
    for (const [foreign, missing] of cases) {
      const [a, b] = await Promise.all([viaReader(stranger.client).get(foreign!), viaReader(stranger.client).get(missing!)]);
      expect(a.status).toBe(404);
      expect(withoutRequestId(a.body)).toEqual(withoutRequestId(b.body));
      expect(a.body.code).toBe('not_found');
    }
    const malformed = await viaReader(owner.client).get(`/v1/projects/${project.id}/replay/not-a-replay-id`);
    expect(malformed.status).toBe(404);
    expect(blobReads).toEqual([]);
  });

  test('a DSN may not read replays: 403 forbidden', async () => {
    const dsn = new Client(h.api.baseUrl, { authorization: `DSN ${project.publicKey}` });
    for (const path of [`/v1/projects/${project.id}/replay`, `/v1/projects/${project.id}/replay/${replays[0]}`]) {
      const reply = await viaReader(dsn).get(path);
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
    expect(blobReads).toEqual([]);
  });
});
