import { dropTestDatabase, startHarness, type Harness } from '../support/harness.js';
import { addMember, signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { startFakeOllama, type ChatRequestBody, type FakeOllama } from '../support/ollama-server.js';
import { eventually } from '../support/wait.js';

const MODEL = 'test-model';
const API_KEY = 'ollama-test-key';
const TIMEOUT_MS = 800;

let h: Harness;
let off: Harness;
let fake: FakeOllama;
let owner: Account;
let project: ProjectWithDsn;
let issueId: string;

beforeAll(async () => {
  fake = await startFakeOllama();
  h = await startHarness({ OLLAMA_HOST: fake.url, OLLAMA_API_KEY: API_KEY, OLLAMA_MODEL: MODEL, AI_TIMEOUT_MS: String(TIMEOUT_MS) }, { workers: true });
  off = await startHarness();
  owner = await signUp(h);
  project = await projectWithDsn(owner, h.ingest.baseUrl);
  for (const lineno of [42, 43, 44]) {
    const event = errorEvent({}, { type: 'CartError', value: 'price of undefined', lineno, fn: 'totalOf' });
    const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    expect(reply.status).toBe(200);
  }
  const issue = await eventually(async () => {
    const reply = await owner.client.get(`/v1/issues?project=${project.id}`);
    return reply.body.data.find((i: { type: string; count: number }) => i.type === 'CartError' && i.count === 3);
  }, 'the issue with 3 events');
  issueId = issue.id;
});

afterAll(async () => {
  await h?.close();
  await off?.close();
  await fake?.close();
  await dropTestDatabase();
});

type Investigation = Record<string, any> & { id: string; status: string };

/** Polls an investigation until it has ended. */
const ended = (id: string) =>
  eventually(async () => {
    const reply = await owner.client.get(`/v1/investigations/${id}`);
    return ['completed', 'failed'].includes(reply.body.status) ? (reply.body as Investigation) : undefined;
  }, `investigation ${id} to end`, 20_000);

/** The user message of a chat request, parsed. */
const userMessageOf = (request: ChatRequestBody) => JSON.parse(request.messages.find((m) => m.role === 'user')!.content);

describe('AI off', () => {
  test('every AI route answers 501 ai_unavailable before authentication, with or without a credential', async () => {
    const someone = await signUp(off);
    const id = '0123456789abcdef01234567';
    const routes: [string, string, unknown?][] = [
      ['POST', `/v1/issues/${id}/investigate`],
      ['GET', `/v1/issues/${id}/investigation`],
      ['POST', `/v1/alerts/${id}/investigate`],
      ['GET', `/v1/alerts/${id}/investigation`],
      ['POST', `/v1/projects/${id}/investigate`],
      ['POST', `/v1/projects/${id}/explain`, { question: 'what calls the database?' }],
      ['GET', '/v1/investigations'],
      ['GET', `/v1/investigations/${id}`],
      ['GET', `/V1/Investigations`],
    ];
    for (const [method, path, body] of routes) {
      for (const client of [off.api, someone.client, off.api.with({ bearer: 'not-a-key' })]) {
        const reply = await client.request(method, path, body);
        expect([path, reply.status, reply.body.code]).toEqual([path, 501, 'ai_unavailable']);
        expect(reply.body.request_id).toEqual(expect.any(String));
      }
    }
    // other routes are unaffected
    expect((await off.api.get('/v1/issues')).status).toBe(401);
  });
});

describe('an issue investigation', () => {
  test('queued, then running, then completed with the model’s answer and exactly the evidence it was shown', async () => {
    fake.behaviour = { answer: { summary: 'totalOf reads price of an undefined cart item since shop@1.0.0.', suggested_actions: ['Guard against missing items in totalOf', 'Add a test for an empty cart'] } };
    fake.hold();
    const before = fake.requests.length;
    const first = await owner.client.post(`/v1/issues/${issueId}/investigate`);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ kind: 'issue', status: 'queued', subject: { type: 'issue', id: issueId }, project_id: project.id, model: MODEL, summary: null, suggested_actions: null, evidence: null, error: null, started_at: null, completed_at: null });
    const again = await owner.client.post(`/v1/issues/${issueId}/investigate`);
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(first.body.id);

    const running = await eventually(async () => {
      const reply = await owner.client.get(`/v1/issues/${issueId}/investigation`);
      return reply.body.status === 'running' && fake.requests.length > before ? reply.body : undefined;
    }, 'the investigation to run');
    expect(running.id).toBe(first.body.id);
    expect(running.started_at).toEqual(expect.any(String));
    expect((await owner.client.post(`/v1/issues/${issueId}/investigate`)).body.id).toBe(first.body.id);
    fake.release();

    const done = await ended(first.body.id);
    expect(done).toMatchObject({
      status: 'completed',
      summary: 'totalOf reads price of an undefined cart item since shop@1.0.0.',
      suggested_actions: ['Guard against missing items in totalOf', 'Add a test for an empty cart'],
      answer: null,
      error: null,
      model: MODEL,
      usage: { prompt_tokens: 321, completion_tokens: 45 },
    });
    expect(Date.parse(done.completed_at)).toBeGreaterThanOrEqual(Date.parse(done.started_at));
    expect(Date.parse(done.started_at)).toBeGreaterThanOrEqual(Date.parse(done.created_at));

    // the evidence: the issue's statistics and frames, and the context around its first event
    expect(done.evidence.issue).toMatchObject({ id: issueId, count: 3, type: 'CartError', releases: ['shop@1.0.0'] });
    const frames = done.evidence.latest_event.exception[0].frames;
    expect(frames.at(-1)).toMatchObject({ filename: '/app/src/cart.js', function: 'totalOf', in_app: true, context_line: '  return item.price * item.quantity;' });
    for (const key of ['related_traces', 'deployments_before_first_event', 'log_surges_around_first_event', 'anomalies', 'topology']) expect(done.evidence).toHaveProperty(key);

    // exactly one chat request, and it carried that evidence, the schema and the model
    const sent = fake.requests.slice(before);
    expect(sent).toHaveLength(1);
    const [request] = sent as [ChatRequestBody];
    expect(request).toMatchObject({ model: MODEL, stream: false });
    expect(request.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(request.messages[0]!.content).toMatch(/only that evidence/i);
    expect(userMessageOf(request).evidence).toEqual(done.evidence);
    expect(request.format).toMatchObject({
      type: 'object',
      properties: { summary: { type: 'string' }, suggested_actions: { type: 'array', items: { type: 'string' } } },
      required: expect.arrayContaining(['summary', 'suggested_actions']),
    });
    expect(fake.authorizations.at(-1)).toBe(`Bearer ${API_KEY}`);

    // the latest, and the same by id
    expect((await owner.client.get(`/v1/issues/${issueId}/investigation`)).body).toEqual(done);
  });

  test.each([
    ['the model server answers 500', { status: 500, error: 'model crashed' }, /500.*model crashed/],
    ['the model does not answer in time', { hang: true as const }, new RegExp(`within ${TIMEOUT_MS} ms`)],
    ['the answer is not JSON', { raw: 'The cart is broken, I think.' }, /not JSON/],
    ['the answer does not follow the schema', { answer: { summary: 'fine', suggested_actions: 'restart it' } }, /schema.*suggested_actions/],
  ])('%s: the investigation fails with the reason, and the next one may start', async (_, behaviour, reason) => {
    fake.behaviour = behaviour;
    const reply = await owner.client.post(`/v1/issues/${issueId}/investigate`);
    expect(reply.status).toBe(202);
    const done = await ended(reply.body.id);
    expect(done).toMatchObject({ status: 'failed', summary: null, suggested_actions: null, usage: null });
    expect(done.error).toMatch(reason);
    // the evidence gathered is kept, so the failure can be judged
    expect(done.evidence.issue.id).toBe(issueId);
    // a failed investigation does not block the next one
    fake.behaviour = { answer: { summary: 'again', suggested_actions: [] } };
    const next = await owner.client.post(`/v1/issues/${issueId}/investigate`);
    expect(next.body.id).not.toBe(reply.body.id);
    expect(await ended(next.body.id)).toMatchObject({ status: 'completed', summary: 'again', suggested_actions: [] });
  });
});

describe('alerts, projects and questions', () => {
  test('an alert investigation shows the alert and the facts of its subject', async () => {
    const alerts = await owner.client.get(`/v1/alerts?project=${project.id}&kind=issue.new`);
    const alert = alerts.body.data.find((a: { subject: { id: string } }) => a.subject.id === issueId);
    expect(alert).toBeDefined();
    fake.behaviour = { answer: { summary: 'A new CartError issue opened the alert.', suggested_actions: ['Fix totalOf'] } };
    const reply = await owner.client.post(`/v1/alerts/${alert.id}/investigate`);
    expect(reply.status).toBe(202);
    expect(reply.body).toMatchObject({ kind: 'alert', subject: { type: 'alert', id: alert.id }, project_id: project.id });
    const done = await ended(reply.body.id);
    expect(done).toMatchObject({ status: 'completed', summary: 'A new CartError issue opened the alert.', suggested_actions: ['Fix totalOf'] });
    expect(done.evidence.alert).toMatchObject({ id: alert.id, kind: 'issue.new', subject: { type: 'issue', id: issueId } });
    expect(done.evidence.subject_facts.issue).toMatchObject({ id: issueId, count: 3 });
    expect(userMessageOf(fake.requests.at(-1)!).evidence).toEqual(done.evidence);
    expect((await owner.client.get(`/v1/alerts/${alert.id}/investigation`)).body.id).toBe(done.id);
  });

  test('a project investigation shows services health, anomalies, deployments, alerts and issues', async () => {
    fake.behaviour = { answer: { summary: 'One unresolved issue; no traffic recorded.', suggested_actions: [] } };
    const reply = await owner.client.post(`/v1/projects/${project.id}/investigate`);
    expect(reply.status).toBe(202);
    const done = await ended(reply.body.id);
    expect(done).toMatchObject({ status: 'completed', kind: 'project', subject: { type: 'project', id: project.id }, summary: 'One unresolved issue; no traffic recorded.' });
    expect(Object.keys(done.evidence).sort()).toEqual(['open_anomalies', 'recent_alerts', 'recent_deployments', 'services_health', 'unresolved_issues', 'window']);
    expect(done.evidence.unresolved_issues.map((i: { id: string }) => i.id)).toContain(issueId);
    expect(done.evidence.recent_alerts.some((a: { kind: string }) => a.kind === 'issue.new')).toBe(true);
  });

  test('explain answers a question about the topology from its facts', async () => {
    fake.behaviour = { answer: { answer: 'No service calls the database in the window.', suggested_actions: ['Send traces'] } };
    const question = 'Which services call the database?';
    const reply = await owner.client.post(`/v1/projects/${project.id}/explain`, { question });
    expect(reply.status).toBe(202);
    expect(reply.body).toMatchObject({ kind: 'explain', question, status: 'queued' });
    // each question is its own investigation
    const second = await owner.client.post(`/v1/projects/${project.id}/explain`, { question: 'What is the entry point?' });
    expect(second.body.id).not.toBe(reply.body.id);
    const done = await ended(reply.body.id);
    expect(done).toMatchObject({ status: 'completed', answer: 'No service calls the database in the window.', summary: null, suggested_actions: ['Send traces'] });
    expect(done.evidence).toMatchObject({ services: [], edges: [], structure: expect.objectContaining({ entry_points: [] }) });
    await ended(second.body.id);
    const request = fake.requests.find((r) => userMessageOf(r).question === question)!;
    expect(userMessageOf(request).evidence).toEqual(done.evidence);
    expect(request.format).toMatchObject({ properties: { answer: { type: 'string' } }, required: expect.arrayContaining(['answer']) });
    expect((await owner.client.post(`/v1/projects/${project.id}/explain`, { question: '' })).status).toBe(400);
  });
});

describe('the list', () => {
  test('pages newest first without evidence, and filters by kind, status and project', async () => {
    const all: Investigation[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: Investigation[]; next_cursor: string | null } } = await owner.client.get(`/v1/investigations?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(3);
      all.push(...page.body.data);
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(all.length).toBeGreaterThanOrEqual(12);
    expect(new Set(all.map((i) => i.id)).size).toBe(all.length);
    const times = all.map((i) => Date.parse(i.created_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(all.every((i) => !('evidence' in i))).toBe(true);

    const explains = await owner.client.get(`/v1/investigations?kind=explain&project=${project.id}`);
    expect(explains.body.data.map((i: Investigation) => i.kind)).toEqual(['explain', 'explain']);
    const failed = await owner.client.get('/v1/investigations?status=failed&kind=issue');
    expect(failed.body.data).toHaveLength(4);
    expect((await owner.client.get('/v1/investigations?cursor=nonsense')).status).toBe(400);
    expect((await owner.client.get('/v1/investigations?kind=weather')).status).toBe(400);
  });
});

describe('access', () => {
  test('another organisation sees nothing: 404 as for what does not exist', async () => {
    const stranger = await signUp(h, 'stranger');
    const mine = (await owner.client.get('/v1/investigations?limit=1')).body.data[0];
    const alert = (await owner.client.get(`/v1/alerts?project=${project.id}`)).body.data[0];
    const replies = await Promise.all([
      stranger.client.get(`/v1/investigations/${mine.id}`),
      stranger.client.get(`/v1/issues/${issueId}/investigation`),
      stranger.client.post(`/v1/issues/${issueId}/investigate`),
      stranger.client.get(`/v1/alerts/${alert.id}/investigation`),
      stranger.client.post(`/v1/alerts/${alert.id}/investigate`),
      stranger.client.post(`/v1/projects/${project.id}/investigate`),
      stranger.client.post(`/v1/projects/${project.id}/explain`, { question: 'what is here?' }),
      stranger.client.get(`/v1/investigations?project=${project.id}`),
      owner.client.get('/v1/investigations/0123456789abcdef01234567'),
      owner.client.post('/v1/issues/not-an-id/investigate'),
    ]);
    expect(replies.map((r) => [r.status, r.body.code])).toEqual(replies.map(() => [404, 'not_found']));
    expect((await stranger.client.get('/v1/investigations')).body.data).toEqual([]);
  });

  test('a member may investigate and read; a DSN is refused with 403; no credential is 401', async () => {
    const member = await addMember(h, owner, 'member');
    fake.behaviour = { answer: { summary: 'member', suggested_actions: [] } };
    const reply = await member.client.post(`/v1/projects/${project.id}/investigate`);
    expect(reply.status).toBe(202);
    expect((await member.client.get(`/v1/investigations/${reply.body.id}`)).status).toBe(200);
    const dsn = h.api.with({ authorization: `DSN ${project.publicKey}` });
    for (const [method, path] of [['POST', `/v1/issues/${issueId}/investigate`], ['GET', '/v1/investigations'], ['POST', `/v1/projects/${project.id}/investigate`]] as const) {
      const refused = await dsn.request(method, path);
      expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    }
    expect((await h.api.post(`/v1/issues/${issueId}/investigate`)).status).toBe(401);
    await ended(reply.body.id);
  });
});

describe('never stuck', () => {
  test('a run that throws on its last attempt, and a run whose worker died, end failed', async () => {
    const { investigationsProcessor } = await import('../../src/workers/processors/investigations.js');
    const { failStuckInvestigations } = await import('../../src/shared/features/investigations/service.js');
    const { Investigation } = await import('../../src/shared/features/investigations/model.js');
    const { createLogger } = await import('../../src/shared/logger.js');
    fake.hold();
    const queued = await owner.client.post(`/v1/projects/${project.id}/explain`, { question: 'will this throw?' });
    // our own failure (not the model's): retried by BullMQ, and the last attempt marks the investigation failed
    const broken = { model: MODEL, chat: async () => { throw new TypeError('a bug'); } };
    const processor = investigationsProcessor({ logger: createLogger('silent'), ai: broken, timeoutMs: TIMEOUT_MS });
    const job = (attemptsMade: number) => ({ name: 'investigate', data: { investigationId: queued.body.id }, attemptsMade, opts: { attempts: 3 } }) as never;
    await expect(processor(job(0))).rejects.toThrow('a bug');
    expect((await Investigation.findById(queued.body.id).lean())!.status).toBe('running');
    await expect(processor(job(2))).rejects.toThrow('a bug');
    fake.release();
    expect(await ended(queued.body.id)).toMatchObject({ status: 'failed', error: 'the investigation failed unexpectedly' });

    // a run whose worker died: still `running` long past the model's deadline
    const now = new Date();
    const stuck = await Investigation.create({ orgId: owner.organization.id, projectId: project.id, kind: 'project', subjectType: 'project', subjectId: 'ffffffffffffffffffffffff', status: 'running', activeKey: 'project:ffffffffffffffffffffffff', model: MODEL, createdAt: new Date(now.getTime() - 3_600_000), startedAt: new Date(now.getTime() - 3_600_000) });
    const recent = await Investigation.create({ orgId: owner.organization.id, projectId: project.id, kind: 'project', subjectType: 'project', subjectId: 'eeeeeeeeeeeeeeeeeeeeeeee', status: 'running', activeKey: 'project:eeeeeeeeeeeeeeeeeeeeeeee', model: MODEL, createdAt: now, startedAt: now });
    expect(await failStuckInvestigations(TIMEOUT_MS, now)).toBe(1);
    expect((await owner.client.get(`/v1/investigations/${stuck.id}`)).body).toMatchObject({ status: 'failed', error: expect.stringMatching(/worker .* stopped/) });
    expect((await owner.client.get(`/v1/investigations/${recent.id}`)).body.status).toBe('running');
    await Investigation.deleteOne({ _id: recent._id });
  });
});
