import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TokenCounts, openDb, type Db } from '../../src/store/index.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function hash(i: number): Buffer {
  return createHash('sha1').update(`message ${i}`).digest();
}

describe('token counts', () => {
  it('getMany answers every batch size alike: one stored hash in three found, across each prepared list size and chunk', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-tokcounts-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'c.db'));
    dbs.push(db);
    const store = new TokenCounts(db);
    store.putMany(Array.from({ length: 1_100 }, (_, i) => i).filter((i) => i % 3 === 0).map((i) => ({ encoding: 'o200k_base', hash: hash(i), counts: [i, 1] })));
    // Sizes at and around each prepared IN-list size (1, 8, 64, 500) and past one chunk.
    for (const n of [1, 2, 7, 8, 9, 63, 64, 65, 499, 500, 501, 1_100]) {
      const hashes = Array.from({ length: n }, (_, i) => hash(i));
      const got = store.getMany('o200k_base', hashes);
      expect(got.size).toBe(Math.ceil(n / 3));
      hashes.forEach((h, i) => expect(got.get(h.toString('latin1'))).toEqual(i % 3 === 0 ? [i, 1] : undefined));
      // Another encoding shares nothing.
      expect(store.getMany('cl100k_base', hashes).size).toBe(0);
    }
    expect(store.getMany('o200k_base', []).size).toBe(0);
  });
});
