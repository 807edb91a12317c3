import { createHash } from 'node:crypto';
import type { TokenCountCache } from '../model/tokens.js';
import type { TokenCounts, TokenCountRow } from '../store/index.js';
import { describeError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { WriteBehind } from './write-behind.js';

/** SHA-1 of the texts, each followed by a NUL (so ['ab', 'c'] and ['a', 'bc'] differ). */
export function contentHash(texts: readonly string[]): Buffer {
  const h = createHash('sha1');
  for (const t of texts) h.update(t, 'utf8').update('\u0000');
  return h.digest();
}

/**
 * The daemon's token-count cache: SHA-1 of a message's texts → their counts, in SQLite
 * (store/token-counts).
 * New counts are buffered and written in one transaction per turn of the event loop, so a
 * first scan of many transcripts costs one write per batch, not one per message. A store
 * failure is logged and the count is simply recomputed next time: nothing depends on the cache.
 */
/** The key of counts waiting to be written (one spelling for get, getMany and set). */
function pendingKey(encoding: string, hash: Buffer): string {
  return `${encoding}\u0000${hash.toString('base64')}`;
}

export class SqliteTokenCountCache implements TokenCountCache {
  private readonly pending: WriteBehind<TokenCountRow>;
  private readonly log: Logger;

  constructor(
    private readonly store: TokenCounts,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'token-cache' });
    this.pending = new WriteBehind((rows) => store.putMany(rows), this.log, 'token counts not cached; they will be counted again after a restart');
  }

  get(encoding: string, texts: readonly string[]): readonly number[] | undefined {
    const hash = contentHash(texts);
    const waiting = this.pending.get(pendingKey(encoding, hash));
    if (waiting) return waiting.counts;
    try {
      return this.store.get(encoding, hash);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'token count cache unreadable; counting instead');
      return undefined;
    }
  }

  getMany(encoding: string, textsList: readonly (readonly string[])[]): (readonly number[] | undefined)[] {
    const hashes = textsList.map(contentHash);
    // (a restart's batches find nothing pending: no key strings made for them)
    const out: (readonly number[] | undefined)[] = this.pending.size === 0 ? new Array<undefined>(hashes.length).fill(undefined) : hashes.map((h) => this.pending.get(pendingKey(encoding, h))?.counts);
    const missing = hashes.filter((_, i) => out[i] === undefined);
    if (missing.length === 0) return out;
    let stored: Map<string, number[]>;
    try {
      stored = this.store.getMany(encoding, missing);
    } catch (err) {
      this.log.warn({ err: describeError(err) }, 'token count cache unreadable; counting instead');
      return out;
    }
    return out.map((c, i) => c ?? stored.get((hashes[i] as Buffer).toString('latin1')));
  }

  set(encoding: string, texts: readonly string[], counts: readonly number[]): void {
    const hash = contentHash(texts);
    this.pending.add(pendingKey(encoding, hash), { encoding, hash, counts: [...counts] });
  }

  /** Write what is pending now (also called on close). */
  flush(): void {
    this.pending.flush();
  }

  /** Flush and stop caching (before the database closes). */
  close(): void {
    this.pending.close();
  }
}
