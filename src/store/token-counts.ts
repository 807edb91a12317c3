import type { Db } from './db.js';
import { wrapStoreError } from './db.js';
import { InListQuery } from './in-list.js';

/** One stored entry: the token counts of the texts of one message whose content hash is `hash`. */
export interface TokenCountRow {
  readonly encoding: string;
  readonly hash: Buffer;
  readonly counts: readonly number[];
}

function encode(counts: readonly number[]): Buffer {
  const b = Buffer.allocUnsafe(counts.length * 4);
  counts.forEach((n, i) => b.writeUInt32LE(n, i * 4));
  return b;
}

function decode(b: Buffer): number[] {
  const out: number[] = new Array<number>(b.length >>> 2);
  for (let i = 0; i < out.length; i++) out[i] = b.readUInt32LE(i * 4);
  return out;
}

/**
 * Token counts keyed by (encoding, content hash), so a restart or a re-read transcript costs a
 * lookup instead of a tokenizer pass. The caller hashes; this module only stores.
 */
export class TokenCounts {
  private readonly select;
  private readonly insert;
  private readonly insertMany;

  private readonly selectMany: InListQuery;

  constructor(db: Db) {
    this.select = db.prepare(`SELECT counts FROM token_counts WHERE encoding = ? AND hash = ?`).pluck();
    this.selectMany = new InListQuery(db, (list) => `SELECT hash, counts FROM token_counts WHERE encoding = ? AND hash IN (${list})`);
    this.insert = db.prepare(`INSERT OR IGNORE INTO token_counts (encoding, hash, counts) VALUES (?, ?, ?)`);
    this.insertMany = db.transaction((rows: readonly TokenCountRow[]) => {
      for (const r of rows) this.insert.run(r.encoding, r.hash, encode(r.counts));
    });
  }

  /** The stored counts, or undefined. */
  get(encoding: string, hash: Buffer): number[] | undefined {
    try {
      const b = this.select.get(encoding, hash) as Buffer | undefined;
      return b ? decode(b) : undefined;
    } catch (err) {
      throw wrapStoreError(err, 'cannot read cached token counts');
    }
  }

  /**
   * The stored counts of many hashes, keyed by the hash's bytes as a latin1 string (absent
   * ones missing): one query per few hundred hashes instead of one per hash (see InListQuery).
   */
  getMany(encoding: string, hashes: readonly Buffer[]): Map<string, number[]> {
    const out = new Map<string, number[]>();
    try {
      for (const [hash, counts] of this.selectMany.all([encoding], hashes) as [Buffer, Buffer][]) out.set(hash.toString('latin1'), decode(counts));
    } catch (err) {
      throw wrapStoreError(err, 'cannot read cached token counts');
    }
    return out;
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
