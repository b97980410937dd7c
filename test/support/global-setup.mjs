// Runs once before all test files, outside Jest's module system (hence tsx to load the TypeScript source):
// the same embedded default as `npm start` — reuse local Redis and MongoDB-compatible servers, or start them under .data/.
import { tsImport } from 'tsx/esm/api';

export default async function globalSetup() {
  const { ensureLocalServices } = await tsImport('../../src/shared/local-services.ts', import.meta.url);
  const urls = await ensureLocalServices({ dataDir: '.data', mongoUrl: process.env.MONGO_URL, redisUrl: process.env.REDIS_URL });
  // Test files derive their own database and key prefix from these.
  process.env.TEST_MONGO_URL = urls.mongoUrl;
  process.env.TEST_REDIS_URL = urls.redisUrl;
}
