import { ConfigError, loadConfig } from '../../src/shared/config.js';

describe('configuration', () => {
  test('defaults match CONTRACT.md and the result is frozen', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ ROLE: 'all', PORT: 8080, INGEST_PORT: 8081, SESSION_TTL_HOURS: 720, INGEST_PUBLIC_URL: 'http://localhost:8081', secureCookies: false });
    expect(Object.isFrozen(config)).toBe(true);
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
});
