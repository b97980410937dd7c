// Runs once before all test files, outside Jest's module system (hence tsx to load the TypeScript source):
// the same embedded default as `npm start` — reuse local Redis and MongoDB-compatible servers, or start them
// under .data/ — chosen by the same configuration (MONGO_URL, REDIS_URL, LOCAL_STORE, LOCAL_POSTGRES_URL).
// The s3 blob driver's tests also get a local S3-compatible server (versitygw, built once with Go).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

const newestChange = (path) => {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  return Math.max(info.mtimeMs, ...readdirSync(path).map((name) => newestChange(join(path, name))));
};

/**
 * The browser tests drive the built dashboard and Debian's Chromium: build the app when its sources are
 * newer than the build, and install Chromium with apt-get when it is missing (Playwright's own browser
 * download cannot be used).
 */
function prepareBrowserTests() {
  const built = 'dist/web/index.html';
  if (!existsSync(built) || newestChange('src/web') > statSync(built).mtimeMs) {
    execFileSync('npx', ['vite', 'build', '--config', 'src/web/vite.config.ts', '--logLevel', 'warn'], { stdio: 'inherit', env: { ...process.env, WEB_BUILD_KEEP_ASSETS: '1' } });
  }
  if (!process.env.CHROMIUM_PATH && !existsSync('/usr/bin/chromium')) {
    process.stderr.write('installing Debian\'s chromium for the browser tests (apt-get)\n');
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
  }
}

export default async function globalSetup() {
  prepareBrowserTests();
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
