import nodemailer from 'nodemailer';
import type { Config } from '../config.js';

export interface Mail {
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** Alert and digest email, through the SMTP server at SMTP_URL. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  /** Opens a connection and says hello: readiness. */
  ping(): Promise<void>;
  close(): void;
}

/** Undefined when SMTP_URL is unset: email is off. */
export function createMailer(config: Config): Mailer | undefined {
  if (!config.SMTP_URL) return undefined;
  const transport = nodemailer.createTransport(config.SMTP_URL);
  return {
    async send(mail) {
      await transport.sendMail({ from: config.MAIL_FROM, ...mail });
    },
    async ping() {
      await transport.verify();
    },
    close: () => transport.close(),
  };
}
