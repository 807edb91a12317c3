import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DerivedData, openDb, type Db } from '../../src/store/index.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Distinct keys near the top of the 53-bit range (read back exactly, not rounded). */
const hash = (i: number): number => 2 ** 53 - 1 - i * 0x9e3779b1;
const data = (i: number): Uint8Array => Uint8Array.from([i & 0xff, (i >> 8) & 0xff, 7]);

function open(): { db: Db; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-derived-'));
  dirs.push(dir);
  const path = join(dir, 'c.db');
  const db = openDb(path);
  dbs.push(db);
  return { db, path };
}

describe('derived data store', () => {
  it('returns rows of the asked version only, across batch sizes, and survives reopening the file', () => {
    const { db, path } = open();
    const store = new DerivedData(db);
    store.putMany(1, Array.from({ length: 600 }, (_, i) => ({ key: hash(i), data: data(i) })));
    for (const n of [1, 9, 65, 600]) {
      const got = store.getMany(1, Array.from({ length: n }, (_, i) => hash(i)));
      expect(got.size).toBe(n);
      expect([...(got.get(hash(n - 1)) ?? [])]).toEqual([...data(n - 1)]);
    }
    expect(store.getMany(2, [hash(0), hash(1)]).size).toBe(0);
    // A row written under a new version replaces the old one.
    store.putMany(2, [{ key: hash(0), data: data(1000) }]);
    expect(store.getMany(1, [hash(0)]).size).toBe(0);
    expect([...(store.getMany(2, [hash(0)]).get(hash(0)) ?? [])]).toEqual([...data(1000)]);
    db.close();
    const again = openDb(path);
    dbs.push(again);
    expect(new DerivedData(again).getMany(1, [hash(5), hash(599)]).size).toBe(2);
  });

  it('stays bounded: past maxRows the oldest written are dropped, the newest kept', () => {
    const { db } = open();
    const store = new DerivedData(db, 100);
    for (let b = 0; b < 10; b++) store.putMany(1, Array.from({ length: 30 }, (_, k) => ({ key: hash(b * 30 + k), data: data(b * 30 + k) })));
    const rows = db.prepare('SELECT COUNT(*) FROM derived_data').pluck().get() as number;
    expect(rows).toBeLessThanOrEqual(100);
    expect(rows).toBeGreaterThan(50);
    const all = store.getMany(1, Array.from({ length: 300 }, (_, i) => hash(i)));
    expect(all.has(hash(299))).toBe(true);
    expect(all.has(hash(0))).toBe(false);
  });
});
