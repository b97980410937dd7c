import { simpleParser } from 'mailparser';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { Client } from './http.js';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** A real SMTP server on loopback that keeps every message it accepts, parsed. */
export interface MailCatcher {
  url: string;
  mails: ReceivedMail[];
  /** Resolves once `count` mails (in all) match, or rejects after the timeout. */
  waitFor(count: number, match?: (mail: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startMailCatcher(): Promise<MailCatcher> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      simpleParser(stream)
        .then((parsed) => {
          mails.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            subject: parsed.subject ?? '',
            text: parsed.text ?? '',
            html: typeof parsed.html === 'string' ? parsed.html : '',
          });
          done();
        })
        .catch(done);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async waitFor(count, match = () => true, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = mails.filter(match);
        if (found.length >= count) return found;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} mail(s); got ${found.length}: ${mails.map((m) => m.subject).join(' | ')}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The subject of the mail that asks an alert or digest address to confirm itself. */
export const CONFIRMATION_SUBJECT = 'Confirm your address for Sluice alerts';
export const isConfirmation = (mail: ReceivedMail) => mail.subject === CONFIRMATION_SUBJECT;

/** Uses each address's confirmation link, as its owner would through the dashboard page (no sign-in). */
export async function confirmAddresses(catcher: MailCatcher, api: Client, ...addresses: string[]): Promise<void> {
  for (const address of addresses) {
    const [mail] = await catcher.waitFor(1, (m) => m.to.includes(address) && isConfirmation(m));
    const token = /\/confirm-email\/([0-9A-Za-z]+)/.exec(mail!.text)![1]!;
    const reply = await api.post(`/v1/email-confirmations/${token}`);
    if (reply.status !== 200) throw new Error(`confirming ${address} failed: ${reply.status} ${reply.text}`);
  }
}
