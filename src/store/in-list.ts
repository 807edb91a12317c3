import type { Db } from './db.js';
import type { Statement } from 'better-sqlite3';

/** Keys per `IN (...)` query (well under SQLite's bound-parameter limit). */
const MANY_CHUNK = 500;
/**
 * Sizes of the `IN (...)` lists prepared: a chunk is padded to the smallest that fits, so an
 * appended line's batch of one or two keys binds a few, not MANY_CHUNK.
 */
const LIST_SIZES = [1, 8, 64, MANY_CHUNK] as const;

/**
 * A `SELECT … WHERE <fixed> AND key IN (…)` run over any number of keys: one prepared statement
 * per LIST_SIZES entry (built when first needed), one query per MANY_CHUNK keys, each short
 * chunk padded by repeating its first key. Rows come back raw (arrays of column values).
 */
export class InListQuery {
  private readonly prepared = new Map<number, Statement>();

  /** `sql(list)` is the query with `list` (a `?, ?, …` string) in its `IN (...)`. */
  constructor(
    private readonly db: Db,
    private readonly sql: (list: string) => string,
  ) {}

  /** Every row whose key is among `keys`; `fixed` binds the parameters before the list. */
  all<K>(fixed: readonly unknown[], keys: readonly K[]): unknown[][] {
    const out: unknown[][] = [];
    for (let i = 0; i < keys.length; i += MANY_CHUNK) {
      const chunk: K[] = keys.slice(i, i + MANY_CHUNK);
      const size = LIST_SIZES.find((n) => n >= chunk.length) ?? MANY_CHUNK;
      while (chunk.length < size) chunk.push(chunk[0] as K);
      for (const row of this.statement(size).all(...fixed, ...chunk) as unknown[][]) out.push(row);
    }
    return out;
  }

  private statement(size: number): Statement {
    let st = this.prepared.get(size);
    if (!st) {
      st = this.db.prepare(this.sql(new Array<string>(size).fill('?').join(','))).raw();
      this.prepared.set(size, st);
    }
    return st;
  }
}
