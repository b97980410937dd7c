import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mongo } from 'mongoose';

/** The whole service as `npm start` runs it (all roles in one process), from source, on random ports. */
test('all roles start, answer /readyz, and stop cleanly on SIGTERM', async () => {
  const database = `slk_test_process_${randomBytes(4).toString('hex')}`;
  const mongoUrl = `${process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, '')}/${database}`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, NODE_OPTIONS: '', PORT: '0', INGEST_PORT: '0', HOST: '127.0.0.1', MONGO_URL: mongoUrl, REDIS_URL: process.env.TEST_REDIS_URL, REDIS_PREFIX: `slk_test_${randomBytes(6).toString('hex')}`, LOG_LEVEL: 'info' },
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
  const portOf = async (msg: string) => {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const line = lines.find((l) => l.msg === msg);
      if (line) return line.port as number;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no "${msg}" line`);
  };
  try {
    const apiPort = await portOf('api listening');
    const ingestPort = await portOf('ingest listening');
    expect(lines.some((l) => l.msg === 'workers started')).toBe(true);
    for (const port of [apiPort, ingestPort]) expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
    await expect(fetch(`http://127.0.0.1:${apiPort}/healthz`)).rejects.toThrow();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    const client = await mongo.MongoClient.connect(mongoUrl);
    await client.db(database).dropDatabase();
    await client.close();
  }
}, 40_000);
