import { isIP } from 'node:net';
import { Resolver } from 'node:dns/promises';
import type { Config } from '../config.js';

/** TXT lookups for SSO domain verification, through DNS_RESOLVER when set, else the system resolver. */
export interface DnsClient {
  /** The TXT records at `name`, each record's strings joined; a name without any: an empty list. */
  txt(name: string): Promise<string[]>;
}

/** The lookup itself failed (timeout, refused, server failure): not an answer either way. */
export class DnsLookupError extends Error {}

/** "The name has no such record" answers, as opposed to failures to get an answer. */
const NO_RECORD = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

export function createDnsClient(config: Pick<Config, 'DNS_RESOLVER'>): DnsClient {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (config.DNS_RESOLVER) {
    const host = config.DNS_RESOLVER.slice(0, config.DNS_RESOLVER.lastIndexOf(':'));
    // c-ares takes addresses only; a host name here would fail at every lookup instead of at boot
    if (!isIP(host)) throw new Error(`DNS_RESOLVER must be an IP address and port, not ${config.DNS_RESOLVER}`);
    resolver.setServers([config.DNS_RESOLVER]);
  }
  return {
    async txt(name) {
      try {
        const records = await resolver.resolveTxt(name);
        return records.map((chunks) => chunks.join(''));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? '';
        if (NO_RECORD.has(code)) return [];
        throw new DnsLookupError(`the DNS lookup of ${name} failed (${code || 'unknown error'})`, { cause: error });
      }
    },
  };
}
