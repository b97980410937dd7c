/**
 * What an upgrade does to data stored by an earlier release, run by the workers once at start (in the
 * background). Each step is safe to run twice and by several processes at once; a step that must scan
 * a large collection runs only until it has once completed (recorded in `upgrades`).
 */
import { Schema, model } from 'mongoose';
import type { SecretBox } from '../../clients/secret-box.js';
import { sealStoredDestinations } from '../alerts/service.js';
import { pageUnpagedSpans } from '../traces/store.js';
import { sealStoredHeaders } from '../uptime/service.js';

const upgradeSchema = new Schema({ _id: { type: String, required: true }, doneAt: { type: Date, required: true } });
// read and written by _id only
const Upgrade = model('Upgrade', upgradeSchema, 'upgrades');

async function once(name: string, step: () => Promise<number>): Promise<number> {
  if (await Upgrade.exists({ _id: name })) return 0;
  const changed = await step();
  await Upgrade.updateOne({ _id: name }, { $set: { doneAt: new Date() } }, { upsert: true });
  return changed;
}

/** Runs every upgrade step; answers how many documents each changed. */
export async function upgradeStoredData(secrets: SecretBox): Promise<Record<string, number>> {
  return {
    // credentials saved before they were sealed at rest (small collections: checked at every start)
    destinations_sealed: await sealStoredDestinations(secrets),
    monitors_sealed: await sealStoredHeaders(secrets),
    // spans stored before traces were read a page at a time
    spans_paged: await once('spans-paged', pageUnpagedSpans),
  };
}
