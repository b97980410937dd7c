import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the slice of GitHub's REST API that connecting a repository uses
 * (`GET /repos/{owner}/{name}` with a Bearer token), for tests that need a project connected to a
 * repository without reaching github.com. Point GITHUB_API_URL at `url`.
 */
export async function startGitHub(token: string, repositories: string[]): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.headers.authorization !== `Bearer ${token}`) return json(401, { message: 'Bad credentials' });
    const name = /^\/repos\/([^/]+\/[^/?]+)$/.exec(req.url ?? '')?.[1];
    if (name && repositories.includes(name)) return json(200, { full_name: name, html_url: `https://github.example.test/${name}`, default_branch: 'main', private: true });
    return json(404, { message: 'Not Found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The stand-in for a test file: started before the harness (call this before `useHarness`, with the env
 * object the harness gets, which receives GITHUB_API_URL) and stopped after it.
 */
export function useGitHub(token: string, repositories: string[], env: Record<string, string>): void {
  let github: Awaited<ReturnType<typeof startGitHub>> | undefined;
  beforeAll(async () => {
    github = await startGitHub(token, repositories);
    env.GITHUB_API_URL = github.url;
  });
  afterAll(() => github?.close());
}
