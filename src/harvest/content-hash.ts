/**
 * A transcript's identity for harvesting: a hash chain over its normalized messages, so the
 * same content harvested twice — the same file again, or a copy under another path or name —
 * is recognized, and so is a transcript that grew since it was harvested (an earlier harvest's
 * hash is one of the chain's prefix hashes).
 */
import { createHash } from 'node:crypto';
import type { Message } from '../model/messages.js';

/**
 * `chain[k]` is the hash of the first k+1 messages: sha256(chain[k-1] ‖ JSON of message k),
 * hex, 32 chars. The last entry identifies the whole transcript. Empty for no messages.
 */
export function contentHashChain(messages: readonly Message[]): string[] {
  const chain: string[] = [];
  let prev = '';
  for (const m of messages) {
    prev = createHash('sha256').update(prev).update('\0').update(JSON.stringify(m)).digest('hex').slice(0, 32);
    chain.push(prev);
  }
  return chain;
}
