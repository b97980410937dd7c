/**
 * A real OpenID Connect provider (panva's oidc-provider) on a loopback port, for single sign-on tests.
 * One client is registered with the API's redirect URI. Accounts are a map the test fills: the login
 * id typed at the provider is the subject, and its claims are whatever the test put there. The
 * provider's development interactions (login, then consent) are driven with fetch and a cookie jar.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
// @ts-expect-error -- oidc-provider ships no type declarations
import Provider from 'oidc-provider';

export interface AccountClaims {
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface OidcProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /**
   * Put the email claims in the ID token too. By default (as OpenID Connect Core 5.4 has it for the
   * code flow) they come from the userinfo endpoint only.
   */
  claimsInIdToken?: boolean;
}

export interface TestOidcProvider {
  issuer: string;
  /** Subject → claims; a login as a subject not here fails at the provider. */
  accounts: Map<string, AccountClaims>;
  /**
   * Follows an authorization URL through the provider's login and consent as `subject`, and answers
   * the URL the provider sends the browser back to (the API's callback, not requested).
   */
  signIn(authorizationUrl: string, subject: string): Promise<URL>;
  close(): Promise<void>;
}

/** A cookie jar as small as the provider needs: name → value, paths ignored. */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(headers: Headers) {
    for (const line of headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<TestOidcProvider> {
  const accounts = new Map<string, AccountClaims>();
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['sluice-test-cookie-key'] },
    jwks: { keys: [{ ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' }] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 600, IdToken: 600, Interaction: 600, Session: 600 },
    conformIdTokenClaims: !options.claimsInIdToken,
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx: unknown, sub: string) => {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...claims }) };
    },
  });
  // the provider warns about its development keys and interactions; tests know
  provider.on('server_error', () => {});
  server.on('request', provider.callback());

  async function signIn(authorizationUrl: string, subject: string): Promise<URL> {
    const jar = new CookieJar();
    let url = new URL(authorizationUrl);
    for (let hop = 0; hop < 12; hop++) {
      if (!url.href.startsWith(issuer)) return url;
      const interaction = /^\/interaction\/([^/]+)$/.exec(url.pathname);
      let response: Response;
      if (interaction) {
        const page = await fetch(url, { headers: { cookie: jar.header() }, redirect: 'manual' });
        jar.take(page.headers);
        const html = await page.text();
        const prompt = /name="prompt" value="login"/.test(html) ? 'login' : 'consent';
        const form = new URLSearchParams(prompt === 'login' ? { prompt, login: subject, password: 'any' } : { prompt });
        response = await fetch(url, { method: 'POST', body: form, headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' }, redirect: 'manual' });
      } else {
        response = await fetch(url, { headers: { cookie: jar.header() }, redirect: 'manual' });
      }
      jar.take(response.headers);
      const location = response.headers.get('location');
      if (!location) throw new Error(`the provider stopped at ${url.pathname} with ${response.status}: ${(await response.text()).slice(0, 300)}`);
      await response.body?.cancel();
      url = new URL(location, url);
    }
    throw new Error('the provider redirected too many times');
  }

  return {
    issuer,
    accounts,
    signIn,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
