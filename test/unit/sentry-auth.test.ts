import { AppError } from '../../src/shared/errors.js';
import { sentryKeyFrom } from '../../src/ingest/sentry/auth.js';

const KEY = 'e12d836b15bb49d7bbf99e64295d995b';

describe('sentryKeyFrom', () => {
  test('sentry_key in the query string, as @sentry/node and browser SDKs send it', () => {
    expect(sentryKeyFrom({ query: { sentry_version: '7', sentry_key: KEY, sentry_client: 'sentry.javascript.node/11.12.0' }, headers: {} })).toBe(KEY);
  });

  test.each([
    `Sentry sentry_key=${KEY}, sentry_version=7, sentry_client=sentry.python/2.19.0`,
    `sentry sentry_version=7,sentry_client=raven-php/1.0,sentry_timestamp=1735787045,sentry_key=${KEY},sentry_secret=s3cr3t`,
    `SENTRY   sentry_version = 7 ,  sentry_key = ${KEY}  `,
    `Sentry\tsentry_key=${KEY}`,
  ])('X-Sentry-Auth: %s', (header) => {
    expect(sentryKeyFrom({ headers: { 'x-sentry-auth': header } })).toBe(KEY);
  });

  test('Authorization: Sentry …', () => {
    expect(sentryKeyFrom({ headers: { authorization: `Sentry sentry_version=7, sentry_key=${KEY}` } })).toBe(KEY);
  });

  test('Authorization: Bearer <public key>, as OTLP exporters send it', () => {
    expect(sentryKeyFrom({ headers: { authorization: `Bearer ${KEY}` } })).toBe(KEY);
    expect(sentryKeyFrom({ headers: { authorization: `bearer  ${KEY} ` } })).toBe(KEY);
  });

  test('the envelope header dsn, with or without a secret', () => {
    expect(sentryKeyFrom({ headers: {}, envelopeHeader: { dsn: `https://${KEY}@sluice.example.com/42` } })).toBe(KEY);
    expect(sentryKeyFrom({ headers: {}, envelopeHeader: { dsn: `http://${KEY}:secret@localhost:8081/prefix/7` } })).toBe(KEY);
  });

  test('the same key from several sources is fine', () => {
    expect(
      sentryKeyFrom({
        query: { sentry_key: KEY },
        headers: { 'x-sentry-auth': `Sentry sentry_key=${KEY}` },
        envelopeHeader: { dsn: `https://${KEY}@sluice.example.com/42` },
      }),
    ).toBe(KEY);
  });

  test('different keys from different sources are refused with invalid_request', () => {
    const conflict = () =>
      sentryKeyFrom({ query: { sentry_key: KEY }, headers: {}, envelopeHeader: { dsn: 'https://0000000000000000000000000000000@sluice.example.com/42' } });
    expect(conflict).toThrow(AppError);
    expect(conflict).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  test.each([
    ['nothing at all', { headers: {} }],
    ['an empty sentry_key', { query: { sentry_key: '' }, headers: {} }],
    ['a Sentry header without sentry_key', { headers: { 'x-sentry-auth': 'Sentry sentry_version=7, sentry_client=x/1' } }],
    ['a header of another scheme', { headers: { authorization: 'Basic dXNlcjpwYXNz' } }],
    ['a word merely starting with "sentry"', { headers: { 'x-sentry-auth': `Sentrykey sentry_key=${KEY}` } }],
    ['a Bearer header without a token', { headers: { authorization: 'Bearer ' } }],
    ['a dsn that is not a URL', { headers: {}, envelopeHeader: { dsn: 'not a url' } }],
    ['a dsn without a key', { headers: {}, envelopeHeader: { dsn: 'https://sluice.example.com/42' } }],
    ['a dsn that is not a string', { headers: {}, envelopeHeader: { dsn: 42 } }],
  ])('%s gives no key', (_name, sources) => {
    expect(sentryKeyFrom(sources)).toBeUndefined();
  });
});
