import { Schema, model } from 'mongoose';
import { rollupSchema } from '../../telemetry/rollups.js';

/**
 * Requests per endpoint (service, method, route) per minute, with the shares of client errors that
 * signal abuse. Deliberately holds no caller identity: no address, user, key or token, hashed or
 * not; only counts per endpoint.
 */
const endpointRollupSchema = rollupSchema({
  service: { type: String, required: true },
  method: { type: String, default: null },
  route: { type: String, required: true },
  count: { type: Number, default: 0 },
  /** Answers with a status of 500 or more, or spans marked as errors. */
  failed: { type: Number, default: 0 },
  /** Answers per status class and per status of interest. */
  status4xx: { type: Number, default: 0 },
  status401: { type: Number, default: 0 },
  status403: { type: Number, default: 0 },
  status429: { type: Number, default: 0 },
  latency: { type: Schema.Types.Mixed, default: {} },
});

export const EndpointRollup = model('EndpointRollup', endpointRollupSchema, 'endpoint_rollups');
