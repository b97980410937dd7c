import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** scrypt with OWASP's parameters (N = 2^17, r = 8, p = 1); the parameters travel inside the stored hash. */
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  const maxmem = 256 * (options.N ?? 0) * (options.r ?? BLOCK_SIZE);
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEY_LENGTH, { ...options, maxmem }, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashPassword(password: string, cost: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N: 2 ** cost, r: BLOCK_SIZE, p: PARALLELISM });
  return ['scrypt', cost, BLOCK_SIZE, PARALLELISM, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, cost, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !cost || !r || !p || !salt || !expected) return false;
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: 2 ** Number(cost), r: Number(r), p: Number(p) });
  const want = Buffer.from(expected, 'base64');
  return key.length === want.length && timingSafeEqual(key, want);
}

const decoys = new Map<number, Promise<string>>();

/** A hash to verify against when the email is unknown, so that answer takes as long as a wrong password. */
export function decoyHash(cost: number): Promise<string> {
  let decoy = decoys.get(cost);
  if (!decoy) {
    decoy = hashPassword(randomBytes(16).toString('hex'), cost);
    decoys.set(cost, decoy);
  }
  return decoy;
}
