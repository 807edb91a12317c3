import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Archive, HeadroomLog, MIGRATIONS, ModelSteps, PlanLog, WAL_SIZE_LIMIT_BYTES, migrate, openDb, type Db } from '../../src/store/index.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';

const dirs: string[] = [];
const dbs: Db[] = [];
function tempDb(): { path: string; db: Db } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-store-'));
  dirs.push(dir);
  const path = join(dir, 'state', 'contextd.db');
  const db = openDb(path);
  dbs.push(db);
  return { path, db };
}

afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('store', () => {
  it('creates the schema in WAL mode and re-opening is idempotent', () => {
    const { path, db } = tempDb();
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    db.close();
    const again = openDb(path);
    dbs.push(again);
    expect(again.pragma('user_version', { simple: true })).toBe(latest);
    const tables = (again.prepare(`SELECT name FROM sqlite_master WHERE type='table'`).all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['sessions', 'headroom_samples', 'archive', 'plans']));
  });

  it('keeps the headroom log per session, oldest first, filtered by time', () => {
    const { db } = tempDb();
    const log = new HeadroomLog(db);
    for (const [at, h] of [[1000, 0.9], [2000, 0.5], [3000, 0.1]] as const) {
      log.record({ sessionId: 'a', at, tokens: Math.round((1 - h) * 1000), total: 1000, reserveRatio: 0.15, headroom: h, sections: 3, reason: 'moved' });
    }
    log.record({ sessionId: 'b', at: 1500, tokens: 1, total: 1000, reserveRatio: 0.15, headroom: 0.999, sections: 1, reason: 'start', file: '/x.jsonl' });
    expect(log.list('a').map((s) => s.headroom)).toEqual([0.9, 0.5, 0.1]);
    expect(log.list('a', 2000).map((s) => s.at)).toEqual([2000, 3000]);
    expect(log.list('b')[0]).toMatchObject({ file: '/x.jsonl', reportedTokens: undefined, reason: 'start' });
    expect(log.sessions().map((s) => s.sessionId)).toEqual(['a', 'b']);
  });

  it('archives originals losslessly and they survive a reopen', () => {
    const { path, db } = tempDb();
    const messages = [
      { id: 'm1', role: 'assistant' as const, text: '', toolCalls: [{ id: 'c1', name: 'grep', arguments: '{"q":"x"}' }] },
      { id: 'm2', role: 'tool' as const, text: 'line 1\nline 2 — ünïcödé ✓', toolCallId: 'c1', toolName: 'grep' },
    ];
    new Archive(db).putMany([{ handle: 'h_1', sessionId: 's', planId: 'p1', editId: 'e1', reason: 'redundant-tool-output', sectionIds: ['s3'], messages, tokens: 42, createdAt: 5 }]);
    db.close();
    const reopened = openDb(path);
    dbs.push(reopened);
    const got = new Archive(reopened).get('h_1');
    expect(got?.messages).toEqual(messages);
    expect(got).toMatchObject({ sessionId: 's', planId: 'p1', sectionIds: ['s3'], tokens: 42 });
    expect(new Archive(reopened).get('h_missing')).toBeUndefined();
    expect(new Archive(reopened).count('s')).toBe(1);
  });

  it('records plans and their fate', () => {
    const { db } = tempDb();
    const plans = new PlanLog(db);
    plans.record({ planId: 'p1', sessionId: 's', createdAt: 1, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: { edits: [1, 2] } });
    plans.setStatus('p1', 'applied');
    expect(plans.get('p1')).toMatchObject({ status: 'applied', plan: { edits: [1, 2] } });
    expect(plans.list('s')).toHaveLength(1);
  });

  it('prunes a session\'s plans that ended unapplied, oldest first, keeping the newest bodies and rows, and never an open plan or one a kept step replays', () => {
    const { db } = tempDb();
    const plans = new PlanLog(db);
    const steps = new ModelSteps(db);
    const seq = new Map<string, number>();
    const statuses = ['expired', 'rejected', 'applied', 'proposed', 'partially-applied', 'advisory'] as const;
    for (let i = 0; i < 60; i++) {
      for (const sessionId of ['s', 't']) {
        const planId = `${sessionId}${i}`;
        plans.record({ planId, sessionId, createdAt: 1000 + i, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: { planId, edits: [] } });
        const status = statuses[i % statuses.length] as (typeof statuses)[number];
        if (status === 'applied' || status === 'partially-applied') {
          plans.setApplied(planId, status, undefined, [], i);
          const n = seq.get(sessionId) ?? 0;
          steps.append(sessionId, n, { kind: 'edits', planId, offset: i });
          seq.set(sessionId, n + 1);
        } else if (status !== 'proposed') plans.setStatus(planId, status);
      }
    }
    // 20 ended unapplied (expired or rejected) of the 60
    expect(plans.prune('s', 5, 12)).toEqual({ bodies: 15, rows: 8 });
    const ids = (status: string): string[] => plans.list('s').filter((p) => p.status === status).map((p) => p.planId);
    const ended = plans.list('s').filter((p) => p.status === 'expired' || p.status === 'rejected');
    // the newest 12 rows, the newest 5 with their body
    expect(ended.map((p) => p.planId)).toEqual(['s24', 's25', 's30', 's31', 's36', 's37', 's42', 's43', 's48', 's49', 's54', 's55']);
    expect(ended.filter((p) => p.plan !== undefined).map((p) => p.planId)).toEqual(['s43', 's48', 's49', 's54', 's55']);
    // applied and open plans all stay, whole
    for (const status of ['applied', 'partially-applied', 'proposed', 'advisory']) {
      expect(ids(status)).toHaveLength(10);
      for (const id of ids(status)) expect(plans.get(id)?.plan).toEqual({ planId: id, edits: [] });
    }
    // another session's plans are its own
    expect(plans.list('t')).toHaveLength(60);
    expect(plans.prune('s', 5, 12)).toEqual({ bodies: 0, rows: 0 });
  });

  it('drops the body of an applied plan once no kept step and no step in memory names it, and keeps its row', () => {
    const { db } = tempDb();
    const plans = new PlanLog(db);
    const steps = new ModelSteps(db);
    for (const [i, planId] of ['kept', 'inMemory', 'partial', 'forgotten'].entries()) {
      plans.record({ planId, sessionId: 's', createdAt: 1000 + i, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: { planId, edits: [] } });
      plans.setApplied(planId, planId === 'partial' ? 'partially-applied' : 'applied', undefined, [], 10 * i);
    }
    steps.append('s', 0, { kind: 'edits', planId: 'kept', offset: 0 });
    // another session's step names no plan of this one
    steps.append('t', 0, { kind: 'edits', planId: 'forgotten', offset: 0 });
    expect(plans.prune('s', 5, 12, ['inMemory'])).toEqual({ bodies: 2, rows: 0 });
    expect(['kept', 'inMemory', 'partial', 'forgotten'].map((id) => plans.get(id)?.plan !== undefined)).toEqual([true, true, false, false]);
    // the rows stay, with how they were applied (what an ack and a release check read)
    expect(plans.appliedAt('partial')).toEqual({ status: 'partially-applied', editIds: [], offset: 20 });
    // once the kept steps are cleared (the model built from its transcript alone), the rest go too
    steps.clear('s');
    expect(plans.prune('s', 5, 12)).toEqual({ bodies: 2, rows: 0 });
    expect(plans.list('s').map((p) => p.status)).toEqual(['applied', 'applied', 'partially-applied', 'applied']);
  });

  it('marks the plans left open by the last run expired, with why, and no other plan', () => {
    const { db } = tempDb();
    const plans = new PlanLog(db);
    const statuses = ['expired', 'rejected', 'applied', 'proposed', 'advisory'] as const;
    for (let i = 0; i < 10; i++) {
      const planId = `s${i}`;
      plans.record({ planId, sessionId: 's', createdAt: 1000 + i, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: { planId } });
      const status = statuses[i % statuses.length] as (typeof statuses)[number];
      if (status === 'applied') plans.setApplied(planId, status, undefined, [], i);
      else if (status !== 'proposed') plans.setStatus(planId, status, 'before');
    }
    expect(plans.expireOpen('contextd restarted')).toBe(4);
    expect(plans.get('s3')).toMatchObject({ status: 'expired', statusReason: 'contextd restarted' });
    expect(plans.get('s4')).toMatchObject({ status: 'expired', statusReason: 'contextd restarted' });
    expect(plans.get('s0')).toMatchObject({ status: 'expired', statusReason: 'before' });
    expect(plans.get('s1')).toMatchObject({ status: 'rejected' });
    expect(plans.get('s2')).toMatchObject({ status: 'applied' });
  });

  it('records which edits of a plan were applied, at which transcript offset, across a reopen', () => {
    const { db, path } = tempDb();
    const plans = new PlanLog(db);
    plans.record({ planId: 'p1', sessionId: 's', createdAt: 1, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: { edits: [] } });
    expect(plans.appliedAt('p1')).toEqual({ status: 'proposed', editIds: undefined, offset: undefined });
    expect(plans.setApplied('p1', 'partially-applied', 'kept e2', ['e1', 'e3'], 4096)).toBe(true);
    expect(plans.setApplied('p-unknown', 'applied', undefined, [], 1)).toBe(false);
    db.close();
    const reopened = openDb(path);
    dbs.push(reopened);
    const again = new PlanLog(reopened);
    expect(again.appliedAt('p1')).toEqual({ status: 'partially-applied', editIds: ['e1', 'e3'], offset: 4096 });
    expect(again.get('p1')).toMatchObject({ status: 'partially-applied', statusReason: 'kept e2', appliedEditIds: ['e1', 'e3'], appliedOffset: 4096 });
    expect(again.appliedAt('p-unknown')).toBeUndefined();
  });

  it('migrates plans stored before applied edits were recorded: their rows stay, with no edits or offset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-store-'));
    dirs.push(dir);
    const path = join(dir, 'old.db');
    const old = new Database(path);
    migrate(old, MIGRATIONS.filter((m) => m.version <= 8));
    old.prepare(`INSERT INTO plans (plan_id, session_id, created_at, status, headroom_before, headroom_after, plan) VALUES ('p0', 's', 1, 'applied', 0.1, 0.2, '{}')`).run();
    old.close();
    const db = openDb(path);
    dbs.push(db);
    expect(new PlanLog(db).appliedAt('p0')).toEqual({ status: 'applied', editIds: undefined, offset: undefined });
    // migration 10 moved the body to plan_bodies
    expect(new PlanLog(db).get('p0')).toMatchObject({ planId: 'p0', status: 'applied', plan: {} });
  });

  it('refuses a state database a newer contextd migrated, saying so, and leaves it as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-store-'));
    dirs.push(dir);
    const path = join(dir, 'newer.db');
    const newer = openDb(path);
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    newer.pragma(`user_version = ${latest + 1}`);
    newer.close();
    let caught: unknown;
    try {
      dbs.push(openDb(path));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ContextdError);
    expect((caught as ContextdError).code).toBe(ErrorCode.STORE_FAILED);
    expect((caught as ContextdError).message).toMatch(new RegExp(`schema version ${latest + 1}, newer than this contextd knows \\(${latest}\\)`));
    const again = new Database(path);
    expect(again.pragma('user_version', { simple: true })).toBe(latest + 1);
    again.close();
  });

  it('skips a migration another process applied while this one waited to migrate (review: two processes, one file)', () => {
    // The daemon and a hook or the CLI can both be first to open the file after an upgrade. The
    // one that read the schema version before the other migrated must not migrate again
    // (migration 10 dropped a column: run twice, it fails). The stale read is made
    // deterministic with a connection whose first version read is one migration old.
    const { path, db } = tempDb();
    const latest = Math.max(...MIGRATIONS.map((m) => m.version));
    db.close();
    const late = new Database(path);
    let reads = 0;
    const stale = new Proxy(late, {
      get(target, prop, receiver) {
        if (prop !== 'pragma') return Reflect.get(target, prop, receiver) as unknown;
        return (source: string, options?: { simple?: boolean }) => (source === 'user_version' && reads++ === 0 ? latest - 1 : target.pragma(source, options));
      },
    }) as unknown as Db;
    expect(() => migrate(stale, MIGRATIONS)).not.toThrow();
    expect(reads).toBeGreaterThan(1);
    expect(late.pragma('user_version', { simple: true })).toBe(latest);
    late.close();
  });

  it('cuts a WAL file that grew past WAL_SIZE_LIMIT_BYTES back once a checkpoint lets it start over', () => {
    // Under load the WAL grew to 157-202 MiB and kept that size on disk for good.
    const { path, db } = tempDb();
    db.pragma('wal_autocheckpoint = 0'); // as with the checkpoint worker: the daemon's connection never checkpoints
    db.exec('CREATE TABLE scratch (b BLOB)');
    const insert = db.prepare('INSERT INTO scratch VALUES (?)');
    const mib = Buffer.alloc(1024 * 1024, 7);
    const walBytes = () => statSync(`${path}-wal`).size;
    for (let i = 0; walBytes() <= WAL_SIZE_LIMIT_BYTES + 8 * 1024 * 1024; i++) insert.run(mib);
    db.pragma('wal_checkpoint(PASSIVE)');
    insert.run(Buffer.alloc(16)); // the next commit starts the WAL over
    expect(walBytes()).toBeLessThanOrEqual(WAL_SIZE_LIMIT_BYTES);
  });

  it('an ack rewrites the plan\'s status row, never its body; a plan recorded again replaces both', () => {
    const { db } = tempDb();
    const log = new PlanLog(db);
    const body = { planId: 'p1', edits: [{ editId: 'e1', summary: 'x'.repeat(20_000) }] };
    log.record({ planId: 'p1', sessionId: 's', createdAt: 1, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.3, plan: body });
    db.exec(`CREATE TEMP TABLE body_writes (n INTEGER);
      CREATE TEMP TRIGGER count_body_updates AFTER UPDATE ON plan_bodies BEGIN INSERT INTO body_writes VALUES (1); END;`);
    log.setStatus('p1', 'rejected', 'not now');
    expect(log.setApplied('p1', 'applied', undefined, ['e1'], 42)).toBe(true);
    expect(db.prepare('SELECT count(*) FROM body_writes').pluck().get()).toBe(0);
    expect(log.get('p1')).toMatchObject({ status: 'applied', plan: body, appliedEditIds: ['e1'], appliedOffset: 42 });
    log.record({ planId: 'p1', sessionId: 's', createdAt: 2, status: 'proposed', headroomBefore: 0.1, headroomAfter: 0.2, plan: { planId: 'p1', edits: [] } });
    expect(log.get('p1')).toMatchObject({ createdAt: 2, status: 'proposed', plan: { planId: 'p1', edits: [] }, appliedEditIds: undefined });
  });

  it('turns a full database into STORE_FULL and keeps earlier rows', () => {
    const { db } = tempDb();
    const archive = new Archive(db);
    archive.putMany([{ handle: 'h_ok', sessionId: 's', reason: 'low-score', sectionIds: ['s1'], messages: [], tokens: 1, createdAt: 1 }]);
    // A real SQLITE_FULL: cap the file at its current size, then write more than fits.
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 1}`);
    const big = 'x'.repeat(64 * 1024);
    let caught: unknown;
    try {
      archive.putMany([{ handle: 'h_big', sessionId: 's', reason: 'low-score', sectionIds: ['s2'], messages: [{ id: 'm', role: 'tool', text: big }], tokens: 1, createdAt: 2 }]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ContextdError);
    expect((caught as ContextdError).code).toBe(ErrorCode.STORE_FULL);
    expect(archive.get('h_ok')).toBeDefined();
    expect(archive.get('h_big')).toBeUndefined();
  });

  it('re-archiving a handle relinks it to the newer plan without rewriting its originals', () => {
    const { db } = tempDb();
    const archive = new Archive(db);
    const messages = [{ id: 'L1', role: 'tool' as const, text: 'original output' }];
    archive.putMany([{ handle: 'h_same', sessionId: 's', planId: 'p1', editId: 'e1', reason: 'low-score', sectionIds: ['s4'], messages, tokens: 9, createdAt: 1 }]);
    archive.putMany([{ handle: 'h_same', sessionId: 's', planId: 'p2', editId: 'e2', reason: 'stale-read', sectionIds: ['s4'], messages, tokens: 9, createdAt: 2 }]);
    expect(archive.count('s')).toBe(1);
    expect(archive.get('h_same')).toMatchObject({ planId: 'p2', editId: 'e2', reason: 'stale-read', createdAt: 2, messages });
  });

  it('relink() names a newer plan for archived handles only, in one transaction, and keeps their originals', () => {
    const { db } = tempDb();
    const archive = new Archive(db);
    const messages = [{ id: 'L1', role: 'tool' as const, text: 'original output' }];
    archive.putMany([{ handle: 'h_a', sessionId: 's', planId: 'p1', editId: 'e1', reason: 'low-score', sectionIds: ['s4'], messages, tokens: 9, createdAt: 1 }]);
    archive.relink([
      { handle: 'h_a', planId: 'p7', editId: 'e7', reason: 'stale-read', createdAt: 7 },
      { handle: 'h_unknown', planId: 'p7', editId: 'e8', reason: 'low-score', createdAt: 7 },
    ]);
    expect(archive.get('h_a')).toMatchObject({ planId: 'p7', editId: 'e7', reason: 'stale-read', createdAt: 7, messages });
    expect(archive.has('h_unknown')).toBe(false);
    archive.relink([]);
    expect(archive.count('s')).toBe(1);
  });

  it('has() tells an archived handle from an unknown one, and an empty relink keeps the originals', () => {
    const { db } = tempDb();
    const archive = new Archive(db);
    const messages = [{ id: 'L1', role: 'tool' as const, text: 'original output' }];
    expect(archive.has('h_x')).toBe(false);
    archive.putMany([{ handle: 'h_x', sessionId: 's', planId: 'p1', editId: 'e1', reason: 'low-score', sectionIds: ['s4'], messages, tokens: 9, createdAt: 1 }]);
    expect(archive.has('h_x')).toBe(true);
    // An entry without originals for a handle archived already: only the plan it names changes.
    archive.putMany([{ handle: 'h_x', sessionId: 's', planId: 'p2', editId: 'e2', reason: 'low-score', sectionIds: ['s4'], messages: [], tokens: 9, createdAt: 2 }]);
    expect(archive.get('h_x')).toMatchObject({ planId: 'p2', messages });
  });
});

