import type { Payments } from '../../shared/clients/payments.js';
import { AppError } from '../../shared/errors.js';
import { checkoutBody, checkoutJson, idempotencyKeyHeader } from '../../shared/features/billing/schemas.js';
import { startCheckout } from '../../shared/features/billing/service.js';
import type { ApiDeps } from '../deps.js';
import { defineRoute } from '../routing.js';

/** Registered only when PAYMENT_API_KEY is set; otherwise the route does not exist (404). */
export const checkoutRoutes = (deps: Pick<ApiDeps, 'config'>, payments: Payments) => {
  const priceId = deps.config.PAYMENT_PRICE_ID;
  // refused at boot rather than on the first purchase: with a key but no price there is nothing to sell
  if (!priceId) throw new Error('PAYMENT_API_KEY is set but PAYMENT_PRICE_ID is not: checkout has no price to sell');
  return [
    defineRoute({
      method: 'post',
      path: '/v1/checkout',
      tag: 'Billing',
      summary:
        'Start a purchase of the configured price: returns the hosted checkout page. Send an `Idempotency-Key` header (else the `X-Request-Id` is used) so that a retry returns the same session.',
      access: 'admin',
      body: checkoutBody,
      status: 201,
      response: checkoutJson,
      handler: ({ principal, body, req }) => {
        const header = idempotencyKeyHeader.safeParse(req.get('idempotency-key'));
        if (!header.success) {
          throw new AppError('validation_failed', 'the Idempotency-Key header is malformed', {
            details: [{ path: 'header.idempotency-key', message: header.error.issues[0]?.message ?? 'invalid' }],
          });
        }
        return startCheckout(principal, body, {
          payments,
          priceId,
          dashboardOrigin: deps.config.DASHBOARD_ORIGIN,
          retryKey: header.data ?? req.requestId,
          ip: req.ip,
        });
      },
    }),
  ];
};
