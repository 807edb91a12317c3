import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { DerivedData, openDb, type Db } from '../../src/store/index.js';
import { SqliteDerivedDataCache } from '../../src/daemon/derived-cache.js';
import { DERIVATION_VERSION, SessionModel } from '../../src/model/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { planCompaction, SummaryCache, type Plan } from '../../src/compact/index.js';
import { generateSession } from '../../src/bench/retention.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const counter = createTokenCounter();
const session = generateSession(11, 30);
const silent = pino({ level: 'silent' });
/** A window the session overflows, so the plan has edits to make. */
const budgetTokens = (() => {
  const m = new SessionModel({ sessionId: 'size', tokenCounter: counter });
  m.applyAll(structuredClone(session.events));
  return Math.round(m.tokens() * 0.9);
})();

/** A daemon's run on the state file at `path`: open, build the session, plan, flush, close. */
async function runOn(path: string): Promise<{ plan: Plan; sections: unknown; maxId: number; rows: number }> {
  const db = openDb(path);
  dbs.push(db);
  const cache = new SqliteDerivedDataCache(new DerivedData(db), silent);
  const model = new SessionModel({ sessionId: 'restart', tokenCounter: counter, budgetTokens, derivedCache: cache });
  model.applyAll(structuredClone(session.events));
  const sections = model.sections();
  const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache: new SummaryCache() });
  cache.close();
  const maxId = db.prepare('SELECT max(id) FROM derived_data').pluck().get() as number;
  const rows = db.prepare('SELECT COUNT(*) FROM derived_data').pluck().get() as number;
  db.close();
  return { plan, sections, maxId, rows };
}

/** What must not differ between two plans of the same context (ids and times do). */
const sameness = (p: Plan): unknown => ({ tokensBefore: p.tokensBefore, tokensAfter: p.tokensAfter, edits: p.edits.map((e) => ({ ...e })) });

describe('derived data persisted in SQLite by a 64-bit content key', () => {
  it('a restart reads it back and plans exactly as from scratch; corrupted, old-version and colliding rows are recomputed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-derivedcache-'));
    dirs.push(dir);
    const path = join(dir, 'contextd.db');

    const cold = await runOn(path);
    expect(cold.plan.edits.length).toBeGreaterThan(0);
    expect(cold.rows).toBeGreaterThan(30);

    // Restart: every analysis is read, none recomputed (a recomputed row would be rewritten under a new id).
    const warm = await runOn(path);
    expect(warm.sections).toEqual(cold.sections);
    expect(sameness(warm.plan)).toEqual(sameness(cold.plan));
    expect(warm.maxId).toBe(cold.maxId);
    expect(warm.rows).toBe(cold.rows);

    // Damage some rows, age others to an older derivation: each is recomputed and rewritten, the plan unchanged.
    const db = openDb(path);
    const ids = db.prepare('SELECT id FROM derived_data ORDER BY id').pluck().all() as number[];
    db.prepare('UPDATE derived_data SET data = substr(data, 1, 40) WHERE id = ?').run(ids[0]);
    db.prepare("UPDATE derived_data SET data = CAST(data || x'00' AS BLOB) WHERE id = ?").run(ids[1]);
    db.prepare('UPDATE derived_data SET version = ? WHERE id = ?').run(DERIVATION_VERSION - 1, ids[2]);
    // A key collision: two rows each holding the other text's (intact, checksummed) data. The
    // row's record of its text tells them apart, so both are recomputed, not trusted.
    const dataOf = db.prepare('SELECT data FROM derived_data WHERE id = ?').pluck();
    const [d3, d4] = [dataOf.get(ids[3]), dataOf.get(ids[4])];
    expect(d3).not.toEqual(d4);
    db.prepare('UPDATE derived_data SET data = ? WHERE id = ?').run(d4, ids[3]);
    db.prepare('UPDATE derived_data SET data = ? WHERE id = ?').run(d3, ids[4]);
    db.close();
    const mended = await runOn(path);
    expect(mended.sections).toEqual(cold.sections);
    expect(sameness(mended.plan)).toEqual(sameness(cold.plan));
    expect(mended.maxId).toBe(cold.maxId + 5);
    expect(mended.rows).toBe(cold.rows);

    const check = openDb(path);
    dbs.push(check);
    expect(check.prepare('SELECT COUNT(*) FROM derived_data WHERE version <> ?').pluck().get(DERIVATION_VERSION)).toBe(0);
  });

  it('an unreadable store is logged and the data computed instead', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-derivedcache-'));
    dirs.push(dir);
    const db = openDb(join(dir, 'contextd.db'));
    dbs.push(db);
    const cache = new SqliteDerivedDataCache(new DerivedData(db), silent);
    db.exec('DROP TABLE derived_data');
    const model = new SessionModel({ sessionId: 'broken', tokenCounter: counter, budgetTokens, derivedCache: cache });
    model.applyAll(structuredClone(session.events));
    const reference = new SessionModel({ sessionId: 'broken', tokenCounter: counter, budgetTokens: 60_000 });
    reference.applyAll(structuredClone(session.events));
    expect(model.sections()).toEqual(reference.sections());
    expect(() => cache.close()).not.toThrow();
  });
});
