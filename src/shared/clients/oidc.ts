import * as openid from 'openid-client';
import type { Logger } from '../logger.js';
import type { Outbound } from './outbound.js';

/**
 * The identity provider side of single sign-on (OpenID Connect, authorization code with PKCE), through
 * openid-client. The issuer is typed by any organisation's admin, so every request (discovery, token,
 * userinfo, JWKS) goes through the outbound guard: an internal provider (an in-house Keycloak) is reached
 * only when its address is in OUTBOUND_ALLOWLIST. Plain http issuers are accepted.
 */

/** Which provider and client a login goes through; the secret is already unsealed. */
export interface OidcConnection {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** What a login needs to keep until the provider sends the browser back. */
export interface LoginChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The claims SSO decides on, from the ID token (and the userinfo endpoint when the token lacks them). */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | undefined;
  /** Only the JSON boolean true counts as verified. */
  emailVerified: boolean;
  name: string | undefined;
}

/**
 * The provider's or the protocol's refusal: `denied` when the provider sent an error back through the
 * browser. The other kinds carry one fixed message whatever went wrong (refused by the guard, closed
 * port, not a provider, timeout), so an answer never tells what is listening where; the cause is logged.
 */
export class OidcRefusal extends Error {
  constructor(
    readonly kind: 'discovery' | 'denied' | 'exchange',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'OidcRefusal';
  }
}

export interface OidcClient {
  /** Fetches the issuer's discovery document; answers the issuer identifier it declares. */
  discover(issuer: string): Promise<{ issuer: string }>;
  /** The provider's authorization URL, with fresh state, nonce and an S256 PKCE challenge. */
  beginLogin(connection: OidcConnection, input: { redirectUri: string; loginHint?: string }): Promise<{ url: string; checks: LoginChecks }>;
  /** Redeems the code in `callbackUrl` with the PKCE verifier and validates the ID token (issuer, audience, nonce, signature). */
  completeLogin(connection: OidcConnection, callbackUrl: URL, checks: LoginChecks): Promise<OidcIdentity>;
}

export const DISCOVERY_FAILED = 'the issuer did not answer as an OpenID Connect provider this server may use (an identity provider on an internal address must be listed in OUTBOUND_ALLOWLIST)';
export const EXCHANGE_FAILED = "the identity provider's answer could not be used";

const SCOPE = 'openid email profile';
/** Discovery documents change rarely; login start and callback reuse one for a few minutes. */
const METADATA_TTL_MS = 5 * 60_000;
/** Answers that may carry no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function requestBody(body: openid.CustomFetchOptions['body']): string | Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof URLSearchParams) return body.toString();
  if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) return Buffer.from(body as ArrayBuffer);
  throw new TypeError('a streamed request body cannot be sent to an identity provider');
}

export function createOidcClient(options: { outbound: Outbound; logger: Logger; timeoutSeconds?: number }): OidcClient {
  const { outbound, logger } = options;
  const timeout = options.timeoutSeconds ?? 10;
  const metadataCache = new Map<string, { metadata: openid.ServerMetadata; until: number }>();

  /** openid-client's every request, through the outbound guard (each redirect answer is returned, not followed). */
  const guardedFetch: openid.CustomFetch = async (url, init) => {
    const answer = await outbound.request({ url, method: init.method, headers: init.headers, body: requestBody(init.body), timeoutMs: timeout * 1000 });
    return new Response(NULL_BODY_STATUSES.has(answer.status) ? null : answer.body, { status: answer.status, headers: answer.headers });
  };

  const refuse = (kind: 'discovery' | 'exchange', issuer: string, error: unknown) => {
    logger.warn({ issuer, reason: describe(error) }, kind === 'discovery' ? 'identity provider discovery failed' : 'identity provider login exchange failed');
    return new OidcRefusal(kind, kind === 'discovery' ? DISCOVERY_FAILED : EXCHANGE_FAILED, { cause: error });
  };

  const prepare = (config: openid.Configuration, issuer: string) => {
    if (new URL(issuer).protocol === 'http:') openid.allowInsecureRequests(config);
    config.timeout = timeout;
    config[openid.customFetch] = guardedFetch;
    // the ID token's signature is checked against the provider's JWKS (fetched through the guard too)
    openid.enableNonRepudiationChecks(config);
    return config;
  };

  async function fetchMetadata(issuer: string): Promise<openid.ServerMetadata> {
    try {
      const url = new URL(issuer);
      const config = await openid.discovery(url, 'discovery', undefined, openid.None(), {
        timeout,
        [openid.customFetch]: guardedFetch,
        ...(url.protocol === 'http:' && { execute: [openid.allowInsecureRequests] }),
      });
      const metadata = config.serverMetadata();
      metadataCache.set(issuer, { metadata, until: Date.now() + METADATA_TTL_MS });
      if (metadata.issuer !== issuer) metadataCache.set(metadata.issuer, { metadata, until: Date.now() + METADATA_TTL_MS });
      return metadata;
    } catch (error) {
      throw refuse('discovery', issuer, error);
    }
  }

  async function configurationFor(connection: OidcConnection): Promise<openid.Configuration> {
    const cached = metadataCache.get(connection.issuer);
    const metadata = cached && cached.until > Date.now() ? cached.metadata : await fetchMetadata(connection.issuer);
    // client_secret_basic is the OpenID default and what most providers register clients with
    const methods = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    const auth = methods.includes('client_secret_basic') || !methods.includes('client_secret_post')
      ? openid.ClientSecretBasic(connection.clientSecret)
      : openid.ClientSecretPost(connection.clientSecret);
    return prepare(new openid.Configuration(metadata, connection.clientId, undefined, auth), connection.issuer);
  }

  return {
    async discover(issuer) {
      const metadata = await fetchMetadata(issuer);
      return { issuer: metadata.issuer };
    },

    async beginLogin(connection, input) {
      const config = await configurationFor(connection);
      const checks: LoginChecks = { state: openid.randomState(), nonce: openid.randomNonce(), codeVerifier: openid.randomPKCECodeVerifier() };
      const url = openid.buildAuthorizationUrl(config, {
        redirect_uri: input.redirectUri,
        scope: SCOPE,
        response_type: 'code',
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await openid.calculatePKCECodeChallenge(checks.codeVerifier),
        code_challenge_method: 'S256',
        ...(input.loginHint && { login_hint: input.loginHint }),
      });
      return { url: url.href, checks };
    },

    async completeLogin(connection, callbackUrl, checks) {
      const config = await configurationFor(connection);
      try {
        const tokens = await openid.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const idToken = tokens.claims();
        if (!idToken) throw new Error('the provider sent no ID token');
        let claims: Record<string, unknown> = idToken;
        // Providers may keep scope claims to the userinfo endpoint (OpenID Connect Core 5.4)
        if (typeof idToken.email !== 'string' || idToken.email_verified === undefined) {
          const userinfo = await openid.fetchUserInfo(config, tokens.access_token, idToken.sub);
          claims = { ...userinfo, ...idToken };
        }
        return {
          issuer: idToken.iss,
          subject: idToken.sub,
          email: typeof claims.email === 'string' ? claims.email : undefined,
          emailVerified: claims.email_verified === true,
          name: typeof claims.name === 'string' ? claims.name : undefined,
        };
      } catch (error) {
        if (error instanceof openid.AuthorizationResponseError) {
          throw new OidcRefusal('denied', `the identity provider refused: ${error.error}${error.error_description ? ` (${error.error_description})` : ''}`, { cause: error });
        }
        throw refuse('exchange', connection.issuer, error);
      }
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof openid.ResponseBodyError) return `${error.error}${error.error_description ? `: ${error.error_description}` : ''}`;
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}
