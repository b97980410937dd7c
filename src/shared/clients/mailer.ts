import type { Redis } from 'ioredis';
import nodemailer from 'nodemailer';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import { createLimiter } from '../http/rate-limit.js';

export interface Mail {
  /**
   * The organisation the mail is sent for (alerts, digests, confirmations, invites): it is counted
   * against that organisation's MAIL_PER_ORG_PER_HOUR. Null only for mail no organisation asked for
   * (a password reset of one's own account).
   */
  orgId: string | null;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

/** Thrown instead of sending when the organisation has used up its hourly mail budget. */
export class MailBudgetExceeded extends Error {
  constructor(readonly perHour: number) {
    super(`not sent: this organisation's mail budget of ${perHour} per hour is used up`);
  }
}

/**
 * Every mail the service sends passes here: through the SMTP server at SMTP_URL, and within the
 * budget of the organisation it is sent for, so no registrant can turn the service into a mail cannon.
 */
export interface Mailer {
  /** Sends one mail; throws MailBudgetExceeded (nothing sent) past the organisation's budget. */
  send(mail: Mail): Promise<void>;
  /** Opens a connection and says hello: readiness. */
  ping(): Promise<void>;
  close(): void;
}

/** Undefined when SMTP_URL is unset: email is off. `redis` holds the budget counters every process shares. */
export function createMailer(config: Config, redis: Redis): Mailer | undefined {
  if (!config.SMTP_URL) return undefined;
  const transport = nodemailer.createTransport(config.SMTP_URL);
  const budget = createLimiter(redis, config.REDIS_PREFIX, 'mail-org', config.MAIL_PER_ORG_PER_HOUR, 3600);
  return {
    async send({ orgId, ...mail }) {
      if (orgId !== null) {
        try {
          await budget.consume(orgId);
        } catch (rejection) {
          if (rejection instanceof RateLimiterRes) throw new MailBudgetExceeded(config.MAIL_PER_ORG_PER_HOUR);
          throw rejection;
        }
      }
      await transport.sendMail({ from: config.MAIL_FROM, ...mail });
    },
    async ping() {
      await transport.verify();
    },
    close: () => transport.close(),
  };
}
