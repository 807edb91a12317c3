/**
 * SHA-1 in hex, with node:crypto loaded on first use: a module that hashes only on its write
 * paths (the template store) then costs nothing to load on a read path — loading node:crypto
 * is ~7 ms of CPU, which `contextd hook` would pay on every daemon-down bootstrap from the store.
 */
import { createRequire } from 'node:module';

let crypto: typeof import('node:crypto') | undefined;

/** Hex SHA-1 of `text` (UTF-8). */
export function sha1Hex(text: string): string {
  crypto ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  return crypto.createHash('sha1').update(text).digest('hex');
}
