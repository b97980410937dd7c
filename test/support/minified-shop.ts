import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import vm from 'node:vm';
import { build } from 'esbuild';
import type { Account } from './factories/accounts.js';
import { envelope, eventId, type ProjectWithDsn } from './factories/telemetry.js';
import type { Harness } from './harness.js';
import { eventually } from './wait.js';

/**
 * A small TypeScript "shop" built the way a web app ships: minified with an external source map, then
 * run as a browser would run it from its CDN, so tests get real minified frames to symbolicate.
 * submitOrder (a.ts) calls checkTotal (b.ts), which throws a RangeError on a negative total.
 */
export const SHOP_CDN = 'https://cdn.example.com/static';

export const SHOP_SOURCES = {
  'a.ts': `import { checkTotal, type Order } from './b';

export function submitOrder(order: Order): string {
  const total = checkTotal(order);
  return \`\${order.id}:\${total}\`;
}
`,
  'b.ts': `export interface Order { id: string; total: number }

export function checkTotal(order: Order): number {
  if (order.total < 0) {
    throw new RangeError(\`order \${order.id} has a negative total\`);
  }
  return order.total;
}
`,
};

export type BrowserFrame = { filename: string; abs_path: string; function: string; lineno: number; colno: number; in_app: boolean };

export interface MinifiedShop {
  file: string;
  url: string;
  code: string;
  map: string;
  /** The thrown error's stack as a browser SDK sends it: bundle frames only, oldest first. */
  frames: BrowserFrame[];
}

/** The shop's sources in a temporary folder; `build` makes a minified bundle of them, `remove` deletes the folder. */
export async function shopSources() {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-shop-'));
  for (const [name, text] of Object.entries(SHOP_SOURCES)) await writeFile(join(dir, name), text);
  return {
    /** `banner` shifts every column, so two builds differ; `debugId` is added as `sentry-cli sourcemaps inject` adds it, to the file and its map. */
    build: (file: string, options: { banner?: string; debugId?: string } = {}) => minifiedShop(dir, file, options),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

async function minifiedShop(dir: string, file: string, { banner = '', debugId }: { banner?: string; debugId?: string }): Promise<MinifiedShop> {
  const result = await build({
    entryPoints: [join(dir, 'a.ts')],
    bundle: true,
    minify: true,
    sourcemap: 'external',
    format: 'iife',
    globalName: 'shop',
    banner: { js: banner },
    write: false,
    outfile: join(dir, 'dist', file),
    logLevel: 'silent',
  });
  let code = result.outputFiles.find((output) => output.path.endsWith('.js'))!.text;
  let map = result.outputFiles.find((output) => output.path.endsWith('.map'))!.text;
  if (debugId) {
    code = `${code}//# debugId=${debugId}\n`;
    map = JSON.stringify({ ...JSON.parse(map), debug_id: debugId, debugId });
  }
  const url = `${SHOP_CDN}/${file}`;
  // Run it as a browser would have loaded it from the CDN and read where it threw from the stack.
  const context: { shop?: { submitOrder(order: unknown): string } } = {};
  vm.runInNewContext(`${code}\nthis.shop = shop;`, context, { filename: url });
  let stack = '';
  try {
    context.shop!.submitOrder({ id: 'o-1', total: -5 });
  } catch (error) {
    stack = (error as Error).stack ?? '';
  }
  const frames = stack
    .split('\n')
    .flatMap((line) => {
      const match = /^\s*at (?:(.+?) \()?(.+?):(\d+):(\d+)\)?$/.exec(line);
      return match && match[2] === url ? [{ filename: url, abs_path: url, function: match[1] ?? '?', lineno: Number(match[3]), colno: Number(match[4]), in_app: true }] : [];
    })
    .reverse();
  if (frames.length !== 2) throw new Error(`expected two bundle frames in:\n${stack}`);
  return { file, url, code, map, frames };
}

/** The shop's RangeError as a browser SDK reports it, with the given frames (and `extra` fields: release, debug_meta…). */
export function shopErrorEvent(frames: BrowserFrame[], extra: Record<string, unknown>) {
  return {
    event_id: eventId(),
    timestamp: Date.now() / 1000,
    platform: 'javascript',
    level: 'error',
    exception: { values: [{ type: 'RangeError', value: 'order o-1 has a negative total', mechanism: { type: 'onerror', handled: false }, stacktrace: { frames } }] },
    ...extra,
  };
}

/** Sends an event through ingest, as an SDK would. */
export async function sendEvent(h: Harness, project: ProjectWithDsn, event: { event_id: string }) {
  const reply = await h.ingest.request('POST', `/api/${project.number}/envelope/?sentry_key=${project.publicKey}`, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]));
  expect(reply.status).toBe(200);
}

/** The issue holding an event, once the worker has stored it, with the event as the API serves it. */
export async function storedEvent(account: Account, project: ProjectWithDsn, id: string) {
  return eventually(async () => {
    const issues = (await account.client.get(`/v1/issues?project=${project.id}`)).body.data as Array<{ id: string; count: number }>;
    for (const issue of issues) {
      const events = (await account.client.get(`/v1/issues/${issue.id}/events?limit=200`)).body.data as Array<{ event_id: string }>;
      const event = events.find((candidate) => candidate.event_id === id);
      if (event) return { issue, event: event as any };
    }
    return undefined;
  }, `event ${id} stored`);
}
