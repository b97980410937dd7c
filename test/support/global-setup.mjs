// Runs once before all test files, outside Jest's module system (hence tsx to load the TypeScript source):
// the same embedded default as `npm start` — reuse local Redis and MongoDB-compatible servers, or start them
// under .data/ — chosen by the same configuration (MONGO_URL, REDIS_URL, LOCAL_STORE, LOCAL_POSTGRES_URL).
// The s3 blob driver's tests also get a local S3-compatible server (versitygw, built once with Go).
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup() {
  const { loadConfig } = await tsImport('../../src/shared/config.ts', import.meta.url);
  const { ensureLocalServices, ensureLocalS3 } = await tsImport('../../src/shared/local-services.ts', import.meta.url);
  const config = loadConfig();
  const urls = await ensureLocalServices(config);
  // Test files derive their own database and key prefix from these.
  process.env.TEST_MONGO_URL = urls.mongoUrl;
  process.env.TEST_REDIS_URL = urls.redisUrl;
  // Set when the store is FerretDB on PostgreSQL, whose expression indexes each test database gets too.
  process.env.TEST_FERRETDB_POSTGRES_URL = urls.ferretdbPostgresUrl ?? '';
  // One bucket for every test file; each file writes under a key prefix of its own.
  const s3 = await ensureLocalS3(config);
  process.env.TEST_S3_ENDPOINT = s3.endpoint;
  process.env.TEST_S3_ACCESS_KEY_ID = s3.accessKeyId;
  process.env.TEST_S3_SECRET_ACCESS_KEY = s3.secretAccessKey;
  process.env.TEST_S3_BUCKET = s3.bucket;
}
