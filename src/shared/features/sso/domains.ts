/**
 * Email domains: normalising a typed domain, and the public mail providers no organisation may claim
 * (anyone can get an address there, so a claim would hand their users to one organisation's provider).
 */

const PUBLIC_MAIL_DOMAINS = new Set([
  'gmail.com', 'googlemail.com', 'outlook.com', 'hotmail.com', 'hotmail.co.uk', 'hotmail.fr', 'live.com', 'live.co.uk', 'msn.com',
  'yahoo.com', 'yahoo.co.uk', 'yahoo.co.jp', 'yahoo.fr', 'yahoo.de', 'ymail.com', 'rocketmail.com', 'icloud.com', 'me.com', 'mac.com',
  'aol.com', 'aim.com', 'proton.me', 'protonmail.com', 'protonmail.ch', 'pm.me', 'tutanota.com', 'tuta.io', 'tutamail.com',
  'fastmail.com', 'fastmail.fm', 'hey.com', 'zoho.com', 'zohomail.com', 'mail.com', 'email.com', 'usa.com', 'inbox.com',
  'mail.ru', 'bk.ru', 'inbox.ru', 'list.ru', 'rambler.ru', 'ya.ru', 'qq.com', 'foxmail.com', '163.com', '126.com', 'yeah.net',
  'sina.com', 'sohu.com', 'aliyun.com', 'naver.com', 'daum.net', 'hanmail.net', 'web.de', 't-online.de', 'freenet.de',
  'orange.fr', 'free.fr', 'laposte.net', 'sfr.fr', 'libero.it', 'virgilio.it', 'seznam.cz', 'wp.pl', 'o2.pl', 'interia.pl',
  'onet.pl', 'rediffmail.com', 'btinternet.com', 'comcast.net', 'verizon.net', 'att.net', 'sbcglobal.net', 'cox.net',
  'bigpond.com', 'shaw.ca', 'rogers.com', 'uol.com.br', 'bol.com.br', 'terra.com.br', 'mailinator.com', 'guerrillamail.com',
]);

/** Providers present under many country domains: gmx.net, gmx.de, yandex.ru, yandex.com… */
const PUBLIC_MAIL_FAMILIES = ['gmx', 'yandex', 'yahoo', 'hotmail', 'outlook', 'live'];

export function isPublicMailDomain(domain: string): boolean {
  if (PUBLIC_MAIL_DOMAINS.has(domain)) return true;
  const [first, ...rest] = domain.split('.');
  // `gmx.de`, `yandex.com.tr`: the family name followed by a public suffix of one or two labels
  return PUBLIC_MAIL_FAMILIES.includes(first ?? '') && rest.length >= 1 && rest.length <= 2 && rest.every((label) => label.length <= 3);
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A domain as typed (any case, a trailing dot) in its stored form, or undefined when it is not a domain name. */
export function normalizeDomain(input: string): string | undefined {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  if (domain.length > 253) return undefined;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return undefined;
  // the last label is a TLD: letters (or an IDN's xn-- form), never all digits (an IP address)
  if (/^\d+$/.test(labels[labels.length - 1]!)) return undefined;
  return domain;
}

/** The domain of an email address, lower-cased. */
export const domainOfEmail = (email: string) => email.slice(email.lastIndexOf('@') + 1).toLowerCase();

/** The TXT record name that proves a domain. */
export const verificationRecordName = (domain: string) => `_sluice-verification.${domain}`;
export const verificationRecordValue = (token: string) => `sluice-verification=${token}`;
