/**
 * Source maps uploaded the way sentry-cli uploads them (`sourcemaps upload`, with debug ids or `--release`):
 * chunk-upload options, sha1-named gzip chunks, and artifact bundle assembly, through /api/0 with a Sluice API
 * key; then the stored maps symbolicate events. (The real tool runs in sentry-cli.test.ts.)
 */
import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { createBlobStore } from '../../src/shared/clients/blob.js';
import { cleanup } from '../../src/shared/features/maintenance/service.js';
import { zipSync, strToU8 } from 'fflate';
import { createApiKey, signUp, type Account } from '../support/factories/accounts.js';
import { projectWithDsn, type ProjectWithDsn } from '../support/factories/telemetry.js';
import { type Harness, useHarness } from '../support/harness.js';
import { SHOP_CDN, sendEvent, shopErrorEvent, shopSources, storedEvent, type MinifiedShop } from '../support/minified-shop.js';

let h: Harness;
useHarness((started) => (h = started), {}, { workers: true });

const CDN = SHOP_CDN;
let shop: Awaited<ReturnType<typeof shopSources>>;

const sha1 = (bytes: Uint8Array) => createHash('sha1').update(bytes).digest('hex');

interface BundleFile {
  url: string;
  type: 'minified_source' | 'source_map';
  content: string;
  headers?: Record<string, string>;
}

/** An artifact bundle as sentry-cli builds it: the files under `files/_/_/…` and a manifest naming each one's url, type and headers. */
function artifactBundle(files: BundleFile[], attributes: Record<string, string> = {}, withManifest = true): Buffer {
  const entries: Record<string, Uint8Array> = {};
  const manifest: Record<string, unknown> = {};
  for (const file of files) {
    const path = `files/_/_/${file.url.replace(/^~\//, '')}`;
    entries[path] = strToU8(file.content);
    manifest[path] = { url: file.url, type: file.type, headers: file.headers ?? {} };
  }
  if (withManifest) entries['manifest.json'] = strToU8(JSON.stringify({ files: manifest, debug_id: randomUUID(), ...attributes }));
  return Buffer.from(zipSync(entries));
}

/** The bundle cut into `count` chunks, each with the sha1 it is named by. */
function chunksOf(bundle: Buffer, count: number) {
  const size = Math.ceil(bundle.length / count);
  return Array.from({ length: count }, (_, index) => {
    const bytes = bundle.subarray(index * size, (index + 1) * size);
    return { bytes, sha1: sha1(bytes) };
  });
}

let owner: Account;
let key: string;
let slug: string;

beforeAll(async () => {
  shop = await shopSources();
  owner = await signUp(h);
  key = (await createApiKey(owner, 'member')).secret;
  slug = (await owner.client.get('/v1/me')).body.organization.slug;
});

afterAll(async () => {
  await shop.remove();
});

async function sentry(method: string, path: string, body?: unknown, token = key) {
  const response = await fetch(`${h.api.baseUrl}/api/0${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type'), body: text ? JSON.parse(text) : undefined };
}

/** One chunk-upload request: each chunk gzipped in a `file_gzip` part named by the sha1 of its uncompressed bytes. */
async function uploadChunks(chunks: Array<{ bytes: Uint8Array; name: string }>, org = slug, token = key) {
  const form = new FormData();
  for (const chunk of chunks) form.append('file_gzip', new Blob([gzipSync(chunk.bytes)], { type: 'application/octet-stream' }), chunk.name);
  const response = await fetch(`${h.api.baseUrl}/api/0/organizations/${org}/chunk-upload/`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const assemble = (body: Record<string, unknown>, org = slug) => sentry('POST', `/organizations/${org}/artifactbundle/assemble/`, body);

/** Uploads a whole bundle as the tool does (ask, upload the missing chunks, ask again) and returns the last answer. */
async function uploadBundle(bundle: Buffer, request: Record<string, unknown>) {
  const chunks = chunksOf(bundle, 2);
  const body = { checksum: sha1(bundle), chunks: chunks.map((chunk) => chunk.sha1), ...request };
  const first = await assemble(body);
  expect(first.status).toBe(200);
  const missing = chunks.filter((chunk) => first.body.missingChunks.includes(chunk.sha1));
  if (missing.length) expect((await uploadChunks(missing.map((chunk) => ({ bytes: chunk.bytes, name: chunk.sha1 })))).status).toBe(200);
  return assemble(body);
}

async function projectSlug(projectId: string) {
  return (await owner.client.get(`/v1/projects/${projectId}`)).body.slug as string;
}

const artifactsOf = async (projectId: string) => (await owner.client.get(`/v1/projects/${projectId}/artifacts?limit=100`)).body.data as Array<Record<string, unknown>>;

const crashing = (event: any) => event.exception[0].frames.at(-1);

describe('chunk-upload options', () => {
  test('say where and how to upload: an absolute url on this host, sha1, gzip, sizes within the artifact limit, artifact bundles accepted', async () => {
    const options = await sentry('GET', `/organizations/${slug}/chunk-upload/`);
    expect(options.status).toBe(200);
    expect(options.contentType).toMatch(/^application\/json/);
    expect(options.body).toEqual({
      url: `${h.api.baseUrl}/api/0/organizations/${slug}/chunk-upload/`,
      chunkSize: 8 * 1024 * 1024,
      chunksPerRequest: 64,
      maxFileSize: 50 * 1024 * 1024,
      maxRequestSize: 32 * 1024 * 1024,
      concurrency: 2,
      hashAlgorithm: 'sha1',
      compression: ['gzip'],
      accept: ['release_files', 'artifact_bundles', 'artifact_bundles_v2'],
    });
  });

  test("another organisation's slug is a 404 in Sentry's shape", async () => {
    const stranger = await signUp(h, 'stranger');
    const strangerSlug = (await stranger.client.get('/v1/me')).body.organization.slug;
    const options = await sentry('GET', `/organizations/${strangerSlug}/chunk-upload/`);
    expect(options).toMatchObject({ status: 404, body: { detail: expect.any(String) } });
    const chunk = Buffer.from('a chunk for someone else');
    expect(await uploadChunks([{ bytes: chunk, name: sha1(chunk) }], strangerSlug)).toMatchObject({ status: 404, body: { detail: expect.any(String) } });
  });
});

describe('a debug-id bundle', () => {
  let project: ProjectWithDsn;
  let built: MinifiedShop;
  const debugId = randomUUID();
  let bundle: Buffer;

  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    built = await shop.build('app.min.js', { debugId });
    bundle = artifactBundle([
      { url: '~/static/app.min.js', type: 'minified_source', content: built.code, headers: { 'debug-id': debugId, Sourcemap: 'app.min.js.map' } },
      { url: '~/static/app.min.js.map', type: 'source_map', content: built.map, headers: { 'debug-id': debugId } },
    ]);
  });

  test('is assembled once its chunks are uploaded: missing chunks listed, a corrupt chunk refused and still missing, then ok', async () => {
    const chunks = chunksOf(bundle, 3);
    const body = { checksum: sha1(bundle), chunks: chunks.map((chunk) => chunk.sha1), projects: [await projectSlug(project.id)] };

    const first = await assemble(body);
    expect(first).toMatchObject({ status: 200, body: { state: 'not_found', missingChunks: chunks.map((chunk) => chunk.sha1) } });

    expect(await uploadChunks(chunks.slice(0, 2).map((chunk) => ({ bytes: chunk.bytes, name: chunk.sha1 })))).toMatchObject({ status: 200 });
    // the third chunk's name with other bytes: refused, not stored
    const corrupt = await uploadChunks([{ bytes: Buffer.from('not the third chunk'), name: chunks[2]!.sha1 }]);
    expect(corrupt.status).toBe(400);
    expect(corrupt.body.detail).toContain('failed its checksum');
    expect(await assemble(body)).toMatchObject({ status: 200, body: { state: 'not_found', missingChunks: [chunks[2]!.sha1] } });

    expect(await uploadChunks([{ bytes: chunks[2]!.bytes, name: chunks[2]!.sha1 }])).toMatchObject({ status: 200 });
    expect(await assemble(body)).toMatchObject({ status: 200, body: { state: 'ok', missingChunks: [] } });

    const artifacts = await artifactsOf(project.id);
    expect(artifacts.map((artifact) => [artifact.name, artifact.kind, artifact.debug_id, artifact.release]).sort()).toEqual([
      ['~/static/app.min.js', 'minified_source', debugId, null],
      ['~/static/app.min.js.map', 'source_map', debugId, null],
    ]);

    // asked again (the tool's next run): ok at once, nothing stored twice, no chunk needed
    expect(await assemble(body)).toMatchObject({ status: 200, body: { state: 'ok', missingChunks: [] } });
    expect(await artifactsOf(project.id)).toHaveLength(2);
  });

  test('an event with debug_meta comes back with the original file, line and function', async () => {
    const sent = shopErrorEvent(built.frames, { debug_meta: { images: [{ type: 'sourcemap', code_file: `${CDN}/app.min.js`, debug_id: debugId }] } });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(event.symbolicated).toBe(true);
    expect(crashing(event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, colno: 11, symbolicated: true, source_map: '~/static/app.min.js.map' });
  });
});

describe('a --release bundle with ~/ urls (the legacy form)', () => {
  test('is stored under the release, and an event of that release without debug ids resolves by file name', async () => {
    const project = await projectWithDsn(owner, h.ingest.baseUrl);
    const built = await shop.build('app.min.js');
    const bundle = artifactBundle(
      [
        { url: '~/static/app.min.js', type: 'minified_source', content: built.code, headers: { Sourcemap: 'app.min.js.map' } },
        { url: '~/static/app.min.js.map', type: 'source_map', content: built.map },
      ],
      { release: 'shop@7.0.0' },
    );
    const done = await uploadBundle(bundle, { projects: [await projectSlug(project.id)], version: 'shop@7.0.0', dist: 'web' });
    expect(done).toMatchObject({ status: 200, body: { state: 'ok', missingChunks: [] } });
    const artifacts = await artifactsOf(project.id);
    expect(artifacts.map((artifact) => [artifact.name, artifact.release, artifact.dist, artifact.debug_id]).sort()).toEqual([
      ['~/static/app.min.js', 'shop@7.0.0', 'web', null],
      ['~/static/app.min.js.map', 'shop@7.0.0', 'web', null],
    ]);

    const sent = shopErrorEvent(built.frames, { release: 'shop@7.0.0', dist: 'web' });
    await sendEvent(h, project, sent);
    const { event } = await storedEvent(owner, project, sent.event_id);
    expect(crashing(event)).toMatchObject({ filename: 'b.ts', function: 'checkTotal', lineno: 5, symbolicated: true, source_map: '~/static/app.min.js.map' });
  });

  test('into two projects at once: each gets the files', async () => {
    const [one, two] = [await projectWithDsn(owner, h.ingest.baseUrl), await projectWithDsn(owner, h.ingest.baseUrl)];
    const built = await shop.build('two.min.js');
    const bundle = artifactBundle([{ url: '~/static/two.min.js.map', type: 'source_map', content: built.map }], { release: 'shop@8.0.0' });
    const done = await uploadBundle(bundle, { projects: [await projectSlug(one.id), await projectSlug(two.id)], version: 'shop@8.0.0' });
    expect(done.body).toMatchObject({ state: 'ok' });
    for (const project of [one, two]) expect((await artifactsOf(project.id)).map((artifact) => artifact.name)).toEqual(['~/static/two.min.js.map']);
  });
});

describe('bundles that cannot be stored', () => {
  let project: ProjectWithDsn;
  let projectSlugName: string;
  beforeAll(async () => {
    project = await projectWithDsn(owner, h.ingest.baseUrl);
    projectSlugName = await projectSlug(project.id);
  });

  test('chunks that do not join into the checksum: state error with the reason, no artifacts', async () => {
    const built = await shop.build('bad.min.js');
    const bundle = artifactBundle([{ url: '~/static/bad.min.js.map', type: 'source_map', content: built.map }]);
    const wrong = sha1(Buffer.from('another bundle'));
    const chunks = chunksOf(bundle, 2);
    const body = { checksum: wrong, chunks: chunks.map((chunk) => chunk.sha1), projects: [projectSlugName] };
    expect((await assemble(body)).body.state).toBe('not_found');
    expect((await uploadChunks(chunks.map((chunk) => ({ bytes: chunk.bytes, name: chunk.sha1 })))).status).toBe(200);
    const failed = await assemble(body);
    expect(failed).toMatchObject({ status: 200, body: { state: 'error', missingChunks: [] } });
    expect(failed.body.detail).toContain('checksum does not match');
    expect(await artifactsOf(project.id)).toEqual([]);
  });

  test('chunks of an upload never assembled are removed by the hourly cleanup an hour on, and then count as missing', async () => {
    const built = await shop.build('abandoned.min.js');
    const bundle = artifactBundle([{ url: '~/static/abandoned.min.js.map', type: 'source_map', content: built.map }]);
    const chunks = chunksOf(bundle, 2);
    expect((await uploadChunks(chunks.map((chunk) => ({ bytes: chunk.bytes, name: chunk.sha1 })))).status).toBe(200);
    const blobs = createBlobStore(h.config);
    const stored = chunks.map((chunk) => blobs.get(`bundle-chunks/${owner.organization.id}/${chunk.sha1}`));
    expect((await Promise.all(stored)).every(Boolean)).toBe(true);

    const removed = await cleanup(blobs, new Date(Date.now() + 61 * 60_000));
    expect(removed.bundleChunks).toBeGreaterThanOrEqual(2);
    for (const chunk of chunks) expect(await blobs.get(`bundle-chunks/${owner.organization.id}/${chunk.sha1}`)).toBeUndefined();
    const asked = await assemble({ checksum: sha1(bundle), chunks: chunks.map((chunk) => chunk.sha1), projects: [projectSlugName] });
    expect(asked.body).toMatchObject({ state: 'not_found', missingChunks: chunks.map((chunk) => chunk.sha1) });
  });

  test('a zip without manifest.json: state error, no artifacts', async () => {
    const built = await shop.build('nomanifest.min.js');
    const bundle = artifactBundle([{ url: '~/static/nomanifest.min.js.map', type: 'source_map', content: built.map }], {}, false);
    const failed = await uploadBundle(bundle, { projects: [projectSlugName] });
    expect(failed.body).toMatchObject({ state: 'error', detail: 'the bundle has no manifest.json' });
    expect(await artifactsOf(project.id)).toEqual([]);
  });

  test('a file the manifest calls a source map that is not one: state error naming it, and none of the bundle stored', async () => {
    const built = await shop.build('half.min.js');
    const bundle = artifactBundle([
      { url: '~/static/half.min.js.map', type: 'source_map', content: built.map },
      { url: '~/static/broken.min.js.map', type: 'source_map', content: 'not a map' },
    ]);
    const failed = await uploadBundle(bundle, { projects: [projectSlugName] });
    expect(failed.body.state).toBe('error');
    expect(failed.body.detail).toContain('~/static/broken.min.js.map');
    expect(await artifactsOf(project.id)).toEqual([]);
  });

  test("a project of another organisation (or none): 404 with a detail, nothing stored", async () => {
    const stranger = await signUp(h, 'stranger');
    const theirs = await projectWithDsn(stranger, h.ingest.baseUrl);
    const theirSlug = (await stranger.client.get(`/v1/projects/${theirs.id}`)).body.slug as string;
    const built = await shop.build('theirs.min.js');
    const bundle = artifactBundle([{ url: '~/static/theirs.min.js.map', type: 'source_map', content: built.map }]);
    const chunks = chunksOf(bundle, 1);
    expect((await uploadChunks(chunks.map((chunk) => ({ bytes: chunk.bytes, name: chunk.sha1 })))).status).toBe(200);
    const refused = await assemble({ checksum: sha1(bundle), chunks: [chunks[0]!.sha1], projects: [projectSlugName, theirSlug] });
    expect(refused.status).toBe(404);
    expect(refused.body.detail).toContain(theirSlug);
    expect(await artifactsOf(project.id)).toEqual([]);
    expect((await stranger.client.get(`/v1/projects/${theirs.id}/artifacts`)).body.data).toEqual([]);
    expect((await assemble({ checksum: sha1(bundle), chunks: [chunks[0]!.sha1] })).status).toBe(400);
  });

  test('a chunk larger than the chunk size once unzipped is refused with 413; a part that is not gzip with 400', async () => {
    const big = Buffer.alloc(8 * 1024 * 1024 + 1);
    const tooLarge = await uploadChunks([{ bytes: big, name: sha1(big) }]);
    expect(tooLarge).toMatchObject({ status: 413, body: { detail: expect.stringContaining('at most') } });

    const form = new FormData();
    form.append('file_gzip', new Blob([Buffer.from('plain bytes')]), sha1(Buffer.from('plain bytes')));
    const response = await fetch(`${h.api.baseUrl}/api/0/organizations/${slug}/chunk-upload/`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { detail: string }).detail).toContain('not valid gzip');
  });
});
