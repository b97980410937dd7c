// A small application using the stock @sentry/node SDK, run as its own process so the SDK sees a
// normal Node runtime. It reports what it sent as one JSON line on stdout.
import * as Sentry from '@sentry/node';

const scenario = process.argv[2];
Sentry.init({
  dsn: process.env.SENTRY_DSN,
  release: 'shop@2.4.1',
  environment: 'staging',
  tracesSampleRate: 1.0,
  enableLogs: true,
});

/** Reported from one code path, as applications do: Sentry groups captureMessage events by their stack. */
function reportProviderTimeout(ms, orderId) {
  return Sentry.captureMessage(`Payment provider timed out after ${ms} ms for order ${orderId}`);
}

function failInCheckout(orderId) {
  const order = undefined;
  return order.total + orderId;
}

const sent = {};
switch (scenario) {
  case 'errors': {
    try {
      failInCheckout(1);
    } catch (error) {
      sent.exception = Sentry.captureException(error);
    }
    [sent.message, sent.sameMessageOtherNumbers] = [[3000, 1234], [4500, 98765]].map(([ms, order]) => reportProviderTimeout(ms, order));
    Sentry.withScope((scope) => {
      scope.setFingerprint(['payment-gateway-down']);
      sent.fingerprintA = Sentry.captureException(new Error('gateway 502'));
      sent.fingerprintB = Sentry.captureException(new RangeError('completely different'));
    });
    Sentry.withScope((scope) => {
      scope.setUser({ id: 'user-42', email: 'ada@example.com', username: 'ada' });
      sent.withUser = Sentry.captureException(new SyntaxError('bad coupon code'));
    });
    break;
  }
  case 'telemetry': {
    sent.checkIn = Sentry.captureCheckIn(
      { monitorSlug: 'nightly-report', status: 'ok', duration: 12.5 },
      { schedule: { type: 'crontab', value: '30 2 * * *' }, checkinMargin: 5, maxRuntime: 10, timezone: 'Europe/Berlin' },
    );
    await Sentry.startSpan({ name: 'GET /cart', op: 'http.server' }, async () => {
      await Sentry.startSpan({ name: 'SELECT * FROM carts WHERE id = ?', op: 'db', attributes: { 'db.system': 'postgresql' } }, async () => new Promise((r) => setTimeout(r, 5)));
      Sentry.logger.info(Sentry.logger.fmt`cart ${'c-77'} loaded with ${3} items`);
      Sentry.logger.warn('inventory low for sku-9');
    });
    Sentry.metrics.count('cart.loaded', 1);
    // Sentry's queue instrumentation: a publish span, and a process span stating how long the message waited
    await Sentry.startSpan({ name: 'orders publish', op: 'queue.publish', attributes: { 'messaging.destination.name': 'orders', 'messaging.system': 'bullmq' } }, () => undefined);
    await Sentry.startSpan(
      { name: 'orders process', op: 'queue.process', forceTransaction: true, attributes: { 'messaging.destination.name': 'orders', 'messaging.system': 'bullmq', 'messaging.message.receive.latency': 250 } },
      () => undefined,
    );
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
await Sentry.flush(10_000);
process.stdout.write(`${JSON.stringify(sent)}\n`);
