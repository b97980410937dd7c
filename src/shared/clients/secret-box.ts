import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';

/** Seals credentials kept at rest (AES-256-GCM): `v1.<iv>.<tag>.<ciphertext>`, base64url. */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

const VERSION = 'v1';

function keyOf(config: Config): Buffer {
  if (config.ENCRYPTION_KEY) return Buffer.from(config.ENCRYPTION_KEY, /^[0-9a-fA-F]{64}$/.test(config.ENCRYPTION_KEY) ? 'hex' : 'base64');
  // The embedded default: one key per data directory, made on first use, readable by its owner only.
  const file = join(config.DATA_DIR, 'encryption.key');
  if (!existsSync(file)) {
    mkdirSync(config.DATA_DIR, { recursive: true });
    // Written whole under a private name, then linked into place: two processes starting on a new
    // DATA_DIR at once neither crash on the other's file (EEXIST) nor read it half written.
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(draft, randomBytes(32).toString('hex'), { flag: 'wx', mode: 0o600 });
    chmodSync(draft, 0o600);
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(draft);
    }
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

export function createSecretBox(config: Config): SecretBox {
  const key = keyOf(config);
  if (key.length !== 32) throw new Error('the encryption key must be 32 bytes');
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), sealed.toString('base64url')].join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
