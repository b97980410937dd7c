import { lookup as dnsLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { TLSSocket } from 'node:tls';

/**
 * The one door for HTTP requests to addresses users type (uptime probes, webhooks, Slack): refuses
 * private, loopback, link-local and metadata addresses, resolves hostnames itself and connects to exactly
 * the address it checked (no DNS rebinding between check and connect), and re-checks every redirect.
 */

type Family = 'ipv4' | 'ipv6';

function ranges(type: Family, rows: [string, number, string][]): { list: BlockList; reason: string }[] {
  return rows.map(([network, prefix, reason]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, type);
    return { list, reason };
  });
}

// First match names the reason, so the narrow metadata and broadcast entries come before their wider ranges.
const V4 = ranges('ipv4', [
  ['169.254.169.254', 32, 'cloud metadata'],
  ['255.255.255.255', 32, 'broadcast'],
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private network'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private network'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private network'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
]);
const V6 = ranges('ipv6', [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fd00:ec2::254', 128, 'cloud metadata'],
  ['fe80::', 10, 'link-local'],
  ['fc00::', 7, 'private network'],
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'reserved'],
  ['100::', 64, 'reserved'],
]);
// Every public IPv6 address is in 2000::/3; anything else not named above is unassigned or special-purpose.
const [GLOBAL_UNICAST] = ranges('ipv6', [['2000::', 3, '']]);

/** Eight 16-bit words of a valid IPv6 literal, `::` expanded and a trailing dotted quad folded in. */
function ipv6Words(address: string): number[] {
  const text = address.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a: string, b: string, c: string, d: string) =>
    `${(Number(a) * 256 + Number(b)).toString(16)}:${(Number(c) * 256 + Number(d)).toString(16)}`);
  const [head = '', tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((word) => parseInt(word, 16));
}

/** The IPv4 address an IPv6 one stands for (mapped, compatible, NAT64, 6to4): that is where packets end up. */
function embeddedIpv4(address: string): string | undefined {
  const w = ipv6Words(address);
  const at = (i: number) => w[i] ?? 0;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => w.slice(from, to).every((word) => word === 0);
  if (zero(0, 5) && (at(5) === 0xffff || at(5) === 0)) return v4(at(6), at(7));
  // NAT64 well-known 64:ff9b::/96 and local-use 64:ff9b:1::/48, read with the /96 layout DNS64 synthesizes.
  if (at(0) === 0x64 && at(1) === 0xff9b && (zero(2, 6) || at(2) === 1)) return v4(at(6), at(7));
  if (at(0) === 0x2002) return v4(at(1), at(2));
  return undefined;
}

/** Parses OUTBOUND_ALLOWLIST-style text: comma-separated IPv4/IPv6 addresses and CIDR ranges. */
export function parseAllowlist(text: string | undefined): BlockList {
  const list = new BlockList();
  for (const entry of (text ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = Number(prefix);
    const badPrefix = prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && bits <= (family === 4 ? 32 : 128));
    if (!family || extra !== undefined || badPrefix || address.includes('%')) {
      throw new Error(`outbound allowlist entry "${entry}" is not an IPv4/IPv6 address or CIDR range (e.g. 10.0.0.0/8, fd00::/8)`);
    }
    const type: Family = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, bits, type);
  }
  return list;
}

/** Why an IP literal may not be reached, or undefined when it may. Addresses in `allow` always may. */
export function forbiddenAddressReason(address: string, allow: BlockList): string | undefined {
  // A zone id (`fe80::1%eth0`) from the resolver only names the interface; the address decides.
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'not an IP address';
  if (family === 4) return allow.check(bare, 'ipv4') ? undefined : V4.find((r) => r.list.check(bare, 'ipv4'))?.reason;
  if (allow.check(bare, 'ipv6')) return undefined;
  const named = V6.find((r) => r.list.check(bare, 'ipv6'))?.reason;
  if (named) return named;
  const v4 = embeddedIpv4(bare);
  if (v4) return forbiddenAddressReason(v4, allow);
  return GLOBAL_UNICAST!.list.check(bare, 'ipv6') ? undefined : 'reserved';
}

/** `URL.parse` arrives in Node 22. */
function parseUrl(text: string, base?: string): URL | undefined {
  try {
    return new URL(text, base);
  } catch {
    return undefined;
  }
}

/** Why a URL a user typed may not be used, or undefined when it is fine. No DNS: request() does that. */
export function urlProblem(url: string, allow: BlockList): string | undefined {
  const parsed = parseUrl(url);
  if (!parsed) return 'not a valid URL';
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `scheme ${parsed.protocol.slice(0, -1)} is not allowed (only http and https)`;
  if (parsed.username || parsed.password) return 'credentials in the URL are not allowed';
  // WHATWG parsing has already turned 2130706433, 0x7f.1, 017700000001 and 127.1 into 127.0.0.1.
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const reason = forbiddenAddressReason(host, allow);
    return reason && `address ${host} is not allowed (${reason})`;
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    const allowed = allow.check('127.0.0.1', 'ipv4') || allow.check('::1', 'ipv6');
    return allowed ? undefined : `host ${name} is not allowed (loopback)`;
  }
  if (name === 'metadata.google.internal') return `host ${name} is not allowed (cloud metadata)`;
  return undefined;
}

export class OutboundError extends Error {
  override name = 'OutboundError';
}

export interface OutboundRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The whole request: every hop, redirects and the body read. */
  timeoutMs: number;
  /** 0 (default): redirect answers are returned as they are. */
  maxRedirects?: number;
  verifyTls?: boolean;
  /** Default 1 MiB; the rest of a longer body is discarded, not an error. */
  maxBodyBytes?: number;
}
export interface OutboundResponse {
  status: number;
  /** Lower-case names, last value wins. */
  headers: Record<string, string>;
  body: string;
  latencyMs: number;
  url: string;
  /** https only: whole days until the peer certificate's valid_to (floor, may be negative); null for http. */
  tlsDaysLeft: number | null;
  tlsValidTo: Date | null;
}
export interface Outbound {
  urlProblem(url: string): string | undefined;
  /** Rejects with OutboundError for every failure. */
  request(input: OutboundRequest): Promise<OutboundResponse>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const DAY_MS = 86_400_000;
const TLS_PROBLEMS: Record<string, string> = {
  CERT_HAS_EXPIRED: 'certificate has expired',
  CERT_NOT_YET_VALID: 'certificate is not yet valid',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'certificate chain ends in an untrusted self-signed certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificate chain could not be verified',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'certificate issuer is unknown',
  ERR_TLS_CERT_ALTNAME_INVALID: 'certificate does not match the host name',
};

function describe(error: NodeJS.ErrnoException, host: string): string {
  const code = error.code ?? '';
  if (TLS_PROBLEMS[code]) return TLS_PROBLEMS[code];
  if (code === 'ECONNREFUSED') return `connection refused by ${host}`;
  if (code === 'ECONNRESET') return `connection reset by ${host}`;
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${host} is unreachable`;
  if (code === 'EPROTO' || code.startsWith('ERR_SSL_')) return `TLS handshake with ${host} failed`;
  return `request to ${host} failed: ${error.message}`;
}

/** Resolves, refuses the whole answer if any address is forbidden, and hands the socket only checked addresses. */
function guardedLookup(allow: BlockList, refuse: (error: OutboundError) => OutboundError): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { all: true, family: options.family ?? 0, hints: options.hints ?? 0 }, (error, addresses) => {
      if (error || addresses.length === 0) return callback(refuse(new OutboundError(`DNS lookup failed for ${hostname}`)), []);
      for (const { address } of addresses) {
        const reason = forbiddenAddressReason(address, allow);
        if (reason) return callback(refuse(new OutboundError(`address ${address} (${hostname}) is not allowed (${reason})`)), []);
      }
      // Node 20's autoSelectFamily asks for every address; plain connects ask for one.
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

interface Hop { status: number; headers: Record<string, string>; body: Buffer; validTo: Date | null }
interface HopOptions { method: string; headers: Record<string, string>; body: string | Buffer | undefined; verifyTls: boolean; maxBodyBytes: number; signal: AbortSignal; timeoutMs: number }

function sendOnce(url: URL, allow: BlockList, o: HopOptions): Promise<Hop> {
  return new Promise((resolve, reject) => {
    const secure = url.protocol === 'https:';
    const host = url.hostname.replace(/^\[|\]$/g, '');
    let refusal: OutboundError | undefined;
    let settled = false;
    const settle = (error: OutboundError | undefined, hop?: Hop) => {
      if (settled) return;
      settled = true;
      o.signal.removeEventListener('abort', onAbort);
      req.destroy();
      if (error) reject(error);
      else resolve(hop!);
    };
    const onAbort = () => settle(new OutboundError(`timed out after ${o.timeoutMs} ms`));
    const req = (secure ? https : http).request({
      protocol: url.protocol, hostname: host, port: url.port || undefined, path: `${url.pathname}${url.search}`,
      method: o.method, headers: o.headers, agent: false,
      // IP literals never reach the lookup (Node connects directly); urlProblem has judged them.
      lookup: guardedLookup(allow, (error) => (refusal = error)),
      ...(secure ? { rejectUnauthorized: o.verifyTls, ...(isIP(host) ? {} : { servername: host }) } : {}),
    }, (res) => {
      const cert = secure ? (res.socket as TLSSocket).getPeerCertificate() : undefined;
      const validTo = cert?.valid_to ? new Date(cert.valid_to) : null;
      const headers: Record<string, string> = {};
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) headers[res.rawHeaders[i]!.toLowerCase()] = res.rawHeaders[i + 1]!;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => settle(undefined, { status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks), validTo });
      res.on('data', (chunk: Buffer) => {
        const kept = chunk.subarray(0, o.maxBodyBytes - size);
        chunks.push(kept);
        size += kept.length;
        if (size >= o.maxBodyBytes) finish();
      });
      res.on('end', finish);
      res.on('error', (error) => settle(new OutboundError(describe(error, host))));
      res.on('close', () => settle(new OutboundError(`connection to ${host} closed before the response was complete`)));
    });
    req.on('error', (error) => settle(refusal ?? (error instanceof OutboundError ? error : new OutboundError(describe(error, host)))));
    if (o.signal.aborted) return onAbort();
    o.signal.addEventListener('abort', onAbort);
    req.end(o.body);
  });
}

const without = (headers: Record<string, string>, names: RegExp) => Object.fromEntries(Object.entries(headers).filter(([name]) => !names.test(name)));

export function createOutbound(options: { allowlist: BlockList; now?: () => Date }): Outbound {
  const allow = options.allowlist;
  const now = options.now ?? (() => new Date());

  async function request(input: OutboundRequest): Promise<OutboundResponse> {
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), input.timeoutMs);
    const maxRedirects = input.maxRedirects ?? 0;
    let url = input.url;
    let method = (input.method ?? 'GET').toUpperCase();
    let body = input.body;
    let headers = { ...input.headers };
    try {
      for (let hop = 0; ; hop++) {
        const problem = urlProblem(url, allow);
        if (problem) throw new OutboundError(hop === 0 ? problem : `redirect to ${url} refused: ${problem}`);
        const answer = await sendOnce(new URL(url), allow, {
          method, headers, body, verifyTls: input.verifyTls ?? true, maxBodyBytes: input.maxBodyBytes ?? 1024 * 1024,
          signal: controller.signal, timeoutMs: input.timeoutMs,
        });
        const location = REDIRECTS.has(answer.status) ? answer.headers.location : undefined;
        if (location === undefined || maxRedirects === 0) {
          const validTo = answer.validTo;
          return {
            status: answer.status, headers: answer.headers, body: answer.body.toString('utf8'),
            latencyMs: Math.round(performance.now() - started), url,
            tlsDaysLeft: validTo ? Math.floor((validTo.getTime() - now().getTime()) / DAY_MS) : null, tlsValidTo: validTo,
          };
        }
        if (hop >= maxRedirects) throw new OutboundError(`too many redirects (max ${maxRedirects})`);
        const next = parseUrl(location, url);
        if (!next) throw new OutboundError(`redirect to an invalid URL: ${location}`);
        // Credentials meant for one origin must not follow a redirect to another (as fetch does).
        if (next.origin !== new URL(url).origin) headers = without(headers, /^(authorization|cookie|proxy-authorization)$/i);
        if (answer.status === 303 || ((answer.status === 301 || answer.status === 302) && method === 'POST')) {
          [method, body, headers] = ['GET', undefined, without(headers, /^content-/i)];
        }
        url = next.href;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  return { urlProblem: (url) => urlProblem(url, allow), request };
}
