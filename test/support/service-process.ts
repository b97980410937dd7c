import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { deletePrefix } from './redis-keys.js';

/**
 * The service as `npm start` runs it, from source, as a child process on random ports: all roles by
 * default, or one with `ROLE`. Its JSON log lines are kept; `portOf` waits for a "… listening" line
 * (20 s by default: more when several processes start at once); `stop` sends SIGTERM, waits for the exit
 * and deletes the Redis keys under the prefix made up here.
 */
export function startService(env: Record<string, string | undefined>) {
  const prefix = `slk_test_${randomBytes(6).toString('hex')}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, NODE_OPTIONS: '', PORT: '0', INGEST_PORT: '0', WEB_PORT: '0', HOST: '127.0.0.1', REDIS_URL: process.env.TEST_REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const complete = buffered.split('\n');
    buffered = complete.pop()!;
    for (const line of complete) if (line.startsWith('{')) lines.push(JSON.parse(line));
  });
  const waitForLine = async (msg: string, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const line = lines.find((l) => l.msg === msg);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no "${msg}" line`);
  };
  const portOf = async (msg: string, timeoutMs?: number) => (await waitForLine(msg, timeoutMs)).port as number;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    // the keys of a prefix made up here, in the test Redis; a prefix or Redis the test gave is its own to clear
    if (!('REDIS_PREFIX' in env) && !('REDIS_URL' in env) && process.env.TEST_REDIS_URL) await deletePrefix(process.env.TEST_REDIS_URL, prefix);
  };
  return { child, lines, portOf, waitForLine, stop };
}

export type ServiceProcess = ReturnType<typeof startService>;
