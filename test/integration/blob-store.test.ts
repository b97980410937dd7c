import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBlobStore, type BlobStore } from '../../src/shared/clients/blob.js';
import { loadConfig } from '../../src/shared/config.js';
import { dropTestDatabase, startHarness } from '../support/harness.js';

/** The local S3-compatible server global-setup brought up (versitygw), as BLOB_STORE=s3 configuration. */
function s3Env(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    BLOB_STORE: 's3',
    S3_ENDPOINT: process.env.TEST_S3_ENDPOINT!,
    S3_BUCKET: process.env.TEST_S3_BUCKET!,
    S3_ACCESS_KEY_ID: process.env.TEST_S3_ACCESS_KEY_ID!,
    S3_SECRET_ACCESS_KEY: process.env.TEST_S3_SECRET_ACCESS_KEY!,
    S3_FORCE_PATH_STYLE: 'true',
    ...overrides,
  };
}

interface Driver {
  blobs: BlobStore;
  /** Every key of this run starts with it, so runs sharing the bucket never see each other's blobs. */
  root: string;
  close(): Promise<void>;
}

const drivers: [string, () => Promise<Driver>][] = [
  [
    'fs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'sluice-blobs-'));
      return { blobs: createBlobStore(loadConfig({ BLOB_DIR: dir })), root: '', close: () => rm(dir, { recursive: true, force: true }) };
    },
  ],
  [
    's3',
    async () => {
      const blobs = createBlobStore(loadConfig(s3Env()));
      const root = `run-${randomBytes(6).toString('hex')}/`;
      return { blobs, root, close: () => blobs.deletePrefix(root) };
    },
  ],
];

/** Puts in parallel batches: a thousand sequential round trips would be slow, all at once too many sockets. */
async function putMany(blobs: BlobStore, keys: string[], batch = 100) {
  for (let start = 0; start < keys.length; start += batch) {
    await Promise.all(keys.slice(start, start + batch).map((key) => blobs.put(key, Buffer.from(key))));
  }
}

describe.each(drivers)('the %s blob store', (_name, open) => {
  let driver: Driver;
  let blobs: BlobStore;
  const key = (path: string) => `${driver.root}${path}`;
  beforeAll(async () => {
    driver = await open();
    blobs = driver.blobs;
  });
  afterAll(() => driver.close());

  test('answers ping', async () => {
    await expect(blobs.ping()).resolves.toBeUndefined();
  });

  test('reads back every byte value as written, and nothing for a missing key', async () => {
    const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(70_000)]);
    await blobs.put(key('replays/p1/r1/0'), bytes);
    expect(await blobs.get(key('replays/p1/r1/0'))).toEqual(bytes);
    await blobs.put(key('empty'), Buffer.alloc(0));
    expect(await blobs.get(key('empty'))).toEqual(Buffer.alloc(0));
    expect(await blobs.get(key('replays/p1/r1/1'))).toBeUndefined();
    expect(await blobs.get(key('never/written'))).toBeUndefined();
  });

  test('a second put replaces the blob', async () => {
    await blobs.put(key('artifacts/a/app.js.map'), Buffer.from('first, and longer than the second'));
    await blobs.put(key('artifacts/a/app.js.map'), Buffer.from('second'));
    expect((await blobs.get(key('artifacts/a/app.js.map')))?.toString()).toBe('second');
  });

  test('delete removes a blob, and deleting it again (or a key never written) is fine', async () => {
    await blobs.put(key('gone/soon'), Buffer.from('x'));
    await blobs.put(key('gone/stays'), Buffer.from('y'));
    await blobs.delete(key('gone/soon'));
    await blobs.delete(key('gone/soon'));
    await blobs.delete(key('gone/never-written'));
    expect(await blobs.get(key('gone/soon'))).toBeUndefined();
    expect((await blobs.get(key('gone/stays')))?.toString()).toBe('y');
  });

  test('deletePrefix removes everything under the folder, past one listing page, and nothing beside it', async () => {
    const many = Array.from({ length: 1100 }, (_, i) => key(`folder/p/${String(i).padStart(4, '0')}`));
    await putMany(blobs, many);
    await blobs.put(key('folder/p/nested/deep/x'), Buffer.from('deep'));
    // a sibling whose name merely starts with the folder's name, and another folder
    await blobs.put(key('folder/pp/kept'), Buffer.from('sibling'));
    await blobs.put(key('folder/q/kept'), Buffer.from('other'));
    await blobs.put(key('folder/p.kept'), Buffer.from('file beside'));

    await blobs.deletePrefix(key('folder/p/'));
    for (const gone of [many[0]!, many[999]!, many[1000]!, many[1099]!, key('folder/p/nested/deep/x')]) expect(await blobs.get(gone)).toBeUndefined();
    expect((await blobs.get(key('folder/pp/kept')))?.toString()).toBe('sibling');
    expect((await blobs.get(key('folder/q/kept')))?.toString()).toBe('other');
    expect((await blobs.get(key('folder/p.kept')))?.toString()).toBe('file beside');
    // an empty or already deleted folder is fine; a prefix that is not a folder is refused
    await blobs.deletePrefix(key('folder/p/'));
    await expect(blobs.deletePrefix(key('folder/q'))).rejects.toThrow(/must end with/);
    expect((await blobs.get(key('folder/q/kept')))?.toString()).toBe('other');
  });

  test('keys that are not plain relative names are refused before anything is stored', async () => {
    // a name no other program on the machine uses, so that finding it beside the store's folder means it escaped
    const escaped = `escaped-${randomBytes(6).toString('hex')}`;
    for (const bad of [`../${escaped}`, `a/../../${escaped}`, '/abs', 'a//b', '.hidden', 'a/.hidden/x', './a', 'a/', '', `a\\..\\${escaped}`]) {
      await expect(blobs.put(bad, Buffer.from('x'))).rejects.toThrow(/invalid blob key/);
      await expect(blobs.get(bad)).rejects.toThrow(/invalid blob key/);
      await expect(blobs.delete(bad)).rejects.toThrow(/invalid blob key/);
    }
    await expect(blobs.deletePrefix('../')).rejects.toThrow(/invalid blob key/);
    await expect(blobs.deletePrefix('/')).rejects.toThrow(/invalid blob key/);
    await expect(blobs.deletePrefix('a//')).rejects.toThrow(/invalid blob key/);
    expect(existsSync(join(tmpdir(), escaped))).toBe(false);
  });
});

describe('the s3 blob store with bad settings', () => {
  test('a wrong secret makes ping and every request fail, naming the bucket', async () => {
    const blobs = createBlobStore(loadConfig(s3Env({ S3_SECRET_ACCESS_KEY: 'not-the-secret' })));
    await expect(blobs.ping()).rejects.toThrow(/s3 ping on bucket "[^"]+" at http:\/\/127\.0\.0\.1:\d+ failed: .*HTTP 403/);
    await expect(blobs.put('denied/x', Buffer.from('x'))).rejects.toThrow(/HTTP 403/);
    await expect(blobs.get('denied/x')).rejects.toThrow(/HTTP 403/);
  });

  test('a bucket that does not exist fails ping, and reads are errors rather than "missing"', async () => {
    const blobs = createBlobStore(loadConfig(s3Env({ S3_BUCKET: `missing-${randomBytes(4).toString('hex')}` })));
    await expect(blobs.ping()).rejects.toThrow(/HTTP 404/);
    await expect(blobs.get('a/b')).rejects.toThrow(/NoSuchBucket/);
  });
});

describe('the service on the s3 blob store', () => {
  afterAll(() => dropTestDatabase());

  test('/readyz reports the blob check ok, and 503 not_ready with the blob check down for a wrong bucket', async () => {
    const good = await startHarness(s3Env());
    try {
      const ready = await good.api.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.checks).toContainEqual({ name: 'blob', status: 'ok' });
    } finally {
      await good.close();
    }

    const wrong = await startHarness(s3Env({ S3_BUCKET: `missing-${randomBytes(4).toString('hex')}` }));
    try {
      const ready = await wrong.api.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.code).toBe('not_ready');
      expect(ready.body.checks).toContainEqual({ name: 'blob', status: 'down', error: expect.stringMatching(/s3 ping on bucket "missing-[0-9a-f]+".*HTTP 404/) });
      expect(ready.body.checks).toContainEqual({ name: 'mongo', status: 'ok' });
    } finally {
      await wrong.close();
    }
  });
});
