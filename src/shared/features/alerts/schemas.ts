import { z } from 'zod';
import { pageQuery } from '../../paging.js';
import { viewQuery } from '../../views.js';
import { addressJson } from '../recipients/schemas.js';
import { alertEvents, alertKinds, deliveryStatuses, destinationTypes } from './model.js';

export const alertsQuery = z.object({
  ...viewQuery,
  ...pageQuery,
  kind: z.enum(alertKinds).optional(),
  status: z.enum(['open', 'resolved']).optional(),
});

export const deliveryJson = z.object({
  destination_id: z.string(),
  event: z.enum(alertEvents),
  status: z.enum(deliveryStatuses),
  attempts: z.number(),
  last_error: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
});

export const alertJson = z.object({
  id: z.string(),
  kind: z.enum(alertKinds),
  status: z.enum(['open', 'resolved']),
  project_id: z.string().nullable(),
  subject: z.object({ type: z.string(), id: z.string() }),
  title: z.string(),
  /** The figures behind the alert: reason, status code, score, deadline… */
  details: z.record(z.string(), z.unknown()),
  opened_at: z.string(),
  resolved_at: z.string().nullable(),
  deliveries: z.array(deliveryJson),
});

const filters = {
  name: z.string().trim().min(1).max(200).optional(),
  /** Only alerts of these kinds; absent or empty: every kind. */
  kinds: z.array(z.enum(alertKinds)).max(alertKinds.length).optional(),
  /** Only alerts of these projects; absent or empty: every project. */
  project_ids: z.array(z.string()).max(100).optional(),
};

export const createDestinationBody = z.discriminatedUnion('type', [
  z.object({ type: z.literal('email'), emails: z.array(z.email()).min(1).max(50), ...filters }).strict(),
  z
    .object({
      type: z.literal('webhook'),
      url: z.url().max(2048),
      secret: z.string().min(8).max(256).optional(),
      /** Have the server make the signing secret; the creation answer shows it, once. Not with `secret`. */
      generate_secret: z.boolean().optional(),
      ...filters,
    })
    .strict()
    .refine((body) => !(body.generate_secret && body.secret !== undefined), { path: ['generate_secret'], message: 'give a secret or ask for one to be generated, not both' }),
  z.object({ type: z.literal('slack'), url: z.url().max(2048), ...filters }).strict(),
]);

export const destinationJson = z.object({
  id: z.string(),
  type: z.enum(destinationTypes),
  name: z.string().nullable(),
  emails: z.array(z.string()).optional(),
  /** Email: each address and whether its owner confirmed it; alerts go to confirmed addresses only. */
  addresses: z.array(addressJson).optional(),
  /**
   * Webhook and Slack: the scheme and host, the path and query masked (`https://hooks.example.com/…`,
   * plus the last four characters of a long path): a Slack URL, and often a webhook's, is itself a credential.
   */
  url: z.string().optional(),
  /** Webhook: whether bodies are signed; the secret is never answered. */
  secret_set: z.boolean().optional(),
  kinds: z.array(z.enum(alertKinds)),
  project_ids: z.array(z.string()),
  created_at: z.string(),
});

/** The answer to a creation: as listed, plus a generated signing secret, shown this once. */
export const createdDestinationJson = destinationJson.extend({
  /** Webhook created with `generate_secret`: the signing secret, answered only here. */
  secret: z.string().optional(),
});

/** What happened when a test alert was sent to a destination. */
export const testOutcomeJson = z.object({
  destination_id: z.string(),
  /** `delivered`: the receiver answered 2xx, or the mail server took the mail; `failed`: see `error`. */
  status: z.enum(['delivered', 'failed']),
  /** Webhook and Slack: the receiver's HTTP status, when it answered at all. */
  http_status: z.number().nullable(),
  /** Why it failed, in the words a real delivery's `last_error` uses; null when delivered. */
  error: z.string().nullable(),
  /** Email: the confirmed addresses the test was mailed to. */
  recipients: z.array(z.string()),
  attempted_at: z.string(),
  duration_ms: z.number(),
});
