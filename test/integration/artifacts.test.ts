import { randomUUID } from 'node:crypto';
import { createBlobStore } from '../../src/shared/clients/blob.js';
import { createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { SHOP_CDN, sendEvent, shopErrorEvent, shopSources, storedEvent, type BrowserFrame, type MinifiedShop } from '../support/minified-shop.js';

let h: Harness;
useHarness((started) => (h = started), {}, { workers: true });

const CDN = SHOP_CDN;

let build1: MinifiedShop;
let build2: MinifiedShop;
let shop: Awaited<ReturnType<typeof shopSources>>;
let owner: Account;
let bearer: string;

beforeAll(async () => {
  shop = await shopSources();
  build1 = await shop.build('app.min.js');
  build2 = await shop.build('app.v2.min.js', { banner: 'var buildInfo={version:"2",features:["cart","checkout"]};' });
  owner = await signUp(h);
  bearer = (await createApiKey(owner)).secret;
});

afterAll(async () => {
  await shop.remove();
});

type Upload = { status: number; body: any };

async function call(method: string, path: string, init: { body?: RequestInit['body']; headers?: Record<string, string> } = {}, token = bearer): Promise<Upload> {
  const response = await fetch(`${h.api.baseUrl}${path}`, { method, body: init.body, headers: { authorization: `Bearer ${token}`, ...init.headers } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** multipart/form-data, as a browser or `curl -F` sends it. */
function uploadForm(projectId: string, bytes: string | Uint8Array, fields: Record<string, string>, filename = 'upload.map') {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([bytes]), filename);
  return call('POST', `/v1/projects/${projectId}/artifacts`, { body: form });
}

/** The raw bytes as the body, the fields as query parameters. */
function uploadRaw(projectId: string, bytes: string | Uint8Array, fields: Record<string, string>, contentType = 'application/octet-stream') {
  return call('POST', `/v1/projects/${projectId}/artifacts?${new URLSearchParams(fields)}`, { body: bytes, headers: { 'content-type': contentType } });
}

const crashing = (event: any) => event.exception[0].frames.at(-1);
const calling = (event: any) => event.exception[0].frames.at(-2);

describe('symbolication through uploaded source maps', () => {
  let project: ProjectWithDsn;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
  });

  test('a multipart upload is described by what it holds; the event of its release shows the original file, line, column, function and source', async () => {
    const uploaded = await uploadForm(project.id, build1.map, { name: `~/static/${build1.file}.map`, release: 'shop@1.0.0' }, `${build1.file}.map`);
    expect(uploaded.status).toBe(201);
    expect(uploaded.body).toMatchObject({ project_id: project.id, name: '~/static/app.min.js.map', release: 'shop@1.0.0', dist: null, kind: 'source_map', size: Buffer.byteLength(build1.map) });
    expect(uploaded.body.sha256).toMatch(/^[0-9a-f]{64}$/);

    const sent = shopErrorEvent(build1.frames, { release: 'shop@1.0.0' });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(event.symbolicated).toBe(true);
    expect(event.symbolication_errors).toEqual([]);
    expect(crashing(event)).toMatchObject({
      filename: 'b.ts',
      abs_path: '../b.ts',
      function: 'checkTotal',
      lineno: 5,
      colno: 11,
      context_line: '    throw new RangeError(`order ${order.id} has a negative total`);',
      pre_context: ['export interface Order { id: string; total: number }', '', 'export function checkTotal(order: Order): number {', '  if (order.total < 0) {'],
      post_context: ['  }', '  return order.total;', '}', ''],
      symbolicated: true,
      source_map: '~/static/app.min.js.map',
      minified: { abs_path: build1.url, function: build1.frames[1]!.function, lineno: 1, colno: build1.frames[1]!.colno },
    });
    expect(calling(event)).toMatchObject({ filename: 'a.ts', function: 'submitOrder', lineno: 4, context_line: '  const total = checkTotal(order);', symbolicated: true });
    // the issue is named after the original code too
    const detail = await owner.client.get(`/v1/issues/${event.issue_id}`);
    expect(detail.body.culprit).toBe('checkTotal (b.ts)');
  });

  test('a raw-body upload; an event from another minified build of the same code lands in the same issue', async () => {
    const at = (frames: BrowserFrame[]) => frames.map((f) => [f.function, f.lineno, f.colno]);
    expect(at(build2.frames)).not.toEqual(at(build1.frames));
    const uploaded = await uploadRaw(project.id, build2.map, { url: `${build2.url}.map`, release: 'shop@1.0.1', dist: 'web' }, 'application/json');
    expect(uploaded.status).toBe(201);
    expect(uploaded.body).toMatchObject({ name: `${build2.url}.map`, release: 'shop@1.0.1', dist: 'web', kind: 'source_map', content_type: 'application/json' });

    const first = shopErrorEvent(build1.frames, { release: 'shop@1.0.0' });
    const second = shopErrorEvent(build2.frames, { release: 'shop@1.0.1', dist: 'web' });
    await sendEvent(h, project, first);
    await sendEvent(h, project, second);
    const [a, b] = [await storedEvent(owner, project, first.event_id), await storedEvent(owner, project, second.event_id)];
    expect(crashing(b.event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, colno: 11, minified: { abs_path: build2.url, lineno: build2.frames[1]!.lineno, colno: build2.frames[1]!.colno } });
    expect(b.issue.id).toBe(a.issue.id);
  });

  test('an event naming its source map by debug id is resolved without a release', async () => {
    const debugId = randomUUID();
    const uploaded = await uploadForm(project.id, build1.map, { debug_id: debugId.toUpperCase() }, 'bundle.js.map');
    expect(uploaded.status).toBe(201);
    expect(uploaded.body).toMatchObject({ debug_id: debugId, name: 'bundle.js.map', release: null });

    const sent = shopErrorEvent(build1.frames, { debug_meta: { images: [{ type: 'sourcemap', code_file: build1.url, debug_id: debugId }] } });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(event.symbolicated).toBe(true);
    expect(crashing(event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, colno: 11, source_map: 'bundle.js.map' });
  });

  test("a Node service's own unbundled file beside a bundle is left as it is, not reported as a missing map", async () => {
    const debugId = randomUUID();
    await uploadForm(project.id, build1.map, { debug_id: debugId }, 'bundle.js.map');
    const server = { filename: '/srv/shop/server.mjs', abs_path: '/srv/shop/server.mjs', function: 'handle', lineno: 12, colno: 5, in_app: true };
    const sent = shopErrorEvent([server, ...build1.frames], { platform: 'node', debug_meta: { images: [{ type: 'sourcemap', code_file: build1.url, debug_id: debugId }] } });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect({ symbolicated: event.symbolicated, errors: event.symbolication_errors }).toEqual({ symbolicated: true, errors: [] });
    expect(event.exception[0].frames[0]).toMatchObject({ abs_path: '/srv/shop/server.mjs', function: 'handle', lineno: 12, symbolicated: null, symbolication_error: null });
    expect(crashing(event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', symbolicated: true });
  });
});

describe("a minified file's sourceMappingURL", () => {
  test('leads to a map uploaded under another name of the same release', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const linked = `${build1.code}//# sourceMappingURL=../maps/app.min.js.map\n`;
    const minified = await uploadForm(project.id, linked, { name: `~/static/${build1.file}`, release: 'shop@4.0.0' }, build1.file);
    expect(minified.body).toMatchObject({ kind: 'minified_source' });
    expect((await uploadRaw(project.id, build1.map, { name: 'https://cdn.example.com/maps/app.min.js.map', release: 'shop@4.0.0' })).status).toBe(201);

    const sent = shopErrorEvent(build1.frames, { release: 'shop@4.0.0' });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(crashing(event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, symbolicated: true, source_map: 'https://cdn.example.com/maps/app.min.js.map' });
  });
});

describe('an event that arrives before its source map', () => {
  test('is served as not symbolicated, with the reason, and resolved when read once the map is uploaded', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const sent = shopErrorEvent(build1.frames, { release: 'shop@2.0.0' });
    await sendEvent(h, project, sent);
    const before = await storedEvent(owner, project, sent.event_id);
    expect(before.event.symbolicated).toBe(false);
    expect(before.event.symbolication_errors).toEqual([`no source map for ${build1.url} with release shop@2.0.0`]);
    expect(crashing(before.event)).toMatchObject({ abs_path: build1.url, lineno: 1, colno: build1.frames[1]!.colno, symbolicated: false, minified: null });

    expect((await uploadForm(project.id, build1.map, { url: `${build1.url}.map`, release: 'shop@2.0.0' })).status).toBe(201);
    const after = await owner.client.get(`/v1/issues/${before.issue.id}`);
    expect(after.body.latest_event.symbolicated).toBe(true);
    expect(crashing(after.body.latest_event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, colno: 11, symbolicated: true });
    const listed = await owner.client.get(`/v1/issues/${before.issue.id}/events`);
    expect(crashing(listed.body.data[0])).toMatchObject({ filename: 'b.ts', lineno: 5 });
  });
});

describe('the artifact list and deletion', () => {
  test('pages newest first, filters by release and debug id, and deleting removes the bytes and stops symbolication', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const debugId = randomUUID();
    const ids: string[] = [];
    for (const [release, extra] of [['shop@3.0.0', {}], ['shop@3.0.0', {}], ['shop@3.0.1', { debug_id: debugId }]] as const) {
      const reply = await uploadRaw(project.id, build1.map, { name: `${build1.url}.map`, release, ...extra });
      expect(reply.status).toBe(201);
      ids.push(reply.body.id);
    }
    const minified = await uploadRaw(project.id, 'console.log(1)', { name: `${CDN}/other.js`, release: 'shop@3.0.0' }, 'text/javascript');
    expect(minified.body.kind).toBe('minified_source');
    ids.push(minified.body.id);

    const first = await owner.client.get(`/v1/projects/${project.id}/artifacts?limit=3`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((a: { id: string }) => a.id)).toEqual([...ids].reverse().slice(0, 3));
    const second = await owner.client.get(`/v1/projects/${project.id}/artifacts?limit=3&cursor=${first.body.next_cursor}`);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    const ofRelease = await owner.client.get(`/v1/projects/${project.id}/artifacts?release=shop@3.0.0`);
    expect(ofRelease.body.data.map((a: { id: string }) => a.id).sort()).toEqual([ids[0], ids[1], ids[3]].sort());
    const byDebugId = await owner.client.get(`/v1/projects/${project.id}/artifacts?debug_id=${debugId}`);
    expect(byDebugId.body.data.map((a: { id: string }) => a.id)).toEqual([ids[2]]);

    const blobs = createBlobStore(h.config);
    const key = `artifacts/${project.id}/${ids[2]}`;
    expect(await blobs.get(key)).toBeDefined();
    expect((await call('DELETE', `/v1/projects/${project.id}/artifacts/${ids[2]}`)).status).toBe(204);
    expect(await blobs.get(key)).toBeUndefined();
    expect((await call('DELETE', `/v1/projects/${project.id}/artifacts/${ids[2]}`)).status).toBe(404);
    expect((await owner.client.get(`/v1/projects/${project.id}/artifacts?debug_id=${debugId}`)).body.data).toEqual([]);

    // the worker may have the map parsed in its cache: a later event still does not resolve through it
    const sent = shopErrorEvent(build1.frames, { release: 'shop@3.0.1' });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(event.symbolicated).toBe(false);
    expect(event.symbolication_errors).toEqual([`no source map for ${build1.url} with release shop@3.0.1`]);
  });
});

describe('limits and access', () => {
  let project: ProjectWithDsn;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
  });

  test('an upload over 50 MiB is refused with 413, raw or multipart, as it streams', async () => {
    const tooBig = new Uint8Array(50 * 1024 * 1024 + 1);
    const raw = await uploadRaw(project.id, tooBig, { name: 'big.bin' });
    expect(raw).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    const multipart = await uploadForm(project.id, tooBig, { name: 'big.bin' }, 'big.bin');
    expect(multipart).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    expect((await owner.client.get(`/v1/projects/${project.id}/artifacts`)).body.data).toEqual([]);
  });

  test('a .map that is not a source map, and an upload that could never be matched, are refused', async () => {
    expect((await uploadRaw(project.id, 'not json', { name: 'app.js.map' })).body).toMatchObject({ code: 'validation_failed' });
    expect((await uploadRaw(project.id, 'bytes', {})).body).toMatchObject({ code: 'validation_failed' });
    expect((await uploadRaw(project.id, 'bytes', { debug_id: 'nope' })).body).toMatchObject({ code: 'validation_failed' });
  });

  test('a name or file name holding U+0000, which the store cannot hold, is refused with 400, raw or multipart', async () => {
    const refused = { status: 400, body: { code: 'invalid_request', message: 'text may not hold the NUL character (U+0000)' } };
    expect(await uploadRaw(project.id, 'bytes', { name: 'app\u0000.js' })).toMatchObject(refused);
    expect(await uploadForm(project.id, 'bytes', { name: 'app\u0000.js' })).toMatchObject(refused);
    // a file name is refused by whichever reads it first: the form's parser or the check on what it read
    expect(await uploadForm(project.id, 'bytes', { url: '~/app.js' }, 'app\u0000.js')).toMatchObject({ status: 400, body: { code: 'invalid_request' } });
    expect((await owner.client.get(`/v1/projects/${project.id}/artifacts`)).body.data).toEqual([]);
  });

  test("another organisation's project is not found; a DSN may not upload or list; a member's key uploads but only an admin deletes", async () => {
    const stranger = await signUp(h, 'stranger');
    const strangerKey = (await createApiKey(stranger)).secret;
    const mine = await uploadRaw(project.id, build1.map, { name: 'app.min.js.map', release: 'x' });
    expect(mine.status).toBe(201);
    for (const reply of [
      await call('POST', `/v1/projects/${project.id}/artifacts?name=a.js.map`, { body: build1.map }, strangerKey),
      await call('GET', `/v1/projects/${project.id}/artifacts`, {}, strangerKey),
      await call('DELETE', `/v1/projects/${project.id}/artifacts/${mine.body.id}`, {}, strangerKey),
    ]) {
      expect(reply).toMatchObject({ status: 404, body: { code: 'not_found' } });
    }

    const dsn = { authorization: `DSN ${project.publicKey}` };
    const post = await fetch(`${h.api.baseUrl}/v1/projects/${project.id}/artifacts?name=a.js.map`, { method: 'POST', body: build1.map, headers: dsn });
    expect(post.status).toBe(403);
    expect(((await post.json()) as { code: string }).code).toBe('forbidden');
    expect((await fetch(`${h.api.baseUrl}/v1/projects/${project.id}/artifacts`, { headers: dsn })).status).toBe(403);

    const memberKey = (await createApiKey(owner, 'member')).secret;
    expect((await call('POST', `/v1/projects/${project.id}/artifacts?name=b.js.map`, { body: build1.map }, memberKey)).status).toBe(201);
    expect((await call('DELETE', `/v1/projects/${project.id}/artifacts/${mine.body.id}`, {}, memberKey)).status).toBe(403);
  });
});
