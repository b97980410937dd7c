/**
 * Dashboards through HTTP: widgets whose params are checked by their view's own query rules, and
 * resolved by calling the view's own route handler for the caller, with real errors and metrics.
 */
import { dashboardViews } from '../../src/api/routes/dashboards.js';
import { signUp, type Account } from '../support/factories/accounts.js';
import { envelope, errorEvent, nanos, projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { eventually } from '../support/wait.js';

let h: Harness;
let owner: Account;
let other: Account;
let project: ProjectWithDsn;
let otherProject: ProjectWithDsn;
useHarness((started) => (h = started), {}, { workers: true });

/** On the hour, two hours ago: a window of metric points that no later request can change. */
const t0 = Math.floor((Date.now() - 2 * 3_600_000) / 3_600_000) * 3_600_000;

const layout = (x: number, y: number, w = 6, h = 4) => ({ x, y, w, h });
const issuesWidget = (overrides: Record<string, unknown> = {}) => ({
  title: 'Open errors',
  type: 'table',
  query: { view: 'issues', params: { project: project.id, status: 'unresolved', sort: 'events', limit: 10 } },
  layout: layout(0, 0),
  ...overrides,
});
const seriesParams = () => ({ project: project.id, name: 'queue.depth', from: String(t0), to: String(t0 + 3_600_000), step: 60, aggregation: 'max' });
const seriesWidget = (overrides: Record<string, unknown> = {}) => ({
  title: 'Queue depth',
  type: 'timeseries',
  query: { view: 'metrics.series', params: seriesParams() },
  layout: layout(6, 0),
  ...overrides,
});

async function sendErrors(target: ProjectWithDsn, count: number) {
  for (let i = 0; i < count; i++) {
    const event = errorEvent({}, { type: i === 0 ? 'RangeError' : 'TypeError' });
    const reply = await h.ingest.request('POST', `/api/${target.number}/envelope/?sentry_key=${target.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
    expect(reply.status).toBe(200);
  }
}

async function sendGauge(target: ProjectWithDsn) {
  const dataPoints = [0, 1, 2].map((i) => ({ timeUnixNano: nanos(t0 + i * 60_000 + 30_000), asDouble: 3 + 2 * i }));
  const body = { resourceMetrics: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] }, scopeMetrics: [{ metrics: [{ name: 'queue.depth', gauge: { dataPoints } }] }] }] };
  const reply = await h.ingest.request('POST', '/v1/metrics', JSON.stringify(body), { 'content-type': 'application/json', authorization: `Bearer ${target.publicKey}` });
  expect(reply.status).toBe(200);
}

beforeAll(async () => {
  [owner, other] = await Promise.all([signUp(h), signUp(h, 'other')]);
  [project, otherProject] = await Promise.all([projectWithDsn(owner, h.ingest.baseUrl), projectWithDsn(other, h.ingest.baseUrl)]);
  await sendErrors(project, 3);
  await sendGauge(project);
  await eventually(async () => {
    const issues = await owner.client.get(`/v1/issues?project=${project.id}`);
    const counted = issues.body.data.reduce((sum: number, issue: { count: number }) => sum + issue.count, 0);
    const series = await owner.client.get(`/v1/metrics/series?project=${project.id}&name=queue.depth&from=${t0}&to=${t0 + 3_600_000}&step=60`);
    return counted === 3 && series.body.points?.length === 3 ? true : undefined;
  }, 'the errors counted and the points stored');
});

async function createDashboard(account: Account, body: Record<string, unknown>) {
  const reply = await account.client.post('/v1/dashboards', body);
  expect(reply.status).toBe(201);
  return reply.body;
}

describe('round trip', () => {
  test('create with widgets, get, PATCH, PUT replacing the set with ids kept, DELETE', async () => {
    const created = await createDashboard(owner, { name: 'Checkout', description: 'what on-call looks at', widgets: [issuesWidget(), seriesWidget()] });
    expect(created).toMatchObject({ name: 'Checkout', description: 'what on-call looks at', created_by: owner.user.id });
    expect(created.created_at).toBe(created.updated_at);
    expect(created.widgets).toHaveLength(2);
    // stored as given: params keep their JSON types; each widget gets an id
    expect(created.widgets[0]).toMatchObject({ title: 'Open errors', type: 'table', query: issuesWidget().query, layout: layout(0, 0) });
    expect(created.widgets[0].data).toBeUndefined();
    const [first, second] = created.widgets.map((widget: { id: string }) => widget.id);
    expect(first).toEqual(expect.any(String));
    expect(first).not.toBe(second);

    const read = await owner.client.get(`/v1/dashboards/${created.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created);

    const patched = await owner.client.patch(`/v1/dashboards/${created.id}`, { name: 'Checkout (prod)', description: null });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Checkout (prod)', description: null, widgets: created.widgets });
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

    // keep the series widget (by id, moved), drop the issues one, add a new one
    const put = await owner.client.put(`/v1/dashboards/${created.id}/widgets`, {
      widgets: [seriesWidget({ id: second, layout: layout(0, 0, 12, 3) }), { title: 'Logs', type: 'list', query: { view: 'logs', params: {} }, layout: layout(0, 3, 12, 6) }],
    });
    expect(put.status).toBe(200);
    expect(put.body.widgets.map((widget: { id: string; title: string }) => widget.title)).toEqual(['Queue depth', 'Logs']);
    expect(put.body.widgets[0]).toMatchObject({ id: second, layout: layout(0, 0, 12, 3) });
    expect(put.body.widgets[1].id).not.toBe(first);
    expect((await owner.client.get(`/v1/dashboards/${created.id}`)).body.widgets).toEqual(put.body.widgets);

    // an empty set is a set too
    expect((await owner.client.put(`/v1/dashboards/${created.id}/widgets`, { widgets: [] })).body.widgets).toEqual([]);

    expect((await owner.client.delete(`/v1/dashboards/${created.id}`)).status).toBe(204);
    for (const reply of [
      await owner.client.get(`/v1/dashboards/${created.id}`),
      await owner.client.patch(`/v1/dashboards/${created.id}`, { name: 'x' }),
      await owner.client.delete(`/v1/dashboards/${created.id}`),
    ]) {
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
  });

  test('a widget without a title is named after its view and the parameters that narrow it', async () => {
    const untitled = (query: Record<string, unknown>, at: ReturnType<typeof layout>) => ({ type: 'table', query, layout: at });
    const created = await owner.client.post('/v1/dashboards', {
      name: 'Untitled widgets',
      widgets: [
        untitled({ view: 'issues', params: { project: project.id, status: 'unresolved', sort: 'events', limit: 10 } }, layout(0, 0)),
        untitled({ view: 'metrics.series', params: seriesParams() }, layout(6, 0)),
      ],
    });
    expect(created.status).toBe(201);
    // project, window, paging, step and sort say where, when and in what order, not what: they are left out
    expect(created.body.widgets.map((widget: { title: string }) => widget.title)).toEqual(['Issues: unresolved', 'Metric: queue.depth · max']);

    const put = await owner.client.put(`/v1/dashboards/${created.body.id}/widgets`, {
      widgets: [
        // what was answered comes back as given, its derived title now a title like any other
        ...created.body.widgets,
        untitled({ view: 'logs', params: {} }, layout(0, 4)),
        untitled({ view: 'traces', params: { service: 'checkout', attribute: ['http.route:/pay', 'region:eu'] } }, layout(6, 4)),
        untitled({ view: 'logs', params: { q: 'x'.repeat(300) } }, layout(0, 8)),
        { ...untitled({ view: 'traffic', params: {} }, layout(6, 8)), title: '  Requests  ' },
      ],
    });
    expect(put.status).toBe(200);
    const titles = put.body.widgets.map((widget: { title: string }) => widget.title);
    expect(titles.slice(0, 4)).toEqual(['Issues: unresolved', 'Metric: queue.depth · max', 'Logs', 'Traces: checkout · http.route:/pay, region:eu']);
    // at most 200 characters, as a given title
    expect(titles[4]).toHaveLength(200);
    expect(titles[4]).toMatch(/^Logs: x+…$/);
    expect(titles[5]).toBe('Requests');
    expect((await owner.client.get(`/v1/dashboards/${created.body.id}`)).body.widgets).toEqual(put.body.widgets);

    // a title given empty is still a mistake, not a request for a derived one
    const blank = await owner.client.put(`/v1/dashboards/${created.body.id}/widgets`, { widgets: [{ ...untitled({ view: 'logs', params: {} }, layout(0, 0)), title: ' ' }] });
    expect(blank.status).toBe(400);
    expect(blank.body.details[0].path).toBe('body.widgets.0.title');
  });

  test('the list pages oldest first, each dashboard exactly once', async () => {
    const account = await signUp(h, 'pager');
    const names = Array.from({ length: 5 }, (_, i) => `board ${i}`);
    for (const name of names) await createDashboard(account, { name });
    const listed: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { data: { name: string; widgets: unknown[] }[]; next_cursor: string | null } } = await account.client.get(`/v1/dashboards?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(2);
      listed.push(...page.body.data.map((dashboard) => dashboard.name));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(listed).toEqual(names);
    expect((await account.client.get('/v1/dashboards?limit=0')).status).toBe(400);
    expect((await account.client.get('/v1/dashboards?cursor=nonsense')).body.code).toBe('invalid_request');
  });
});

describe('validation refuses the whole set', () => {
  let dashboard: { id: string; widgets: unknown[] };
  beforeAll(async () => {
    dashboard = await createDashboard(owner, { name: 'Guarded', widgets: [issuesWidget()] });
  });

  const refused = async (widgets: unknown[], path: string, message?: RegExp) => {
    const reply = await owner.client.put(`/v1/dashboards/${dashboard.id}/widgets`, { widgets });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation_failed');
    expect(reply.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path, ...(message && { message: expect.stringMatching(message) }) })]));
    // nothing of the refused set was stored
    expect((await owner.client.get(`/v1/dashboards/${dashboard.id}`)).body.widgets).toEqual(dashboard.widgets);
    return reply.body.details;
  };
  const valid = () => [issuesWidget(), seriesWidget()];

  test('an unknown view', async () => {
    await refused([...valid(), { title: 'x', type: 'list', query: { view: 'secrets', params: {} }, layout: layout(0, 4) }], 'body.widgets.2.query.view');
  });

  test("params failing the view's own rules, with the widget's path", async () => {
    // metrics.series takes a step of 10 s to a day, and needs a name
    await refused([...valid(), seriesWidget({ query: { view: 'metrics.series', params: { ...seriesParams(), step: 5 } }, layout: layout(0, 4) })], 'body.widgets.2.query.params.step');
    const { name: _name, ...nameless } = seriesParams();
    await refused([seriesWidget({ query: { view: 'metrics.series', params: nameless } })], 'body.widgets.0.query.params.name');
    await refused([issuesWidget({ query: { view: 'issues', params: { sort: 'loudest' } } })], 'body.widgets.0.query.params.sort');
    await refused([issuesWidget({ query: { view: 'issues', params: { from: 'yesterday-ish' } } })], 'body.widgets.0.query.params.from');
    // the view's unknown-parameter rule too
    await refused([issuesWidget({ query: { view: 'issues', params: { colour: 'red' } } })], 'body.widgets.0.query.params.colour', /unknown/);
  });

  test('overlapping layouts, x + w past 12 columns, bad grid numbers', async () => {
    await refused([issuesWidget({ layout: layout(0, 0, 6, 4) }), seriesWidget({ layout: layout(5, 3, 2, 2) })], 'body.widgets.1.layout', /overlaps widget 0/);
    await refused([issuesWidget({ layout: layout(8, 0, 6, 4) })], 'body.widgets.0.layout', /at most 12/);
    await refused([issuesWidget({ layout: { x: -1, y: 0, w: 2, h: 2 } })], 'body.widgets.0.layout.x');
    await refused([issuesWidget({ layout: { x: 0, y: 0.5, w: 2, h: 2 } })], 'body.widgets.0.layout.y');
    await refused([issuesWidget({ layout: { x: 0, y: 0, w: 0, h: 2 } })], 'body.widgets.0.layout.w');
    await refused([issuesWidget({ layout: { x: 0, y: 0, w: 2 } })], 'body.widgets.0.layout.h');
  });

  test('too many widgets, repeated ids, unknown fields, a bad widget type', async () => {
    const many = Array.from({ length: 51 }, (_, i) => issuesWidget({ layout: layout(0, i, 12, 1) }));
    await refused(many, 'body.widgets');
    await refused([issuesWidget({ id: 'same' }), seriesWidget({ id: 'same' })], 'body.widgets.1.id');
    await refused([issuesWidget({ colour: 'red' })], 'body.widgets.0');
    await refused([issuesWidget({ query: { view: 'issues', params: {}, cache: true } })], 'body.widgets.0.query');
    await refused([issuesWidget({ type: 'pie' })], 'body.widgets.0.type');
    // 50 is fine
    const fifty = await owner.client.post('/v1/dashboards', { name: 'Wall', widgets: many.slice(0, 50) });
    expect(fifty.status).toBe(201);
    expect(fifty.body.widgets).toHaveLength(50);
  });

  test('creating and patching are checked the same way', async () => {
    const created = await owner.client.post('/v1/dashboards', { name: 'Bad', widgets: [issuesWidget({ layout: layout(10, 0, 3, 1) })] });
    expect(created.status).toBe(400);
    expect(created.body.details[0].path).toBe('body.widgets.0.layout');
    expect((await owner.client.post('/v1/dashboards', { name: '' })).status).toBe(400);
    expect((await owner.client.post('/v1/dashboards', { name: 'x', owner: 'me' })).body.details[0].path).toBe('body');
    const patch = await owner.client.patch(`/v1/dashboards/${dashboard.id}`, { widgets: [] });
    expect(patch.status).toBe(400);
    expect((await owner.client.get(`/v1/dashboards/${dashboard.id}`)).body.widgets).toEqual(dashboard.widgets);
  });
});

describe('?resolve=true', () => {
  test("each widget carries its view's answer, exactly as the view's route gives it", async () => {
    const failing = seriesWidget({ title: 'Missing metric', query: { view: 'metrics.series', params: { ...seriesParams(), name: 'no.such.metric' } }, layout: layout(0, 4) });
    const dashboard = await createDashboard(owner, { name: 'Live', widgets: [issuesWidget(), seriesWidget(), failing] });
    const reply = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true`);
    expect(reply.status).toBe(200);
    const [issues, series, missing] = reply.body.widgets;

    const direct = await owner.client.get(`/v1/issues?project=${project.id}&status=unresolved&sort=events&limit=10`);
    expect(direct.status).toBe(200);
    expect(issues.data).toEqual(direct.body);
    expect(issues.data.data.map((issue: { count: number }) => issue.count)).toEqual([2, 1]);
    expect(issues.error).toBeUndefined();

    const p = seriesParams();
    const directSeries = await owner.client.get(`/v1/metrics/series?project=${p.project}&name=${p.name}&from=${p.from}&to=${p.to}&step=${p.step}&aggregation=${p.aggregation}`);
    expect(series.data).toEqual(directSeries.body);
    expect(series.data.points.map((point: { value: number }) => point.value)).toEqual([3, 5, 7]);

    // the view's 404 is the widget's error; the dashboard still answers
    const directMissing = await owner.client.get(`/v1/metrics/series?project=${p.project}&name=no.such.metric&from=${p.from}&to=${p.to}`);
    expect(directMissing.status).toBe(404);
    expect(missing.data).toBeUndefined();
    expect(missing.error).toEqual({ code: directMissing.body.code, message: directMissing.body.message });

    // without resolve, widgets carry neither
    const plain = await owner.client.get(`/v1/dashboards/${dashboard.id}`);
    expect(plain.body.widgets.every((widget: object) => !('data' in widget) && !('error' in widget))).toBe(true);
    expect((await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=yes`)).status).toBe(400);
  });

  test('every view in the catalogue resolves, with its defaults', async () => {
    const names = Object.keys(dashboardViews);
    const widgets = names.map((view, i) => ({
      title: view,
      type: 'table',
      query: { view, params: view === 'metrics.series' ? { name: 'queue.depth', from: t0, to: t0 + 3_600_000 } : {} },
      layout: layout((i % 2) * 6, Math.floor(i / 2) * 2, 6, 2),
    }));
    const dashboard = await createDashboard(owner, { name: 'Everything', widgets });
    // one request resolves 12 widgets at most: the first 12, then the others by id
    const first = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true`);
    expect(first.status).toBe(200);
    const rest = first.body.widgets.slice(12).map((widget: { id: string }) => `widget=${widget.id}`);
    const second = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true&${rest.join('&')}`);
    expect(second.status).toBe(200);
    for (const widget of [...first.body.widgets.slice(0, 12), ...second.body.widgets.slice(12)]) {
      expect([widget.title, widget.error]).toEqual([widget.title, undefined]);
      expect(widget.data).toEqual(expect.any(Object));
    }
  });

  test('one request resolves 12 widgets at most: the rest say so, and can be asked for by id', async () => {
    const widgets = Array.from({ length: 50 }, (_, i) => ({ title: `alerts ${i}`, type: 'list', query: { view: 'alerts', params: {} }, layout: layout(i % 12, Math.floor(i / 12), 1, 1) }));
    const dashboard = await createDashboard(owner, { name: 'Wall', widgets });
    const reply = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true`);
    expect(reply.status).toBe(200);
    const ids = reply.body.widgets.map((widget: { id: string }) => widget.id);
    for (const widget of reply.body.widgets.slice(0, 12)) expect(widget.data).toEqual({ data: expect.any(Array), next_cursor: null });
    for (const widget of reply.body.widgets.slice(12)) {
      expect(widget.data).toBeUndefined();
      expect(widget.error).toEqual({ code: 'not_resolved', message: expect.stringContaining(`widget=${widget.id}`) });
    }

    const picked = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true&widget=${ids[30]}&widget=${ids[49]}`);
    expect(picked.status).toBe(200);
    const resolved = picked.body.widgets.filter((widget: object) => 'data' in widget).map((widget: { id: string }) => widget.id);
    expect(resolved).toEqual([ids[30], ids[49]]);
    expect(picked.body.widgets.some((widget: object) => 'error' in widget)).toBe(false);

    const tooMany = await owner.client.get(`/v1/dashboards/${dashboard.id}?resolve=true&${ids.slice(0, 13).map((id: string) => `widget=${id}`).join('&')}`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toMatchObject({ code: 'validation_failed', details: [{ path: 'query.widget', message: expect.any(String) }] });
  });
});

describe('tenancy and credentials', () => {
  test("another organisation's dashboard is not found, and never listed", async () => {
    const ours = await createDashboard(owner, { name: 'Ours only', widgets: [issuesWidget()] });
    const theirs = await createDashboard(other, { name: 'Theirs' });
    for (const reply of [
      await other.client.get(`/v1/dashboards/${ours.id}`),
      await other.client.get(`/v1/dashboards/${ours.id}?resolve=true`),
      await other.client.patch(`/v1/dashboards/${ours.id}`, { name: 'taken' }),
      await other.client.put(`/v1/dashboards/${ours.id}/widgets`, { widgets: [] }),
      await other.client.delete(`/v1/dashboards/${ours.id}`),
      await other.client.get('/v1/dashboards/not-an-id'),
    ]) {
      expect(reply.status).toBe(404);
      expect(reply.body.code).toBe('not_found');
    }
    const stillOurs = await owner.client.get(`/v1/dashboards/${ours.id}`);
    expect(stillOurs.body).toMatchObject({ name: 'Ours only', widgets: ours.widgets });
    const theirList = await other.client.get('/v1/dashboards?limit=200');
    expect(theirList.body.data.map((dashboard: { id: string }) => dashboard.id)).toEqual([theirs.id]);
  });

  test("a widget naming another organisation's project resolves to the view's 404, not its data", async () => {
    await sendErrors(otherProject, 1);
    await eventually(async () => ((await other.client.get(`/v1/issues?project=${otherProject.id}`)).body.data.length === 1 ? true : undefined), "the other org's issue");
    const spy = await createDashboard(owner, { name: 'Peek', widgets: [issuesWidget({ query: { view: 'issues', params: { project: otherProject.id } } })] });
    const reply = await owner.client.get(`/v1/dashboards/${spy.id}?resolve=true`);
    expect(reply.status).toBe(200);
    const direct = await owner.client.get(`/v1/issues?project=${otherProject.id}`);
    expect(direct.status).toBe(404);
    expect(reply.body.widgets[0]).toMatchObject({ error: { code: 'not_found', message: direct.body.message } });
    expect(reply.body.widgets[0].data).toBeUndefined();
  });

  test('a DSN may neither read nor write dashboards', async () => {
    const ours = await createDashboard(owner, { name: 'DSN-proof' });
    const dsn = h.api.with({ authorization: `DSN ${project.publicKey}` });
    for (const reply of [
      await dsn.get('/v1/dashboards'),
      await dsn.get(`/v1/dashboards/${ours.id}?resolve=true`),
      await dsn.post('/v1/dashboards', { name: 'from a DSN' }),
      await dsn.put(`/v1/dashboards/${ours.id}/widgets`, { widgets: [] }),
      await dsn.delete(`/v1/dashboards/${ours.id}`),
    ]) {
      expect(reply.status).toBe(403);
      expect(reply.body.code).toBe('forbidden');
    }
    expect((await h.api.get('/v1/dashboards')).status).toBe(401);
  });
});

test('the OpenAPI document describes the dashboard routes and the view names', async () => {
  const document = (await h.api.get('/v1/openapi.json')).body;
  expect(Object.keys(document.paths['/v1/dashboards'])).toEqual(expect.arrayContaining(['get', 'post']));
  expect(Object.keys(document.paths['/v1/dashboards/{dashboardID}'])).toEqual(expect.arrayContaining(['get', 'patch', 'delete']));
  const put = document.paths['/v1/dashboards/{dashboardID}/widgets'].put;
  expect(JSON.stringify(put.requestBody)).toContain('"metrics.series"');
  // a widget's title may be left out: the API derives one
  const widget = put.requestBody.content['application/json'].schema.properties.widgets.items;
  expect(widget.required).toEqual(['type', 'query', 'layout']);
  expect(widget.properties.title.description).toContain('Issues: unresolved');
  expect(put['x-required-role']).toBe('member');
});
