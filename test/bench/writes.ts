/**
 * `npm run bench:writes`: what the workers' writes cost the local store, the figures behind the
 * end-to-end error-event rate. On a fresh database of the local store (as `npm start` gets it):
 *
 * - **one update by `_id`, by document size**: BENCH_WRITE_DOCS issue-shaped documents whose `hourly`
 *   map holds 2, 48, 168, 720 and 2160 hours (a new issue, two days, a week, a month, three months of
 *   activity), then the issue count's update of each (`$set`, `$min`, `$max`, `$inc`, `$addToSet`) and
 *   a read of two fields, PARALLEL_WRITES at a time as the workers send them: milliseconds per write.
 *   Beside them, a small end-user document's upsert and an `insertMany` of 500.
 * - **a flush**: `storeErrorBatches`, the workers' own code, on flushes of BENCH_FLUSH single-event
 *   batches whose events spread over 1 or BENCH_FINGERPRINTS issues and 1 or BENCH_USERS end users:
 *   events per second and what each distinct issue adds to a flush; then `writeEndUsers`, which a
 *   workers process runs every few seconds: how many end users those flushes left and their time.
 * - **a span flush**: `ingestSpans`, the workers' own code, on flushes of BENCH_SPAN_FLUSH spans shaped
 *   as the service bench sends them (OTLP exports of traces of five: a server span and four database
 *   calls, decoded by ingest's decoder), each trace new: spans per second, summaries and rollups included.
 *
 * Figures go to stdout and bench-results/writes.json.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import mongoose, { Types } from 'mongoose';
import { storeErrorBatches } from '../../src/shared/features/issues/store.js';
import { ingestSpans } from '../../src/shared/features/traces/store.js';
import { writeEndUsers } from '../../src/shared/features/users/service.js';
import { decodeTraces } from '../../src/shared/telemetry/otlp/decode.js';
import { inParallel, PARALLEL_WRITES, shareWriteTurns } from '../../src/shared/telemetry/storage.js';
import { errorEvent } from '../support/factories/telemetry.js';
import { otlpRequest, SPANS_PER_REQUEST } from './payloads.js';
import { freshDatabase, listFromEnv, numberFromEnv, writeResults } from './support.js';

const DOCS = numberFromEnv('BENCH_WRITE_DOCS', 600);
const HOURS = listFromEnv('BENCH_WRITE_HOURS', '2,48,168,720,2160').map(Number);
const FLUSH = numberFromEnv('BENCH_FLUSH', 500);
const FLUSHES = numberFromEnv('BENCH_FLUSHES', 6);
const FINGERPRINTS = numberFromEnv('BENCH_FINGERPRINTS', 500);
const USERS = numberFromEnv('BENCH_USERS', 1000);
const SPAN_FLUSH = numberFromEnv('BENCH_SPAN_FLUSH', 4000);

const store = await freshDatabase('slk_bench_writes', 'auto', true);
const redis = new Redis(store.redisUrl, { maxRetriesPerRequest: null });
shareWriteTurns(redis, `slk-bench-writes-${Date.now()}:`);
const db = mongoose.connection.db!;

/** Milliseconds per call of `write` over `ids`, PARALLEL_WRITES at a time. */
async function perCall(ids: Types.ObjectId[], write: (id: Types.ObjectId, index: number) => Promise<unknown>): Promise<number> {
  const began = performance.now();
  await inParallel(ids, PARALLEL_WRITES, async (id, index) => {
    await write(id, index);
  });
  return (performance.now() - began) / ids.length;
}

const ids = (count: number) => Array.from({ length: count }, () => new Types.ObjectId());

async function bySize() {
  const rows = [];
  for (const hours of HOURS) {
    const collection = db.collection(`issues_${hours}h`);
    const issues = ids(DOCS);
    const hourly = Object.fromEntries(Array.from({ length: hours }, (_, hour) => [String(490_000 + hour), 3]));
    for (let start = 0; start < issues.length; start += 100) {
      await collection.insertMany(
        issues.slice(start, start + 100).map((_id) => ({
          _id,
          orgId: new Types.ObjectId(),
          projectId: new Types.ObjectId(),
          hash: randomBytes(32).toString('hex'),
          title: "TypeError: Cannot read properties of undefined (reading 'price')",
          culprit: 'totalOf (cart.js)',
          status: 'unresolved',
          eventCount: 10,
          userCount: 3,
          hourly,
          environments: ['production'],
          releases: ['shop@1.0.0'],
          countedBatches: [randomBytes(8).toString('hex')],
          firstSeen: new Date(),
          lastSeen: new Date(),
        })),
      );
    }
    const update = await perCall(issues, (_id, index) =>
      collection.updateOne(
        { _id, eventCount: { $gte: 0 } },
        {
          $set: { latestEventId: randomBytes(16).toString('hex'), countedBatches: [String(index)] },
          $min: { firstSeen: new Date(0) },
          $max: { lastSeen: new Date() },
          $inc: { eventCount: 1, [`hourly.${490_000 + hours - 1}`]: 1 },
          $addToSet: { environments: { $each: ['production'] }, releases: { $each: ['shop@1.0.0'] } },
        },
      ),
    );
    const read = await perCall(issues, (_id) => collection.findOne({ _id }, { projection: { eventCount: 1, countedBatches: 1 } }));
    rows.push({ hours, updateMs: round(update), readMs: round(read) });
    await collection.drop();
  }
  const users = db.collection('end_users_bench');
  const userIds = ids(DOCS);
  const upsert = await perCall(userIds, (_id, index) =>
    users.updateOne({ _id }, { $setOnInsert: { userKey: `id:user-${index}` }, $set: { email: `user-${index}@example.test` }, $min: { firstSeen: new Date() }, $max: { lastSeen: new Date() }, $inc: { eventCount: 1 } }, { upsert: true }),
  );
  const began = performance.now();
  for (let start = 0; start < DOCS; start += 500) await users.insertMany(ids(Math.min(500, DOCS - start)).map((_id, index) => ({ _id, userKey: `id:other-${start + index}`, eventCount: 1 })));
  const insert = (performance.now() - began) / DOCS;
  await users.drop();
  return { byHours: rows, endUserUpsertMs: round(upsert), insertManyMsPerDocument: round(insert) };
}

/**
 * Stores FLUSHES + 1 flushes, each built by `next` before its clock starts, and answers the mean
 * milliseconds of all but the first: the first creates what later ones update, so it is timed apart.
 */
async function meanFlushMs<T>(next: () => T, store: (flush: T) => Promise<unknown>): Promise<number> {
  let total = 0;
  for (let flush = 0; flush <= FLUSHES; flush++) {
    const input = next();
    const began = performance.now();
    await store(input);
    if (flush > 0) total += performance.now() - began;
  }
  return total / FLUSHES;
}

async function flushes(fingerprints: number, users: number) {
  const orgId = new Types.ObjectId().toHexString();
  const projectId = new Types.ObjectId().toHexString();
  let n = 0;
  const item = () => {
    n += 1;
    const event = { ...errorEvent({ user: { id: `user-${n % users}`, email: `user-${n % users}@example.test` } }, { value: `kind ${n % fingerprints}` }), fingerprint: [`kind-${n % fingerprints}`] };
    return { orgId, projectId, record: { eventId: randomBytes(16).toString('hex'), timeMs: Date.now(), event } };
  };
  const msPerFlush = await meanFlushMs(
    () => Array.from({ length: FLUSH }, () => ({ batchId: randomBytes(8).toString('hex'), items: [item()] })),
    (batches) => storeErrorBatches(batches),
  );
  // the end users those flushes saw, as a workers process writes them every few seconds
  const usersBegan = performance.now();
  const usersWritten = await writeEndUsers();
  const usersMs = Math.round(performance.now() - usersBegan);
  // distinct issues and users a flush of FLUSH events touches, events spread evenly (n mod k)
  return { fingerprints, users, distinctIssues: Math.min(fingerprints, FLUSH), distinctUsers: Math.min(users, FLUSH), msPerFlush: Math.round(msPerFlush), eventsPerSecond: Math.round((FLUSH * 1000) / msPerFlush), usersWritten, usersMs };
}

/** Flushes of SPAN_FLUSH spans in new traces, as the workers store an OTLP backlog: milliseconds per flush and spans per second. */
async function spanFlushes() {
  const orgId = new Types.ObjectId().toHexString();
  const projectId = new Types.ObjectId().toHexString();
  let n = 0;
  const flushOf = () =>
    Array.from({ length: Math.ceil(SPAN_FLUSH / SPANS_PER_REQUEST) }, () =>
      decodeTraces(otlpRequest({ baseUrl: '', projectNumber: 0, publicKey: '' }, n++).body, 'protobuf').spans.map((record) => ({ orgId, projectId, record })),
    ).flat();
  const msPerFlush = await meanFlushMs(flushOf, ingestSpans);
  return { spans: SPAN_FLUSH, msPerFlush: Math.round(msPerFlush), spansPerSecond: Math.round((SPAN_FLUSH * 1000) / msPerFlush) };
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

try {
  const sizes = await bySize();
  console.log(`\none update by _id (${DOCS} documents, ${PARALLEL_WRITES} at a time), by the issue's hours of counts:`);
  console.log('| hourly keys | update ms | read ms |\n|---|---|---|');
  for (const row of sizes.byHours) console.log(`| ${row.hours} | ${row.updateMs} | ${row.readMs} |`);
  console.log(`small end-user upsert: ${sizes.endUserUpsertMs} ms; insertMany: ${sizes.insertManyMsPerDocument} ms per document`);

  const cases = [];
  for (const [fingerprints, users] of [
    [1, 1],
    [FINGERPRINTS, 1],
    [1, USERS],
    [FINGERPRINTS, USERS],
  ] as const) {
    cases.push(await flushes(fingerprints, users));
  }
  const base = cases[0]!;
  console.log(`\nflushes of ${FLUSH} single-event batches (storeErrorBatches, mean of ${FLUSHES} after the first):`);
  console.log('| issues | end users | ms per flush | events/s | ms per distinct issue beyond the first | then the end users written |\n|---|---|---|---|---|---|');
  for (const row of cases) {
    const extra = row.distinctIssues - 1;
    console.log(`| ${row.fingerprints} | ${row.users} | ${row.msPerFlush} | ${row.eventsPerSecond} | ${extra ? round((row.msPerFlush - base.msPerFlush) / extra) : '—'} | ${row.usersWritten} in ${row.usersMs} ms |`);
  }
  const spans = await spanFlushes();
  console.log(`\nflushes of ${spans.spans} spans in new traces of five (ingestSpans, mean of ${FLUSHES} after the first): ${spans.msPerFlush} ms per flush, ${spans.spansPerSecond} spans/s`);
  console.log(`\nfigures in ${writeResults('writes', { at: new Date().toISOString(), parallelWrites: PARALLEL_WRITES, ...sizes, flushes: cases, spanFlushes: spans })}`);
} finally {
  redis.disconnect();
  await store.drop();
}
