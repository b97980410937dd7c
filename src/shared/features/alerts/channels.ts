import { createHmac } from 'node:crypto';
import { MailBudgetExceeded, type Mailer } from '../../clients/mailer.js';
import type { Outbound } from '../../clients/outbound.js';
import type { SecretBox } from '../../clients/secret-box.js';
import { escapeHtml } from '../../html.js';
import { confirmedAmong } from '../recipients/service.js';
import type { AlertEvent } from './model.js';
import type { DestinationDoc } from './model.js';

/** What leaves the machine: the clients each destination type needs (email is off without a mailer). */
export interface Channels {
  mailer: Mailer | undefined;
  outbound: Outbound;
  /** Opens the sealed URLs and secrets of destinations, only to deliver. */
  secrets: SecretBox;
}

/** A delivery that trying again will not help (no confirmed address, the mail budget used up): recorded as failed at once. */
export class NotDeliverable extends Error {}

/** The destination's URL and signing secret in plaintext: sealed ones opened, ones saved before sealing as stored. */
const openedTarget = (destination: DestinationDoc, secrets: SecretBox) => ({
  url: destination.urlSealed ? secrets.open(destination.urlSealed) : destination.url!,
  secret: destination.secretSealed ? secrets.open(destination.secretSealed) : destination.secret,
});

export interface AlertMessage {
  subject: string;
  text: string;
  html: string;
  /** The webhook body. */
  payload: Record<string, unknown>;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;

const signatureOf = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** What a message is about: an alert event, or a test a person asked for ("Send a test"). */
export type MessageEvent = AlertEvent | 'test';

const VERBS: Record<MessageEvent, string> = { opened: 'Alert', resolved: 'Resolved', test: 'Test' };

/** The mail and chat rendering of one alert event. */
export function renderAlert(alert: { kind: string; title: string; status: string; details: Record<string, unknown>; openedAt: Date; resolvedAt: Date | null }, event: MessageEvent, payload: Record<string, unknown>): AlertMessage {
  const verb = VERBS[event];
  const subject = `[Sluice] ${verb}: ${alert.title}`;
  const facts = Object.entries(alert.details).map(([key, value]) => `${key}: ${String(value)}`);
  const when = event === 'resolved' ? `Resolved ${alert.resolvedAt?.toISOString() ?? ''}` : `${event === 'test' ? 'Sent' : 'Opened'} ${alert.openedAt.toISOString()}`;
  const lines = [`${verb}: ${alert.title}`, `Kind: ${alert.kind}`, when, ...facts];
  const html = `<h2>${escapeHtml(`${verb}: ${alert.title}`)}</h2><ul>${lines.slice(1).map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>`;
  return { subject, text: `${lines.join('\n')}\n`, html, payload };
}

/** A webhook or Slack receiver answered, but not with a 2xx. */
export class ReceiverRefused extends Error {
  constructor(
    readonly httpStatus: number,
    host: string,
  ) {
    super(`${host} answered ${httpStatus}`);
  }
}

/** What a sent message reached: the receiver's HTTP status (webhook, Slack) or the addresses mailed (email). */
export interface Receipt {
  httpStatus: number | null;
  recipients: string[];
}

async function postJson(channels: Channels, url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<Receipt> {
  const response = await channels.outbound.request({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'Sluice-Alerts/1', ...headers },
    body,
    timeoutMs,
    maxBodyBytes: 4096,
  });
  if (response.status < 200 || response.status >= 300) throw new ReceiverRefused(response.status, new URL(url).host);
  return { httpStatus: response.status, recipients: [] };
}

/**
 * Sends one alert event to one destination; throws with a reason the delivery record shows. A test sent
 * while a person waits passes a shorter `timeoutMs`, so its answer comes before the request's deadline.
 */
export async function sendToDestination(destination: DestinationDoc, message: AlertMessage, channels: Channels, timeoutMs = WEBHOOK_TIMEOUT_MS): Promise<Receipt> {
  switch (destination.type) {
    case 'email': {
      if (!channels.mailer) throw new Error('email is off: SMTP_URL is not set');
      // an address nobody confirmed gets nothing but its confirmation mail
      const to = await confirmedAmong(destination.orgId, destination.emails);
      if (to.length === 0) throw new NotDeliverable('not sent: no address of this destination is confirmed yet');
      try {
        await channels.mailer.send({ orgId: destination.orgId.toHexString(), to, subject: message.subject, text: message.text, html: message.html });
      } catch (error) {
        throw error instanceof MailBudgetExceeded ? new NotDeliverable(error.message) : error;
      }
      return { httpStatus: null, recipients: to };
    }
    case 'webhook': {
      const { url, secret } = openedTarget(destination, channels.secrets);
      const body = JSON.stringify(message.payload);
      return postJson(channels, url, body, secret ? { 'x-sluice-signature': signatureOf(secret, body) } : {}, timeoutMs);
    }
    case 'slack':
      // Slack's incoming-webhook payload: `text` is the notification, mrkdwn allowed.
      return postJson(channels, openedTarget(destination, channels.secrets).url, JSON.stringify({ text: message.text.trim() }), {}, timeoutMs);
  }
}
