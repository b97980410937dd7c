import { randomBytes } from 'node:crypto';
import { access, constants, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.js';

/** Where replay segments and artifacts live; never MongoDB. Keys are `/`-separated relative paths. */
export interface BlobStore {
  put(key: string, bytes: Buffer): Promise<void>;
  /** Undefined when no blob has that key. */
  get(key: string): Promise<Buffer | undefined>;
  /** Deleting a missing key is not an error, so retries are harmless. */
  delete(key: string): Promise<void>;
  /** Deletes every key under a folder; the prefix ends with `/`. */
  deletePrefix(prefix: string): Promise<void>;
  ping(): Promise<void>;
}

/**
 * Segments are plain names; one starting with `.` is refused too, which also keeps the fs driver's
 * temporary files (`.name.<random>.tmp`) out of every key's reach.
 */
function keySegments(key: string): string[] {
  const segments = key.split('/');
  const bad = key.includes('\\') || key.includes('\0') || segments.some((segment) => segment === '' || segment.startsWith('.'));
  if (bad) throw new Error(`invalid blob key ${JSON.stringify(key)}: relative "/"-separated names only, no "..", "\\" or leading "/"`);
  return segments;
}

function fsBlobStore(rootDir: string): BlobStore {
  const root = resolve(rootDir);
  const pathOf = (key: string) => join(root, ...keySegments(key));
  return {
    async put(key, bytes) {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      // Written aside and renamed into place (atomic within a directory), so a reader never sees half a blob.
      const temporary = join(dirname(path), `.${randomBytes(8).toString('hex')}.tmp`);
      try {
        await writeFile(temporary, bytes);
        await rename(temporary, path);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    },
    async get(key) {
      try {
        return await readFile(pathOf(key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async deletePrefix(prefix) {
      if (!prefix.endsWith('/')) throw new Error(`blob prefix ${JSON.stringify(prefix)} must end with "/"`);
      await rm(pathOf(prefix.slice(0, -1)), { recursive: true, force: true });
    },
    async ping() {
      await mkdir(root, { recursive: true });
      await access(root, constants.R_OK | constants.W_OK);
    },
  };
}

export function createBlobStore(config: Config): BlobStore {
  if (config.BLOB_STORE === 's3') throw new Error('BLOB_STORE=s3: the s3 blob driver is not available yet; use BLOB_STORE=fs');
  return fsBlobStore(config.BLOB_DIR);
}
