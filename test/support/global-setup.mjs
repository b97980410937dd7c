// Runs once before all test files, outside Jest's module system (hence tsx to load the TypeScript source):
// the same embedded default as `npm start` — reuse local Redis and MongoDB-compatible servers, or start them
// under .data/ — chosen by the same configuration (MONGO_URL, REDIS_URL, LOCAL_STORE, LOCAL_POSTGRES_URL).
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup() {
  const { loadConfig } = await tsImport('../../src/shared/config.ts', import.meta.url);
  const { ensureLocalServices } = await tsImport('../../src/shared/local-services.ts', import.meta.url);
  const urls = await ensureLocalServices(loadConfig());
  // Test files derive their own database and key prefix from these.
  process.env.TEST_MONGO_URL = urls.mongoUrl;
  process.env.TEST_REDIS_URL = urls.redisUrl;
  // Set when the store is FerretDB on PostgreSQL, whose expression indexes each test database gets too.
  process.env.TEST_FERRETDB_POSTGRES_URL = urls.ferretdbPostgresUrl ?? '';
}
