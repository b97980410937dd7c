import type { Config } from '../config.js';
import { httpLinkOrUndefined } from '../links.js';

const stringOf = (value: unknown) => (typeof value === 'string' ? value : undefined);

export const providers = ['github', 'gitlab'] as const;
export type Provider = (typeof providers)[number];

/** What a code host says of a repository a token can see. */
export interface RepositoryFacts {
  /** The repository's page, e.g. https://github.com/acme/shop: links are built on it. */
  webUrl: string;
  defaultBranch: string;
}

/** The host's refusal, worded for the user (a wrong token, a repository it cannot see). */
export class CodeHostRefusal extends Error {}

const TIMEOUT_MS = 10_000;
/** Redirects followed within the API's own origin (a renamed repository); one to another origin is refused. */
const MAX_REDIRECTS = 5;

/** GitHub and GitLab REST clients: the only place Sluice talks to a code host. */
export interface CodeHosts {
  verify(provider: Provider, repository: string, token: string): Promise<RepositoryFacts>;
}

export function createCodeHosts(config: Config): CodeHosts {
  const request = async (url: string, headers: Record<string, string>, host: string) => {
    // The token travels in a header fetch would forward across a redirect to any host (GitLab's
    // PRIVATE-TOKEN is no Authorization header), so redirects are followed here, within the origin only.
    let response: Response;
    let target = new URL(url);
    for (let hops = 0; ; hops++) {
      try {
        response = await fetch(target, { headers: { accept: 'application/json', 'user-agent': 'Sluice', ...headers }, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
      } catch (error) {
        throw new CodeHostRefusal(`${host} could not be reached: ${(error as Error).message}`);
      }
      const location = response.status >= 300 && response.status < 400 ? response.headers.get('location') : null;
      if (location === null) break;
      const next = new URL(location, target);
      if (next.origin !== target.origin) throw new CodeHostRefusal(`${host} redirected to another origin (${next.origin}); the access token is not sent there`);
      if (hops === MAX_REDIRECTS) throw new CodeHostRefusal(`${host} redirected more than ${MAX_REDIRECTS} times`);
      target = next;
    }
    if (response.status === 401) throw new CodeHostRefusal(`${host} refused the access token (401): it is wrong, expired or revoked`);
    if (response.status === 403) throw new CodeHostRefusal(`${host} refused access to the repository with this token (403)`);
    if (response.status === 404) throw new CodeHostRefusal(`${host} knows no repository of that name that this token can see (404)`);
    if (!response.ok) throw new CodeHostRefusal(`${host} answered ${response.status}`);
    // a repository is a JSON object; anything else (a proxy's page, a list) is not the API we asked
    let body: unknown;
    try {
      body = await response.json();
    } catch {
      body = undefined;
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new CodeHostRefusal(`${host} did not answer as its REST API does (status ${response.status}, not a repository)`);
    return body as Record<string, unknown>;
  };
  const api = (base: string) => base.replace(/\/+$/, '');
  return {
    async verify(provider, repository, token) {
      if (provider === 'github') {
        // exactly owner/name, never a dot segment: anything else is another endpoint of the API
        const segments = repository.split('/');
        if (segments.length !== 2 || segments.some((segment) => segment === '.' || segment === '..' || segment === '')) throw new CodeHostRefusal('a GitHub repository is owner/name');
        const body = await request(`${api(config.GITHUB_API_URL)}/repos/${segments.map(encodeURIComponent).join('/')}`, { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' }, 'GitHub');
        return { webUrl: httpLinkOrUndefined(stringOf(body.html_url)) ?? `https://github.com/${repository}`, defaultBranch: String(body.default_branch ?? 'main') };
      }
      const body = await request(`${api(config.GITLAB_API_URL)}/projects/${encodeURIComponent(repository)}`, { 'private-token': token }, 'GitLab');
      return { webUrl: httpLinkOrUndefined(stringOf(body.web_url)) ?? `https://gitlab.com/${repository}`, defaultBranch: String(body.default_branch ?? 'main') };
    },
  };
}

/** Links into a repository's pages on its host. */
export const codeLinks = {
  commit: (provider: Provider, webUrl: string, sha: string) => `${webUrl}${provider === 'gitlab' ? '/-' : ''}/commit/${sha}`,
  source: (provider: Provider, webUrl: string, ref: string, path: string, line?: number | null) =>
    `${webUrl}${provider === 'gitlab' ? '/-' : ''}/blob/${ref}/${path.replace(/^\/+/, '')}${line ? `#L${line}` : ''}`,
};
