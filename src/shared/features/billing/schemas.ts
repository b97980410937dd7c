import { z } from 'zod';

/**
 * A checkout sells `PAYMENT_PRICE_ID`, the one price Sluice is configured with, so there is no plan to
 * choose: only how many units of it (seats, or blocks of the plan, as the price defines).
 */
export const checkoutBody = z
  .object({
    quantity: z.number().int().min(1).max(10_000).default(1),
  })
  .strict();

/** A client's `Idempotency-Key` header: what makes a retried checkout answer with the same session. */
export const idempotencyKeyHeader = z
  .string()
  .regex(/^[\x21-\x7e]{1,200}$/, '1 to 200 visible ASCII characters')
  .optional();

export const checkoutJson = z.object({
  /** The provider's checkout session id. */
  id: z.string(),
  /** The hosted page to send the admin to. */
  url: z.string(),
});
