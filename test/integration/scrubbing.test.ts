/**
 * Data scrubbing: what an application's SDK sends along with its telemetry (end users' bearer tokens,
 * cookies, passwords, card numbers) is filtered before it is stored, so a member reading the event,
 * span or log back through the API sees "[Filtered]" while the harmless fields stay. Real envelopes and
 * OTLP/JSON exports go through the ingest service and the workers.
 */
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { addMember, signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, hex, nanos, otlpTraces, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

const F = '[Filtered]';
/** Everything the attacker (a member) must not find anywhere in what is stored. */
const SECRETS = ['end-user-bearer', 'cookie-secret', 'tok-123', 'tok-456', 'hunter2', '4111 1111 1111 1111', 'sk_live_abc', 'sess-1', '5555-5555-5555-4444', '4242424242424242', 'crumb-secret', 'user-pass', 'frame-pass', 'form-pass'];

let h: Harness;
let owner: Account;
let member: Account;
useHarness((started) => (h = started), {}, { workers: true });
beforeAll(async () => {
  owner = await signUp(h);
  member = await addMember(h, owner, 'member');
});

async function sendEvent(project: ProjectWithDsn, event: Record<string, unknown>) {
  const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  expect(reply.status).toBe(200);
}

/** The event as the API answers it to a member, once the workers stored it. */
async function storedEvent(project: ProjectWithDsn, id: string) {
  return eventually(async () => {
    const issues = await member.client.get(`/v1/issues?project=${project.id}&limit=200`);
    for (const issue of issues.body.data as { id: string }[]) {
      const events = await member.client.get(`/v1/issues/${issue.id}/events?limit=200`);
      const found = (events.body.data as { event_id: string }[]).find((e) => e.event_id === id);
      if (found) return found as Record<string, any>;
    }
    return undefined;
  }, `event ${id} stored`);
}

describe('error events from a Sentry SDK', () => {
  let project: ProjectWithDsn;
  let event: ReturnType<typeof errorEvent>;
  let stored: Record<string, any>;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    event = errorEvent({
      request: {
        url: 'https://shop.example/checkout?step=pay&token=tok-123',
        method: 'POST',
        headers: { Authorization: 'Bearer end-user-bearer', Cookie: 'sid=cookie-secret', 'Set-Cookie': 'sid=cookie-secret; HttpOnly', 'User-Agent': 'Mozilla/5.0', 'X-Api-Key': 'sk_live_abc' },
        cookies: { sid: 'cookie-secret' },
        query_string: 'step=pay&access_token=tok-456',
        data: { email: 'ada@example.com', password: 'hunter2', card: '4111 1111 1111 1111', note: 'gift wrap' },
      },
      extra: { order_id: 'o-77', api_key: 'sk_live_abc', nested: { session_id: 'sess-1', colour: 'blue' }, not_a_card: '4111 1111 1111 1112', logged_in: true },
      contexts: { payment: { card: '5555-5555-5555-4444', provider: 'stripe' }, runtime: { name: 'node', version: 'v20.11.0' } },
      breadcrumbs: {
        values: [
          { category: 'http', message: 'charged 4242424242424242 for o-77', data: { url: '/pay', Authorization: 'Bearer crumb-secret' } },
          { category: 'ui.click', message: 'button#pay' },
        ],
      },
      user: { id: 'user-42', email: 'ada@example.com', username: 'ada', ip_address: '10.0.0.1', password: 'user-pass', segment: 'vip' },
    });
    // local variables an SDK attaches to a frame
    (event.exception.values[0]!.stacktrace.frames[1] as Record<string, unknown>).vars = { password: 'frame-pass', total: '12.50' };
    await sendEvent(project, event);
    stored = await storedEvent(project, event.event_id);
  });

  test('request headers, cookies, query string and body lose their credentials and card numbers; harmless fields stay', () => {
    expect(stored.request).toEqual({
      url: `https://shop.example/checkout?step=pay&token=${F}`,
      method: 'POST',
      headers: { Authorization: F, Cookie: F, 'Set-Cookie': F, 'User-Agent': 'Mozilla/5.0', 'X-Api-Key': F },
      cookies: F,
      query_string: `step=pay&access_token=${F}`,
      data: { email: 'ada@example.com', password: F, card: F, note: 'gift wrap' },
    });
  });

  test('extra and contexts: credential names and Luhn-valid card numbers are filtered, everything else kept', () => {
    expect(stored.extra).toEqual({ order_id: 'o-77', api_key: F, nested: { session_id: F, colour: 'blue' }, not_a_card: '4111 1111 1111 1112', logged_in: true });
    expect(stored.contexts).toMatchObject({ payment: { card: F, provider: 'stripe' }, runtime: { name: 'node', version: 'v20.11.0' } });
  });

  test("the user keeps its identity (id, email, username, IP) and loses the rest's credentials", () => {
    expect(stored.user).toEqual({ id: 'user-42', email: 'ada@example.com', username: 'ada', ip_address: '10.0.0.1', password: F, segment: 'vip' });
  });

  test('breadcrumbs and frame variables are stored scrubbed, and no secret is stored anywhere', async () => {
    const doc = await ErrorEvent.findOne({ eventId: event.event_id }).lean();
    const data = JSON.parse(doc!.data as string);
    expect(data.breadcrumbs.values).toEqual([
      { category: 'http', message: `charged ${F} for o-77`, data: { url: '/pay', Authorization: F } },
      { category: 'ui.click', message: 'button#pay' },
    ]);
    expect(data.exception.values[0].stacktrace.frames[1].vars).toEqual({ password: F, total: '12.50' });
    const everything = JSON.stringify(doc);
    for (const secret of SECRETS) expect({ secret, found: everything.includes(secret) }).toEqual({ secret, found: false });
  });

  test('a form-encoded body sent as text is scrubbed field by field', async () => {
    const form = errorEvent({ request: { url: 'https://shop.example/login', method: 'POST', data: 'user=ada&password=form-pass&remember=1' } });
    await sendEvent(project, form);
    expect((await storedEvent(project, form.event_id)).request.data).toBe(`user=ada&password=${F}&remember=1`);
  });
});

describe('OTLP spans and logs', () => {
  let project: ProjectWithDsn;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
  });

  const otlp = async (path: string, body: unknown) => {
    const reply = await h.ingest.request('POST', path, JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` });
    expect(reply.status).toBe(200);
  };

  test('span and span-event attributes named like credentials, or holding card numbers, are filtered', async () => {
    const traceId = hex(16);
    const now = Date.now();
    await otlp(
      '/v1/traces',
      otlpTraces({
        shop: [
          {
            traceId,
            id: hex(8),
            name: 'POST /pay',
            kind: 'server',
            startMs: now,
            durationMs: 40,
            attributes: { 'http.route': '/pay', 'http.request.header.authorization': 'Bearer span-bearer', 'app.auth_token': 'tok-span', 'payment.card': '4111111111111111', 'order.id': 'o-88' },
            events: [{ name: 'charge', timeMs: now + 5, attributes: { 'payment.secret': 'whsec_1', amount: 1250 } }],
          },
        ],
      }),
    );
    const trace = await eventually(async () => {
      const reply = await member.client.get(`/v1/traces/${traceId}`);
      return reply.status === 200 && reply.body.spans.length === 1 ? reply.body : undefined;
    }, 'the trace stored');
    const [span] = trace.spans;
    expect(span.attributes).toMatchObject({ 'http.route': '/pay', 'http.request.header.authorization': F, 'app.auth_token': F, 'payment.card': F, 'order.id': 'o-88' });
    expect(span.events[0].attributes).toEqual({ 'payment.secret': F, amount: 1250 });
    expect(JSON.stringify(trace)).not.toMatch(/span-bearer|tok-span|4111111111111111|whsec_1/);
  });

  test('log attributes named like credentials are filtered and card numbers leave log bodies', async () => {
    const now = Date.now();
    await otlp('/v1/logs', {
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'shop' } }] },
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: nanos(now),
                  severityNumber: 9,
                  body: { stringValue: 'charged card 4111 1111 1111 1111 for order o-99' },
                  attributes: [
                    { key: 'user.password', value: { stringValue: 'log-pass' } },
                    { key: 'sessionToken', value: { stringValue: 'tok-log' } },
                    { key: 'order.id', value: { stringValue: 'o-99' } },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const [line] = await eventually(async () => {
      const reply = await member.client.get(`/v1/logs?project=${project.id}`);
      return reply.body.data?.length ? reply.body.data : undefined;
    }, 'the log stored');
    expect(line.body).toBe(`charged card ${F} for order o-99`);
    expect(line.attributes).toMatchObject({ 'user.password': F, sessionToken: F, 'order.id': 'o-99' });
  });
});

describe('field names a project adds (scrub_fields)', () => {
  let project: ProjectWithDsn;
  let admin: Account;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    admin = await addMember(h, owner, 'admin');
  });

  test('only an admin sets them; they are answered with the project', async () => {
    const refused = await member.client.patch(`/v1/projects/${project.id}`, { scrub_fields: ['coupon'] });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ code: 'forbidden', message: expect.any(String), request_id: expect.any(String) });
    const invalid = await admin.client.patch(`/v1/projects/${project.id}`, { scrub_fields: [''] });
    expect({ status: invalid.status, code: invalid.body.code, paths: invalid.body.details.map((d: { path: string }) => d.path) }).toEqual({ status: 400, code: 'validation_failed', paths: ['body.scrub_fields.0'] });
    expect((await member.client.get(`/v1/projects/${project.id}`)).body.scrub_fields).toEqual([]);
  });

  test("later events are stored with the project's own field names filtered too", async () => {
    const before = errorEvent({ extra: { coupon: 'SPRING-50', colour: 'blue' } });
    await sendEvent(project, before);
    expect((await storedEvent(project, before.event_id)).extra).toEqual({ coupon: 'SPRING-50', colour: 'blue' });

    const set = await admin.client.patch(`/v1/projects/${project.id}`, { scrub_fields: ['Coupon'] });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: project.id, scrub_fields: ['Coupon'] });
    expect((await member.client.get(`/v1/projects/${project.id}`)).body.scrub_fields).toEqual(['Coupon']);

    // Workers read a project's names again within seconds: events sent from now on are filtered once they do.
    const filtered = await eventually(async () => {
      const later = errorEvent({ extra: { coupon_code: 'SPRING-50', colour: 'blue' } });
      await sendEvent(project, later);
      const extra = (await storedEvent(project, later.event_id)).extra;
      return extra.coupon_code === F ? extra : undefined;
    }, 'an event stored with the new name filtered', 20_000);
    expect(filtered).toEqual({ coupon_code: F, colour: 'blue' });
  });
});
