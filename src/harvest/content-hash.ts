/**
 * A transcript's identity for harvesting: a hash chain over what its normalized messages say,
 * so the same content harvested twice — the same file again, or a copy under another path or
 * name, or an export of it under new message and tool call ids — is recognized, and so is a
 * transcript that grew since it was harvested (an earlier harvest's hash is one of the chain's
 * prefix hashes).
 *
 * Hashes stored before this scheme (databases of version 6, whose hashes covered the
 * messages' ids and offsets too) never equal a new one: those sessions are still found by
 * their session id, and a copy of one is recognized from its next harvest on.
 */
import { createHash } from 'node:crypto';
import { messageContentKey, type Message } from '../model/messages.js';

/**
 * `chain[k]` is the hash of the first k+1 messages: sha256(chain[k-1] ‖ content key of
 * message k), hex, 32 chars. The last entry identifies the whole transcript. Empty for no
 * messages. Ids, timestamps and source offsets are not part of it (model/messages.ts
 * messageContentKey).
 */
export function contentHashChain(messages: readonly Message[]): string[] {
  const chain: string[] = [];
  let prev = '';
  for (const m of messages) {
    prev = createHash('sha256').update(prev).update('\0').update(messageContentKey(m)).digest('hex').slice(0, 32);
    chain.push(prev);
  }
  return chain;
}
