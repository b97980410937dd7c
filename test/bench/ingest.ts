/**
 * `npm run bench`: ingest throughput and latency for Sentry envelopes and OTLP spans, the workers' time
 * to store what was accepted, and process memory while decompression bombs arrive. Prints its figures.
 * Runs against the same local Redis and MongoDB-compatible server as the tests (or MONGO_URL/REDIS_URL).
 */
import { performance } from 'node:perf_hooks';
import mongoose from 'mongoose';
import { ErrorEvent } from '../../src/shared/features/issues/model.js';
import { Span } from '../../src/shared/features/traces/model.js';
import { loadConfig } from '../../src/shared/config.js';
import { ensureLocalServices } from '../../src/shared/local-services.js';
import { signUp } from '../support/factories/accounts.js';
import { envelope, errorEvent, eventId, gzipBomb, projectWithDsn } from '../support/factories/telemetry.js';
import { dropTestDatabase, startHarness } from '../support/harness.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1);

async function load(name: string, send: (i: number) => Promise<number>) {
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const t = performance.now();
        if ((await send(i)) !== 200) failures++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(`${name}: ${REQUESTS} requests, concurrency ${CONCURRENCY}: ${(REQUESTS / seconds).toFixed(0)} req/s, p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, ${failures} not 200`);
  return started;
}

async function until(what: string, since: number, done: () => Promise<boolean>) {
  while (!(await done())) await new Promise((r) => setTimeout(r, 50));
  console.log(`${what}: stored ${((performance.now() - since) / 1000).toFixed(2)} s after the first request`);
}

async function main() {
  const urls = await ensureLocalServices(loadConfig());
  process.env.TEST_MONGO_URL = urls.mongoUrl;
  process.env.TEST_REDIS_URL = urls.redisUrl;
  process.env.TEST_FERRETDB_POSTGRES_URL = urls.ferretdbPostgresUrl ?? '';
  const h = await startHarness({ LOG_LEVEL: 'warn', INGEST_RATE_LIMIT_PER_SECOND: '1000000' }, { workers: true });
  try {
    const project = await projectWithDsn(await signUp(h), h.ingest.baseUrl);
    const path = `${h.ingest.baseUrl}/api/${project.number}/envelope/?sentry_key=${project.publicKey}`;

    const eventsStarted = await load('sentry envelopes (1 error event each)', async (i) => {
      const event = errorEvent({}, { lineno: i });
      const response = await fetch(path, { method: 'POST', body: envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]) });
      await response.arrayBuffer();
      return response.status;
    });
    await until('error events', eventsStarted, async () => (await ErrorEvent.countDocuments({ issueId: { $ne: null } })) >= REQUESTS);

    const spansPerRequest = 10;
    const spansStarted = await load(`OTLP/JSON traces (${spansPerRequest} spans each)`, async () => {
      const traceId = eventId();
      const spans = Array.from({ length: spansPerRequest }, (_, s) => ({
        traceId,
        spanId: eventId().slice(0, 16),
        name: `GET /items/${s}`,
        kind: 2,
        startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
        endTimeUnixNano: String(BigInt(Date.now() + 5) * 1_000_000n),
        attributes: [{ key: 'http.request.method', value: { stringValue: 'GET' } }],
      }));
      const body = JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }] }, scopeSpans: [{ spans }] }] });
      const response = await fetch(`${h.ingest.baseUrl}/v1/traces`, { method: 'POST', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${project.publicKey}` } });
      await response.arrayBuffer();
      return response.status;
    });
    await until('spans', spansStarted, async () => (await Span.countDocuments({})) >= REQUESTS * spansPerRequest);

    const bomb = gzipBomb();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const statuses = await Promise.all(Array.from({ length: 8 }, () => fetch(path, { method: 'POST', body: bomb, headers: { 'content-encoding': 'gzip' } }).then((r) => r.status)));
    clearInterval(sampler);
    console.log(`8 concurrent gzip bombs (${(bomb.length / 1024).toFixed(0)} KiB → 256 MiB each): statuses ${[...new Set(statuses)].join(',')}, process RSS grew ${((peak - before) / 1048576).toFixed(0)} MiB at peak`);
  } finally {
    await h.close();
    await dropTestDatabase();
    await mongoose.disconnect();
  }
}

await main();
