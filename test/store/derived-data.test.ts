import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DerivedData, MIGRATIONS, migrate, openDb, type Db } from '../../src/store/index.js';

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
    // A row written under another version sits beside the first: each version reads its own.
    store.putMany(2, [{ key: hash(0), data: data(1000) }]);
    expect([...(store.getMany(1, [hash(0)]).get(hash(0)) ?? [])]).toEqual([...data(0)]);
    expect([...(store.getMany(2, [hash(0)]).get(hash(0)) ?? [])]).toEqual([...data(1000)]);
    db.close();
    const again = openDb(path);
    dbs.push(again);
    expect(new DerivedData(again).getMany(1, [hash(5), hash(599)]).size).toBe(2);
  });

  it('keeps two versions\' rows of one text apart (two builds sharing a state folder), and a start deletes the other versions\' rows, bounded per call', () => {
    const { db, path } = open();
    const a = new DerivedData(db);
    // Build A (version 1) and build B (version 2) write the same texts in turn.
    a.putMany(1, Array.from({ length: 50 }, (_, i) => ({ key: hash(i), data: data(i) })));
    const idsAfterA = db.prepare('SELECT max(id) FROM derived_data').pluck().get() as number;
    a.putMany(2, Array.from({ length: 50 }, (_, i) => ({ key: hash(i), data: data(i + 500) })));
    // B's rows did not replace A's (which would give them new ids the size bound prunes by).
    expect(db.prepare('SELECT max(id) FROM derived_data WHERE version = 1').pluck().get()).toBe(idsAfterA);
    const keys = Array.from({ length: 50 }, (_, i) => hash(i));
    expect(a.getMany(1, keys).size).toBe(50);
    expect(a.getMany(2, keys).size).toBe(50);
    expect([...(a.getMany(1, [hash(7)]).get(hash(7)) ?? [])]).toEqual([...data(7)]);
    db.close();
    // B starts again: it deletes the other version's rows, at most `limit` per call.
    const again = openDb(path);
    dbs.push(again);
    const b = new DerivedData(again);
    expect(b.deleteOtherVersions(2, 30)).toBe(30);
    expect(b.deleteOtherVersions(2, 30)).toBe(20);
    expect(b.deleteOtherVersions(2, 30)).toBe(0);
    expect(b.getMany(1, keys).size).toBe(0);
    expect(b.getMany(2, keys).size).toBe(50);
  });

  it('a state file of migration 7 (rows unique by hash) keeps its rows, with their ids, when migrated', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-derived-'));
    dirs.push(dir);
    const path = join(dir, 'c.db');
    const v7 = new Database(path);
    migrate(v7, MIGRATIONS.filter((m) => m.version <= 7));
    new DerivedData(v7).putMany(1, Array.from({ length: 20 }, (_, i) => ({ key: hash(i), data: data(i) })));
    const ids = v7.prepare('SELECT id FROM derived_data ORDER BY id').pluck().all();
    v7.close();
    const db = openDb(path);
    dbs.push(db);
    expect(db.prepare('SELECT id FROM derived_data ORDER BY id').pluck().all()).toEqual(ids);
    const store = new DerivedData(db);
    expect(store.getMany(1, Array.from({ length: 20 }, (_, i) => hash(i))).size).toBe(20);
    store.putMany(2, [{ key: hash(3), data: data(3) }]);
    expect(store.getMany(1, [hash(3)]).size).toBe(1);
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
