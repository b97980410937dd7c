import { randomBytes } from 'node:crypto';
import { access, constants, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config.js';

type S3Sdk = typeof import('@aws-sdk/client-s3');
let s3Sdk: Promise<S3Sdk> | undefined;
/** The AWS SDK is loaded on first use: about 24 MiB and 0.3 s that a process on the `fs` default never needs. */
const loadS3Sdk = () => (s3Sdk ??= import('@aws-sdk/client-s3'));

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

/** Where an S3-compatible store is and how to sign for it; unset credentials fall back to the SDK's own chain. */
export interface S3Location {
  endpoint?: string | undefined;
  region: string;
  bucket: string;
  accessKeyId?: string | undefined;
  secretAccessKey?: string | undefined;
  /** `http://host/bucket/key` instead of `http://bucket.host/key`: what MinIO, versitygw and most self-hosted stores need. */
  forcePathStyle: boolean;
}

/** DeleteObjects takes at most this many keys per request. */
const S3_DELETE_BATCH = 1000;

function s3Client({ S3Client }: S3Sdk, location: S3Location): S3Client {
  return new S3Client({
    region: location.region,
    forcePathStyle: location.forcePathStyle,
    ...(location.endpoint && { endpoint: location.endpoint }),
    ...(location.accessKeyId && location.secretAccessKey && { credentials: { accessKeyId: location.accessKeyId, secretAccessKey: location.secretAccessKey } }),
    // Checksums only where the API demands them: several S3-compatible servers refuse the SDK's default CRC32 headers.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A store that does not answer must fail a request (and `/readyz`) rather than hang it.
    requestHandler: { connectionTimeout: 2000, requestTimeout: 30_000 },
  });
}

/**
 * Says which request on which bucket failed. The SDK names a bodiless error (any HEAD request) just
 * "Unknown", so the HTTP status stands in for it; network errors keep their own message.
 */
function s3Failure({ S3ServiceException }: S3Sdk, what: string, location: S3Location, error: unknown): Error {
  const where = `bucket ${JSON.stringify(location.bucket)}${location.endpoint ? ` at ${location.endpoint}` : ''}`;
  if (!(error instanceof S3ServiceException)) return new Error(`s3 ${what} on ${where} failed: ${(error as Error).message}`, { cause: error });
  const status = error.$metadata.httpStatusCode;
  const name = error.name === 'Unknown' || error.name === 'UnknownError' ? (status && STATUS_CODES[status]) || error.name : error.name;
  return new Error(`s3 ${what} on ${where} failed: ${name}${status ? ` (HTTP ${status})` : ''}`, { cause: error });
}

const isMissingKey = ({ S3ServiceException }: S3Sdk, error: unknown) =>
  error instanceof S3ServiceException && (error.name === 'NoSuchKey' || (error.$metadata.httpStatusCode === 404 && error.name !== 'NoSuchBucket'));

function s3BlobStore(location: S3Location): BlobStore {
  let connected: Promise<{ sdk: S3Sdk; client: S3Client }> | undefined;
  const connect = () => (connected ??= loadS3Sdk().then((sdk) => ({ sdk, client: s3Client(sdk, location) })));
  const Bucket = location.bucket;
  const keyOf = (key: string) => keySegments(key).join('/');
  const send = async <T>(what: string, request: (sdk: S3Sdk, client: S3Client) => Promise<T>): Promise<T> => {
    const { sdk, client } = await connect();
    try {
      return await request(sdk, client);
    } catch (error) {
      throw s3Failure(sdk, what, location, error);
    }
  };
  return {
    async put(key, bytes) {
      const Key = keyOf(key);
      await send('put', (sdk, client) => client.send(new sdk.PutObjectCommand({ Bucket, Key, Body: bytes, ContentLength: bytes.length })));
    },
    async get(key) {
      const Key = keyOf(key);
      const { sdk, client } = await connect();
      try {
        const reply = await client.send(new sdk.GetObjectCommand({ Bucket, Key }));
        if (!reply.Body) return Buffer.alloc(0);
        const bytes = await reply.Body.transformToByteArray();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      } catch (error) {
        if (isMissingKey(sdk, error)) return undefined;
        throw s3Failure(sdk, 'get', location, error);
      }
    },
    async delete(key) {
      const Key = keyOf(key);
      // S3 answers 204 for a missing key too.
      await send('delete', (sdk, client) => client.send(new sdk.DeleteObjectCommand({ Bucket, Key })));
    },
    async deletePrefix(prefix) {
      if (!prefix.endsWith('/')) throw new Error(`blob prefix ${JSON.stringify(prefix)} must end with "/"`);
      const Prefix = `${keyOf(prefix.slice(0, -1))}/`;
      let ContinuationToken: string | undefined;
      do {
        const page = await send('list', (sdk, client) => client.send(new sdk.ListObjectsV2Command({ Bucket, Prefix, ContinuationToken, MaxKeys: S3_DELETE_BATCH })));
        const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
        for (let start = 0; start < keys.length; start += S3_DELETE_BATCH) {
          const Objects = keys.slice(start, start + S3_DELETE_BATCH);
          const reply = await send('delete', (sdk, client) => client.send(new sdk.DeleteObjectsCommand({ Bucket, Delete: { Objects, Quiet: true } })));
          const failed = reply.Errors ?? [];
          if (failed.length) throw new Error(`s3 delete under ${JSON.stringify(Prefix)} failed for ${failed.length} keys, e.g. ${failed[0]!.Key}: ${failed[0]!.Code}`);
        }
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
    },
    async ping() {
      await send('ping', (sdk, client) => client.send(new sdk.HeadBucketCommand({ Bucket })));
    },
  };
}

/** Creates the bucket unless it exists already; for a store the service runs itself (tests, the local S3 server). */
export async function ensureS3Bucket(location: S3Location): Promise<void> {
  const sdk = await loadS3Sdk();
  const { S3ServiceException } = sdk;
  const client = s3Client(sdk, location);
  try {
    await client.send(new sdk.HeadBucketCommand({ Bucket: location.bucket }));
  } catch (error) {
    if (!(error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404)) throw s3Failure(sdk, 'head', location, error);
    await client.send(new sdk.CreateBucketCommand({ Bucket: location.bucket })).catch((created: unknown) => {
      // another process created it in the meantime
      if (!(created instanceof S3ServiceException && ['BucketAlreadyOwnedByYou', 'BucketAlreadyExists'].includes(created.name))) throw s3Failure(sdk, 'create', location, created);
    });
  } finally {
    client.destroy();
  }
}

export function s3LocationOf(config: Config): S3Location {
  return {
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    bucket: config.S3_BUCKET!,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
  };
}

export function createBlobStore(config: Config): BlobStore {
  if (config.BLOB_STORE === 's3') return s3BlobStore(s3LocationOf(config));
  return fsBlobStore(config.BLOB_DIR);
}
