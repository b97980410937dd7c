import { spawn } from 'node:child_process';
import mongoose from 'mongoose';
import type { ErrorEventRecord, RecordBatch } from '../../src/shared/telemetry/records.js';

/**
 * Stores error event batches in a workers process of their own (test/support/place-and-exit.ts), on
 * the test's database: it exits before counting them, as one killed at that moment would, or with
 * `counted`, once they are counted, so that the test's own process knows nothing of their issues.
 */
export async function placeInAnotherWorker(batches: RecordBatch<ErrorEventRecord>[], { counted = false } = {}): Promise<void> {
  const url = process.env.TEST_MONGO_URL!.replace(/\/[^/]*$/, `/${mongoose.connection.name}`);
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/place-and-exit.ts'], {
    env: { ...process.env, MONGO_URL: url, ...(counted && { PLACE_AND_COUNT: '1' }) },
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  child.stdin.end(JSON.stringify(batches));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the other worker exited with ${String(code)}`);
}
