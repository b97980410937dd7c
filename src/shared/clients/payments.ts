import type { Config } from '../config.js';

const TIMEOUT_MS = 10_000;

/** What a checkout session is opened with; the provider's form fields are built here alone. */
export interface CheckoutSessionInput {
  priceId: string;
  quantity: number;
  organizationId: string;
  customerEmail: string;
  successUrl: string;
  cancelUrl: string;
  /** Sent as `Idempotency-Key`: the provider answers a repeat with the session it already made. */
  idempotencyKey: string;
}

export interface CheckoutSession {
  id: string;
  url: string;
}

/** The provider turned the request down (a 4xx), in its own words. */
export class PaymentRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The provider could not be reached, timed out, failed (5xx) or answered something that is not its API. */
export class PaymentUnavailable extends Error {}

export interface Payments {
  createCheckoutSession(input: CheckoutSessionInput): Promise<CheckoutSession>;
}

/**
 * A Stripe-compatible payment API (`PAYMENT_API_URL`, key `PAYMENT_API_KEY`): the only place Sluice
 * talks to the payment provider. Only created when the key is set.
 */
export function createPayments(config: Pick<Config, 'PAYMENT_API_KEY' | 'PAYMENT_API_URL'>): Payments {
  const key = config.PAYMENT_API_KEY;
  if (!key) throw new Error('createPayments needs PAYMENT_API_KEY');
  const base = config.PAYMENT_API_URL.replace(/\/+$/, '');
  return {
    async createCheckoutSession(input) {
      const form = new URLSearchParams({
        mode: 'subscription',
        'line_items[0][price]': input.priceId,
        'line_items[0][quantity]': String(input.quantity),
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        client_reference_id: input.organizationId,
        customer_email: input.customerEmail,
        'metadata[organization_id]': input.organizationId,
      });
      let response: Response;
      try {
        response = await fetch(`${base}/v1/checkout/sessions`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
            'idempotency-key': input.idempotencyKey,
            'user-agent': 'Sluice',
          },
          body: form.toString(),
          redirect: 'error',
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (error) {
        const timedOut = (error as Error).name === 'TimeoutError';
        throw new PaymentUnavailable(timedOut ? `the payment provider did not answer within ${TIMEOUT_MS / 1000} s` : 'the payment provider could not be reached', { cause: error });
      }
      let body: unknown;
      try {
        body = await response.json();
      } catch {
        body = undefined;
      }
      const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
      if (response.status >= 400 && response.status < 500) {
        // Stripe's error shape: {error: {message, type, code?, param?}}
        const error = fields.error as { message?: unknown } | undefined;
        const message = typeof error?.message === 'string' ? error.message.slice(0, 500) : `status ${response.status}`;
        throw new PaymentRefusal(response.status, message);
      }
      if (!response.ok) throw new PaymentUnavailable(`the payment provider failed (status ${response.status})`);
      if (typeof fields.id !== 'string' || typeof fields.url !== 'string') throw new PaymentUnavailable('the payment provider did not answer with a checkout session');
      return { id: fields.id, url: fields.url };
    },
  };
}
