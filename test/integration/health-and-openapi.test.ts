import { type Harness, useHarness } from '../support/harness.js';

let h: Harness;
useHarness((started) => (h = started));

test('/healthz and /readyz answer on the API and the ingest service, listing each dependency (and that email is off without SMTP_URL)', async () => {
  const email = { name: 'email', status: 'off', reason: 'SMTP_URL is not set: email destinations and digests are off', required: false };
  const expected = {
    api: [{ name: 'mongo', status: 'ok' }, { name: 'redis', status: 'ok' }, { name: 'blob', status: 'ok' }, email],
    // ingest keeps accepted telemetry in its disk spool while Redis is down, so Redis does not decide its readiness
    ingest: [
      { name: 'mongo', status: 'ok' },
      { name: 'spool', status: 'ok', batches: 0, bytes: 0, max_bytes: 1024 * 1024 * 1024, full: false, oldest_at: null },
      { name: 'redis', status: 'ok', required: false },
    ],
  };
  for (const [name, client] of [['api', h.api], ['ingest', h.ingest]] as const) {
    expect((await client.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await client.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', checks: expected[name] });
  }
  const unknown = await h.ingest.get('/nothing-here');
  expect(unknown.status).toBe(404);
  expect(unknown.body.code).toBe('not_found');
});

test('the OpenAPI 3.1 document covers every SPEC route of accounts and projects, with schemas from the validators', async () => {
  const reply = await h.api.get('/v1/openapi.json');
  expect(reply.status).toBe(200);
  const doc = reply.body;
  expect(doc.openapi).toBe('3.1.0');
  const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  const spec = [
    'POST /v1/auth/register', 'POST /v1/auth/login', 'POST /v1/auth/logout', 'GET /v1/me', 'GET /v1/members',
    'GET /v1/projects', 'POST /v1/projects', 'GET /v1/projects/{projectID}', 'GET /v1/projects/{projectID}/dsns',
    'POST /v1/projects/{projectID}/dsns', 'DELETE /v1/projects/{projectID}/dsns/{keyID}', 'PUT /v1/projects/{projectID}/session-replay',
    'GET /v1/api-keys', 'POST /v1/api-keys', 'DELETE /v1/api-keys/{keyID}', 'GET /v1/settings', 'PATCH /v1/settings', 'GET /v1/audit-log',
    'POST /v1/members', 'PATCH /v1/members/{memberID}', 'DELETE /v1/members/{memberID}', 'GET /v1/openapi.json',
  ];
  expect(operations.sort()).toEqual(expect.arrayContaining(spec.sort()));

  const register = doc.paths['/v1/auth/register'].post;
  expect(register.requestBody.content['application/json'].schema).toMatchObject({
    type: 'object',
    required: expect.arrayContaining(['email', 'password']),
    properties: { email: { type: 'string', format: 'email' }, password: { type: 'string', minLength: 8 } },
  });
  const settings = doc.paths['/v1/settings'].patch.requestBody.content['application/json'].schema;
  expect(settings.properties.retention_days).toMatchObject({ type: 'integer', minimum: 1, maximum: 365 });
  const list = doc.paths['/v1/projects'].get;
  expect(list.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'limit', in: 'query' }), expect.objectContaining({ name: 'cursor', in: 'query' })]));
  expect(doc.paths['/v1/projects/{projectID}'].get.parameters).toEqual([expect.objectContaining({ name: 'projectID', in: 'path', required: true })]);
  expect(doc.paths['/v1/api-keys'].post['x-required-role']).toBe('admin');
});

test('the document covers every SPEC route of traces, services, logs and metrics, each with its response shape', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  const views = [
    '/v1/traces', '/v1/traces/{traceID}', '/v1/services', '/v1/services/map', '/v1/services/structure', '/v1/services/dependencies',
    '/v1/services/approaching', '/v1/traffic', '/v1/queues', '/v1/anomalies', '/v1/endpoints/surges', '/v1/database/slow-queries',
    '/v1/database/query-patterns', '/v1/logs', '/v1/logs/patterns', '/v1/logs/surges', '/v1/metrics/names', '/v1/metrics/series',
  ];
  for (const path of views) {
    const get = doc.paths[path]?.get;
    expect({ path, documented: Boolean(get) }).toEqual({ path, documented: true });
    expect({ path, shape: get.responses['200'].content['application/json'].schema.type }).toEqual({ path, shape: 'object' });
  }
  expect(Object.keys(doc.paths['/v1/anomalies'].get.responses['200'].content['application/json'].schema.properties.data.items.properties)).toEqual(
    expect.arrayContaining(['service', 'metric', 'observed', 'baseline', 'band', 'score', 'started_at', 'ended_at', 'reason']),
  );
});

test('the document covers every SPEC route of cron monitoring, uptime, alerts, destinations and reports, with their fields', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  const routes = [
    'GET /v1/cron/checks', 'POST /v1/cron/checks', 'PATCH /v1/cron/checks/{checkID}', 'DELETE /v1/cron/checks/{checkID}',
    'GET /v1/cron/checks/{checkID}/pings', 'POST /v1/cron/checks/{checkID}/rotate', 'GET /v1/checkins/{token}', 'POST /v1/checkins/{token}',
    'GET /v1/uptime/monitors', 'POST /v1/uptime/monitors', 'PATCH /v1/uptime/monitors/{monitorID}', 'DELETE /v1/uptime/monitors/{monitorID}',
    'GET /v1/uptime/monitors/{monitorID}/checks', 'GET /v1/alerts', 'GET /v1/alert-destinations', 'POST /v1/alert-destinations',
    'DELETE /v1/alert-destinations/{destinationID}', 'GET /v1/reports/schedule', 'PUT /v1/reports/schedule', 'DELETE /v1/reports/schedule',
    'GET /v1/reports/preview',
  ];
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string];
    expect({ route, documented: Boolean(doc.paths[path]?.[method.toLowerCase()]) }).toEqual({ route, documented: true });
  }
  const fieldsOf = (path: string, method: string, status: string) => {
    const schema = doc.paths[path][method].responses[status].content['application/json'].schema;
    return Object.keys((schema.properties.data?.items ?? schema).properties);
  };
  expect(fieldsOf('/v1/cron/checks', 'post', '201')).toEqual(expect.arrayContaining(['id', 'project_id', 'name', 'slug', 'schedule', 'timezone', 'checkin_margin', 'max_runtime', 'state', 'last_checkin_at', 'next_expected_at', 'ping_url']));
  expect(fieldsOf('/v1/cron/checks/{checkID}/pings', 'get', '200')).toEqual(expect.arrayContaining(['received_at', 'status', 'duration_ms', 'run_id', 'excerpt', 'source']));
  expect(fieldsOf('/v1/uptime/monitors/{monitorID}/checks', 'get', '200')).toEqual(expect.arrayContaining(['checked_at', 'ok', 'status_code', 'latency_ms', 'error', 'tls_days_left']));
  expect(fieldsOf('/v1/alerts', 'get', '200')).toEqual(expect.arrayContaining(['id', 'kind', 'status', 'project_id', 'subject', 'title', 'opened_at', 'resolved_at', 'deliveries']));
  expect(fieldsOf('/v1/reports/preview', 'get', '200')).toEqual(['subject', 'html', 'text', 'data', 'period']);
  expect(doc.paths['/v1/checkins/{token}'].get.security).toEqual([]);
  expect(doc.paths['/v1/alert-destinations'].post['x-required-role']).toBe('admin');
  // addresses are confirmed through a route that needs no credential; answers say which are
  expect(doc.paths['/v1/email-confirmations/{token}'].post.security).toEqual([]);
  expect(fieldsOf('/v1/email-confirmations/{token}', 'post', '200')).toEqual(['email', 'verified']);
  expect(fieldsOf('/v1/alert-destinations', 'get', '200')).toEqual(expect.arrayContaining(['emails', 'addresses', 'url', 'secret_set']));
  expect(fieldsOf('/v1/reports/schedule', 'put', '200')).toEqual(expect.arrayContaining(['recipients', 'addresses']));
});

test('the document covers every SPEC route of deployments, releases, integrations, source maps, session replay and dashboards', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  const routes = [
    'POST /v1/deployments', 'GET /v1/deployments', 'GET /v1/deployments/{deploymentID}', 'GET /v1/deployments/{deploymentID}/health',
    'GET /v1/releases', 'GET /v1/projects/{projectID}/integrations', 'PUT /v1/projects/{projectID}/integrations/{provider}',
    'DELETE /v1/projects/{projectID}/integrations/{provider}', 'POST /v1/projects/{projectID}/artifacts', 'GET /v1/projects/{projectID}/artifacts',
    'DELETE /v1/projects/{projectID}/artifacts/{artifactID}', 'GET /v1/projects/{projectID}/replay', 'GET /v1/projects/{projectID}/replay/{sessionID}',
    'GET /v1/dashboards', 'POST /v1/dashboards', 'GET /v1/dashboards/{dashboardID}', 'PATCH /v1/dashboards/{dashboardID}',
    'PUT /v1/dashboards/{dashboardID}/widgets', 'DELETE /v1/dashboards/{dashboardID}',
  ];
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string];
    expect({ route, documented: Boolean(doc.paths[path]?.[method.toLowerCase()]) }).toEqual({ route, documented: true });
  }
  const health = doc.paths['/v1/deployments/{deploymentID}/health'].get.responses['200'].content['application/json'].schema;
  expect(Object.keys(health.properties)).toEqual(expect.arrayContaining(['error_rate', 'p95_latency', 'crash_free_sessions', 'new_issues', 'verdict', 'reasons']));
  expect(Object.keys(health.properties.error_rate.properties)).toEqual(expect.arrayContaining(['before', 'after', 'difference', 'test', 'statistic', 'p_value', 'minimum_sample']));
  expect(doc.paths['/v1/projects/{projectID}/replay/{sessionID}'].get['x-required-role']).toBe('owner');
  expect(doc.paths['/v1/projects/{projectID}/integrations/{provider}'].put['x-required-role']).toBe('admin');
});

test('the document covers every SPEC route of single sign-on, AI investigations and usage; checkout only where it is mounted', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  const routes = [
    'GET /v1/settings/sso', 'PUT /v1/settings/sso', 'DELETE /v1/settings/sso', 'GET /v1/settings/sso/domains', 'POST /v1/settings/sso/domains',
    'POST /v1/settings/sso/domains/verify', 'POST /v1/auth/sso/start', 'GET /v1/auth/sso/callback',
    'POST /v1/issues/{issueID}/investigate', 'GET /v1/issues/{issueID}/investigation', 'POST /v1/alerts/{alertID}/investigate',
    'GET /v1/alerts/{alertID}/investigation', 'POST /v1/projects/{projectID}/investigate', 'POST /v1/projects/{projectID}/explain',
    'GET /v1/investigations', 'GET /v1/investigations/{investigationID}', 'GET /v1/usage',
  ];
  for (const route of routes) {
    const [method, path] = route.split(' ') as [string, string];
    expect({ route, documented: Boolean(doc.paths[path]?.[method.toLowerCase()]) }).toEqual({ route, documented: true });
  }
  const usage = doc.paths['/v1/usage'].get.responses['200'].content['application/json'].schema;
  expect(Object.keys(usage.properties)).toEqual(expect.arrayContaining(['period', 'categories', 'projects', 'caveat']));
  // this harness has no PAYMENT_API_KEY: checkout is neither mounted nor documented
  expect(doc.paths['/v1/checkout']).toBeUndefined();
  expect((await h.api.post('/v1/checkout', {})).status).toBe(404);
});

test('every route the API answers is in the document, and nothing in the document is unrouted', async () => {
  const doc = (await h.api.get('/v1/openapi.json')).body;
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(methods)) {
      const concrete = path.replace(/\{\w+\}/g, '000000000000000000000000');
      const reply = await h.api.request(method.toUpperCase(), concrete, method === 'get' || method === 'delete' ? undefined : {});
      // A routed path answers anything but "no route": auth, validation or a missing object.
      expect({ route: `${method} ${path}`, noRoute: reply.status === 404 && /^no route/.test(reply.body.message) }).toEqual({ route: `${method} ${path}`, noRoute: false });
    }
  }
});
