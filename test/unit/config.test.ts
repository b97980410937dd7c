import { ConfigError, loadConfig } from '../../src/shared/config.js';

describe('configuration', () => {
  test('defaults match CONTRACT.md and the result is frozen', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ ROLE: 'all', PORT: 8080, INGEST_PORT: 8081, SESSION_TTL_HOURS: 720, INGEST_PUBLIC_URL: 'http://localhost:8081', secureCookies: false });
    expect(Object.isFrozen(config)).toBe(true);
  });

  test('the dashboard: served on WEB_PORT 3000, and its origin follows the port unless DASHBOARD_ORIGIN is set', () => {
    expect(loadConfig({})).toMatchObject({ WEB_PORT: 3000, DASHBOARD_ORIGIN: 'http://localhost:3000' });
    expect(loadConfig({ WEB_PORT: '4100' }).DASHBOARD_ORIGIN).toBe('http://localhost:4100');
    // off: the files are hosted elsewhere, and the origin is the team's own
    expect(loadConfig({ WEB_PORT: '0', DASHBOARD_ORIGIN: 'https://observe.example.com/' })).toMatchObject({ WEB_PORT: 0, DASHBOARD_ORIGIN: 'https://observe.example.com' });
  });

  test('values are coerced, and an https public URL turns on Secure cookies', () => {
    const config = loadConfig({ PORT: '9000', INGEST_PORT: '9001', API_PUBLIC_URL: 'https://observe.example.com' });
    expect(config.PORT).toBe(9000);
    expect(config.INGEST_PUBLIC_URL).toBe('http://localhost:9001');
    expect(config.secureCookies).toBe(true);
  });

  test('boot fails listing every bad key at once', () => {
    expect(() => loadConfig({ PORT: 'eighty', ROLE: 'everything', DASHBOARD_ORIGIN: 'not a url' })).toThrow(ConfigError);
    try {
      loadConfig({ PORT: 'eighty', ROLE: 'everything', DASHBOARD_ORIGIN: 'not a url' });
    } catch (error) {
      const message = (error as Error).message;
      for (const key of ['PORT', 'ROLE', 'DASHBOARD_ORIGIN']) expect(message).toContain(`${key}:`);
    }
  });

  test('the s3 blob store: defaults, path style from true/false/1/0, and empty values read as unset', () => {
    const defaults = loadConfig({});
    expect(defaults).toMatchObject({ BLOB_STORE: 'fs', S3_REGION: 'us-east-1', S3_FORCE_PATH_STYLE: false });
    expect([defaults.S3_ENDPOINT, defaults.S3_BUCKET]).toEqual([undefined, undefined]);
    const config = loadConfig({
      BLOB_STORE: 's3',
      S3_ENDPOINT: 'http://minio:9000',
      S3_REGION: 'eu-west-3',
      S3_BUCKET: 'sluice',
      S3_ACCESS_KEY_ID: 'key',
      S3_SECRET_ACCESS_KEY: 'secret',
      S3_FORCE_PATH_STYLE: 'true',
    });
    expect(config).toMatchObject({ BLOB_STORE: 's3', S3_ENDPOINT: 'http://minio:9000', S3_REGION: 'eu-west-3', S3_BUCKET: 'sluice', S3_ACCESS_KEY_ID: 'key', S3_SECRET_ACCESS_KEY: 'secret', S3_FORCE_PATH_STYLE: true });
    for (const [value, expected] of [['true', true], ['1', true], ['false', false], ['0', false]] as const) {
      expect(loadConfig({ S3_FORCE_PATH_STYLE: value }).S3_FORCE_PATH_STYLE).toBe(expected);
    }
    // docker-compose's `${VAR:-}` passes empty strings for unset variables
    const empty = loadConfig({ S3_ENDPOINT: '', S3_BUCKET: '', S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '' });
    expect([empty.S3_ENDPOINT, empty.S3_BUCKET, empty.S3_ACCESS_KEY_ID, empty.S3_SECRET_ACCESS_KEY]).toEqual([undefined, undefined, undefined, undefined]);
    // without keys the AWS SDK's own credential chain signs
    expect(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'sluice' }).S3_ACCESS_KEY_ID).toBeUndefined();
  });

  test('BLOB_STORE=s3 without S3_BUCKET, or bad S3 values, fail at boot beside the other bad keys', () => {
    const messageOf = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('loadConfig accepted it');
    };
    expect(messageOf({ BLOB_STORE: 's3' })).toContain('S3_BUCKET: required when BLOB_STORE=s3');
    const message = messageOf({ BLOB_STORE: 's3', S3_BUCKET: '', PORT: 'eighty', S3_ENDPOINT: 'not a url', S3_FORCE_PATH_STYLE: 'yes', S3_ACCESS_KEY_ID: 'key' });
    for (const key of ['PORT', 'S3_BUCKET', 'S3_ENDPOINT', 'S3_FORCE_PATH_STYLE', 'S3_SECRET_ACCESS_KEY']) expect(message).toContain(`${key}:`);
    expect(messageOf({ BLOB_STORE: 'gcs' })).toContain('BLOB_STORE:');
    // the fs store needs no bucket
    expect(loadConfig({ BLOB_STORE: 'fs' }).S3_BUCKET).toBeUndefined();
  });
});
