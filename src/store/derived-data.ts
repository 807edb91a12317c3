import type { Db } from './db.js';
import { wrapStoreError } from './db.js';
import { InListQuery } from './in-list.js';

/**
 * One stored entry: the encoded derived data of the text whose content key is `key` (a
 * non-negative integer below 2^53, bound as an SQLite INTEGER: no Buffer per key).
 */
export interface DerivedDataRow {
  readonly key: number;
  readonly data: Uint8Array;
}

/** Rows kept by default (about 100–300 MiB of messages' term stats and fingerprints). */
export const DERIVED_DATA_MAX_ROWS = 300_000;

/**
 * Per-message derived data (term statistics, fingerprints) keyed by a content key and the
 * version of the derivation that made it, so a cold plan after a restart reads what the last
 * run computed. A row of another version is never returned (the caller recomputes and
 * overwrites it). Bounded: once more than `maxRows` were written, the oldest written go. The
 * caller keys, encodes and checks that a row is of its text; this module only stores.
 */
export class DerivedData {
  private readonly selectMany: InListQuery;
  private readonly upsertMany;
  private readonly prune;
  private writtenSincePrune = 0;

  constructor(
    db: Db,
    private readonly maxRows = DERIVED_DATA_MAX_ROWS,
  ) {
    this.selectMany = new InListQuery(db, (list) => `SELECT hash, data FROM derived_data WHERE version = ? AND hash IN (${list})`);
    const upsert = db.prepare(`INSERT OR REPLACE INTO derived_data (hash, version, data) VALUES (?, ?, ?)`);
    this.prune = db.prepare(`DELETE FROM derived_data WHERE id <= (SELECT max(id) FROM derived_data) - ?`);
    this.upsertMany = db.transaction((version: number, rows: readonly DerivedDataRow[]) => {
      for (const r of rows) upsert.run(r.key, version, r.data);
    });
  }

  /** The stored data of many keys under `version` (absent ones missing). */
  getMany(version: number, keys: readonly number[]): Map<number, Buffer> {
    const out = new Map<number, Buffer>();
    try {
      for (const [key, data] of this.selectMany.all([version], keys) as [number, Buffer][]) out.set(key, data);
    } catch (err) {
      throw wrapStoreError(err, 'cannot read cached derived data');
    }
    return out;
  }

  /** Store rows in one transaction (a row of the same key is replaced), then drop the oldest past the bound. */
  putMany(version: number, rows: readonly DerivedDataRow[]): void {
    if (rows.length === 0) return;
    try {
      this.upsertMany(version, rows);
      // Rows are replaced with a new id, so ids grow with every write: the newest maxRows ids
      // are kept. Checked every tenth of the bound, not at every write.
      this.writtenSincePrune += rows.length;
      if (this.writtenSincePrune * 10 >= this.maxRows) {
        this.writtenSincePrune = 0;
        this.prune.run(this.maxRows);
      }
    } catch (err) {
      throw wrapStoreError(err, 'cannot store derived data');
    }
  }
}
