import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the payment server received, as it received it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  form: URLSearchParams;
}

export interface PaymentServer {
  url: string;
  key: string;
  requests: ReceivedRequest[];
  /** The next checkout is refused with this status and message, as Stripe words a refusal. */
  refuseNext(status: number, message: string): void;
  close(): Promise<void>;
}

/**
 * A local stand-in for a Stripe-compatible API: `POST /v1/checkout/sessions` with a form body and a
 * bearer key. Like Stripe, a repeated Idempotency-Key replays the first answer, and the same key with
 * other parameters is refused.
 */
export async function startPaymentServer(key = `sk_test_${randomBytes(8).toString('hex')}`): Promise<PaymentServer> {
  const requests: ReceivedRequest[] = [];
  const byIdempotencyKey = new Map<string, { body: string; answer: { status: number; json: unknown } }>();
  let refusal: { status: number; message: string } | undefined;

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const form = new URLSearchParams(body);
    requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, form });
    const answer = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    const error = (status: number, type: string, message: string) => answer(status, { error: { type, message } });

    if (req.method !== 'POST' || req.url !== '/v1/checkout/sessions') return error(404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${req.url})`);
    if (req.headers.authorization !== `Bearer ${key}`) return error(401, 'invalid_request_error', 'Invalid API Key provided');
    if (!req.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) return error(400, 'invalid_request_error', 'Invalid request: expected a form body');
    const idempotencyKey = req.headers['idempotency-key'];
    if (typeof idempotencyKey !== 'string' || idempotencyKey.length === 0 || idempotencyKey.length > 255) return error(400, 'invalid_request_error', 'this stand-in requires an Idempotency-Key');
    const seen = byIdempotencyKey.get(idempotencyKey);
    if (seen) {
      if (seen.body !== body) return error(400, 'idempotency_error', 'Keys for idempotent requests can only be used with the same parameters they were first used with.');
      return answer(seen.answer.status, seen.answer.json);
    }
    if (refusal) {
      const { status, message } = refusal;
      refusal = undefined;
      return error(status, 'invalid_request_error', message);
    }
    for (const field of ['mode', 'line_items[0][price]', 'success_url', 'cancel_url']) {
      if (!form.get(field)) return error(400, 'invalid_request_error', `Missing required param: ${field}.`);
    }
    const id = `cs_test_${randomBytes(12).toString('hex')}`;
    const json = { id, object: 'checkout.session', url: `https://checkout.example/c/pay/${id}`, mode: form.get('mode'), client_reference_id: form.get('client_reference_id') };
    byIdempotencyKey.set(idempotencyKey, { body, answer: { status: 200, json } });
    answer(200, json);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    key,
    requests,
    refuseNext: (status, message) => {
      refusal = { status, message };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
