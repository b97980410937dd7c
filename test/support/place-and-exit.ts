/**
 * A workers process that dies right after storing error events and before counting them, as one
 * killed at that moment would: connects to MONGO_URL, stores the batches it reads as JSON on stdin
 * the way the telemetry processor does, and exits without waiting for their count; with
 * PLACE_AND_COUNT=1 it exits once they are counted (see another-worker.ts).
 */
import { text } from 'node:stream/consumers';
import { connectMongo } from '../../src/shared/clients/mongo.js';
import { placeErrorBatches } from '../../src/shared/features/issues/store.js';
import { createLogger } from '../../src/shared/logger.js';

const batches = JSON.parse(await text(process.stdin));
await connectMongo(process.env.MONGO_URL!, createLogger('silent'));
const { counted } = await placeErrorBatches(batches);
if (process.env.PLACE_AND_COUNT === '1') await counted;
process.exit(0);
