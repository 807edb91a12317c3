import type { Db } from './db.js';
import { wrapStoreError } from './db.js';
import type { Statement } from 'better-sqlite3';

/** One stored entry: the token counts of the texts of one message whose content hash is `hash`. */
export interface TokenCountRow {
  readonly encoding: string;
  readonly hash: Buffer;
  readonly counts: readonly number[];
}

/** Hashes per `IN (...)` query of `getMany` (well under SQLite's bound-parameter limit). */
const MANY_CHUNK = 500;
/**
 * Sizes of the `IN (...)` lists `getMany` prepares: a chunk is padded to the smallest that fits,
 * so an appended line's batch of one or two messages binds a few hashes, not MANY_CHUNK.
 */
const LIST_SIZES = [1, 8, 64, MANY_CHUNK] as const;

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

  /** One prepared `IN (...)` query per LIST_SIZES entry, built when first needed. */
  private readonly selectMany = new Map<number, Statement>();

  constructor(private readonly db: Db) {
    this.select = db.prepare(`SELECT counts FROM token_counts WHERE encoding = ? AND hash = ?`).pluck();
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
   * ones missing): one query per `MANY_CHUNK` hashes instead of one per hash.
   */
  getMany(encoding: string, hashes: readonly Buffer[]): Map<string, number[]> {
    const out = new Map<string, number[]>();
    try {
      for (let i = 0; i < hashes.length; i += MANY_CHUNK) {
        const chunk = hashes.slice(i, i + MANY_CHUNK);
        const size = LIST_SIZES.find((n) => n >= chunk.length) ?? MANY_CHUNK;
        // A short chunk repeats its first hash up to a prepared size.
        while (chunk.length < size) chunk.push(chunk[0] as Buffer);
        for (const [hash, counts] of this.selectOf(size).all(encoding, ...chunk) as [Buffer, Buffer][]) out.set(hash.toString('latin1'), decode(counts));
      }
    } catch (err) {
      throw wrapStoreError(err, 'cannot read cached token counts');
    }
    return out;
  }

  private selectOf(size: number): Statement {
    let st = this.selectMany.get(size);
    if (!st) {
      st = this.db.prepare(`SELECT hash, counts FROM token_counts WHERE encoding = ? AND hash IN (${new Array<string>(size).fill('?').join(',')})`).raw();
      this.selectMany.set(size, st);
    }
    return st;
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
