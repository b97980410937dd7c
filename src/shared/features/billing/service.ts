import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { PaymentRefusal, PaymentUnavailable, type Payments } from '../../clients/payments.js';
import { AppError } from '../../errors.js';
import type { MemberPrincipal } from '../../principal.js';
import { User } from '../accounts/model.js';
import { auditAs } from '../audit/service.js';
import type { checkoutBody, checkoutJson } from './schemas.js';

export interface CheckoutOptions {
  payments: Payments;
  priceId: string;
  dashboardOrigin: string;
  /** The client's Idempotency-Key header, else the request id: the same one on a retry gives the same session. */
  retryKey: string;
  ip: string | undefined;
}

/**
 * The key sent to the provider, scoped to the organisation and the caller: a key another organisation
 * happens to send can never return this one's session.
 */
export const providerIdempotencyKey = (principal: MemberPrincipal, retryKey: string) =>
  `sluice-checkout-${createHash('sha256').update(`${principal.orgId.toHexString()}:${principal.userId.toHexString()}:${retryKey}`).digest('hex')}`;

/** Opens a hosted checkout session for the caller's organisation, billed to the caller's email. */
export async function startCheckout(principal: MemberPrincipal, input: z.output<typeof checkoutBody>, options: CheckoutOptions): Promise<z.input<typeof checkoutJson>> {
  const user = await User.findById(principal.userId, { email: 1 }).lean();
  if (!user) throw new AppError('unauthenticated', 'authentication required');
  const organizationId = principal.orgId.toHexString();
  const billingPage = `${options.dashboardOrigin.replace(/\/+$/, '')}/settings/billing`;
  let session;
  try {
    session = await options.payments.createCheckoutSession({
      priceId: options.priceId,
      quantity: input.quantity,
      organizationId,
      customerEmail: user.email,
      // the provider fills in {CHECKOUT_SESSION_ID} itself
      successUrl: `${billingPage}?checkout=success&session_id={CHECKOUT_SESSION_ID}`,
      cancelUrl: `${billingPage}?checkout=cancelled`,
      idempotencyKey: providerIdempotencyKey(principal, options.retryKey),
    });
  } catch (error) {
    if (error instanceof PaymentRefusal && (error.status === 401 || error.status === 403)) {
      // the operator's key, not the caller's request: logged as an internal error
      throw new AppError('internal_error', `the payment provider refused the configured PAYMENT_API_KEY (${error.status})`, { cause: error });
    }
    if (error instanceof PaymentRefusal) {
      throw new AppError('validation_failed', `the payment provider refused the checkout: ${error.message}`, {
        details: [{ path: 'payment_provider', message: error.message }],
        cause: error,
      });
    }
    if (error instanceof PaymentUnavailable) throw new AppError('internal_error', `${error.message}; nothing was charged, try again shortly`, { cause: error });
    throw error;
  }
  await auditAs(principal, options.ip)('checkout.create', { type: 'checkout_session', id: session.id }, { price: options.priceId, quantity: input.quantity });
  return session;
}
