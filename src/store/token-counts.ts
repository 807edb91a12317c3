import type { Db } from './db.js';
import { wrapStoreError } from './db.js';

/** One stored count: the tokens of the text whose content hash is `hash`, under `encoding`. */
export interface TokenCountRow {
  readonly encoding: string;
  readonly hash: Buffer;
  readonly tokens: number;
}

/**
 * Token counts keyed by (encoding, content hash), so a restart or a re-read transcript costs a
 * lookup instead of a tokenizer pass. The caller hashes; this module only stores.
 */
export class TokenCounts {
  private readonly select;
  private readonly insert;
  private readonly insertMany;

  constructor(db: Db) {
    this.select = db.prepare(`SELECT tokens FROM token_counts WHERE encoding = ? AND hash = ?`).pluck();
    this.insert = db.prepare(`INSERT OR IGNORE INTO token_counts (encoding, hash, tokens) VALUES (?, ?, ?)`);
    this.insertMany = db.transaction((rows: readonly TokenCountRow[]) => {
      for (const r of rows) this.insert.run(r.encoding, r.hash, r.tokens);
    });
  }

  /** The stored count, or undefined. */
  get(encoding: string, hash: Buffer): number | undefined {
    try {
      return this.select.get(encoding, hash) as number | undefined;
    } catch (err) {
      throw wrapStoreError(err, 'cannot read a cached token count');
    }
  }

  /** Store counts in one transaction (an existing row is kept: counts are deterministic). */
  putMany(rows: readonly TokenCountRow[]): void {
    if (rows.length === 0) return;
    try {
      this.insertMany(rows);
    } catch (err) {
      throw wrapStoreError(err, 'cannot store token counts');
    }
  }
}
