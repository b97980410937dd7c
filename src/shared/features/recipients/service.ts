import type { Types } from 'mongoose';
import type { Mailer } from '../../clients/mailer.js';
import { notFound } from '../../errors.js';
import { randomBase62, sha256 } from '../../secrets.js';
import { contentId } from '../../telemetry/storage.js';
import { Recipient, type RecipientDoc } from './model.js';

/** How long a confirmation link works. */
const CONFIRMATION_TTL_MS = 7 * 86_400_000;

const recipientIdOf = (orgId: Types.ObjectId, email: string) => contentId('recipient', orgId.toHexString(), email);

async function recordsOf(orgId: Types.ObjectId, emails: string[]) {
  const records = await Recipient.find({ _id: { $in: emails.map((email) => recipientIdOf(orgId, email)) } }).lean<RecipientDoc[]>();
  return new Map(records.map((record) => [record.email, record]));
}

/** Each address with whether its owner confirmed it, in the order given. */
export async function addressStates(orgId: Types.ObjectId, emails: string[]): Promise<{ email: string; verified: boolean }[]> {
  const records = await recordsOf(orgId, emails);
  return emails.map((email) => ({ email, verified: !!records.get(email)?.verifiedAt }));
}

/** The addresses among `emails` whose owners confirmed them: the only ones alerts and digests go to. */
export async function confirmedAmong(orgId: Types.ObjectId, emails: string[]): Promise<string[]> {
  const records = await recordsOf(orgId, emails);
  return emails.filter((email) => !!records.get(email)?.verifiedAt);
}

export interface ConfirmationMail {
  mailer: Mailer;
  /** The dashboard's origin: the link opens its /confirm-email/{token} page, which confirms through the API. */
  dashboardOrigin: string;
}

/**
 * Mails a single-use confirmation link to each address of `emails` that is neither confirmed nor has
 * a live link out. The mail carries nothing a registrant typed (no organisation or destination name),
 * so it cannot carry an attacker's message. An address whose mail could not be sent (SMTP down, the
 * organisation's mail budget used up) keeps no link, so saving it again sends a new one.
 */
export async function requestConfirmations(orgId: Types.ObjectId, emails: string[], { mailer, dashboardOrigin }: ConfirmationMail, now = new Date()): Promise<void> {
  const records = await recordsOf(orgId, emails);
  for (const email of emails) {
    const record = records.get(email);
    if (record?.verifiedAt || (record?.tokenExpiresAt && record.tokenExpiresAt > now)) continue;
    const token = randomBase62(32);
    const _id = recipientIdOf(orgId, email);
    const tokenHash = sha256(token);
    await Recipient.updateOne(
      { _id },
      { $set: { tokenHash, tokenExpiresAt: new Date(now.getTime() + CONFIRMATION_TTL_MS) }, $setOnInsert: { orgId, email, verifiedAt: null, createdAt: now } },
      { upsert: true },
    );
    const link = `${dashboardOrigin.replace(/\/+$/, '')}/confirm-email/${token}`;
    const text = [
      'Someone asked Sluice to send alert and report e-mail to this address. Nothing will be sent here unless you confirm it.',
      `To receive that mail, open this link (it works once, for 7 days): ${link}`,
      'If you did not expect this, ignore this mail.',
    ];
    const html = `<p>${text[0]}</p><p><a href="${link}">Confirm this address</a> (the link works once, for 7 days).</p><p>${text[2]}</p>`;
    try {
      await mailer.send({ orgId: orgId.toHexString(), to: [email], subject: 'Confirm your address for Sluice alerts', text: `${text.join('\n\n')}\n`, html });
    } catch {
      await Recipient.updateOne({ _id, tokenHash }, { $set: { tokenHash: null, tokenExpiresAt: null } });
    }
  }
}

/** Uses a confirmation link: once, before it expires. Any other token is not found. */
export async function confirmAddress(token: string, now = new Date()) {
  const confirmed = await Recipient.findOneAndUpdate(
    { tokenHash: sha256(token), tokenExpiresAt: { $gt: now } },
    { $set: { verifiedAt: now, tokenHash: null, tokenExpiresAt: null } },
    { returnDocument: 'after' },
  ).lean<RecipientDoc>();
  if (!confirmed) throw notFound('confirmation link');
  return { email: confirmed.email, verified: true as const };
}
