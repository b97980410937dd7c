import { z } from 'zod';
import { viewQuery } from '../../views.js';

export const endpointSurgesQuery = z.object({ ...viewQuery, service: z.string().max(256).optional() });

const share = z.object({ count: z.number().int(), observed: z.number(), baseline: z.number() });

export const endpointSurgeJson = z.object({
  service: z.string(),
  method: z.string().nullable(),
  route: z.string(),
  project_ids: z.array(z.string()),
  requests: z.number().int(),
  /** Requests to the endpoint in the previous window of the same length. */
  baseline_requests: z.number().int(),
  /** requests / max(baseline_requests, 1). */
  ratio: z.number(),
  /** Shares of the window's answers (observed) and of the previous window's (baseline). */
  shares: z.object({ '4xx': share, '401': share, '403': share, '429': share }),
  /** Each rule that found a surge, with its figures. */
  reasons: z.array(z.string()),
});

export const endpointSurgesJson = z.object({ from: z.string(), to: z.string(), data: z.array(endpointSurgeJson) });
