import { afterEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDb, type Db } from '../../src/store/index.js';
import { AUTOCHECKPOINT_PAGES, startCheckpointer, type Checkpointer } from '../../src/store/checkpointer.js';

const dirs: string[] = [];
const dbs: Db[] = [];
const checkpointers: Checkpointer[] = [];
afterEach(async () => {
  for (const c of checkpointers.splice(0)) await c.close();
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function fresh(): { db: Db; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-ckpt-'));
  dirs.push(dir);
  const path = join(dir, 'state.db');
  const db = openDb(path);
  dbs.push(db);
  db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  return { db, path };
}

/** One commit of ~64 KiB (16 WAL pages at least). */
function commitBatch(db: Db, round: number): void {
  const insert = db.prepare('INSERT INTO blobs (body) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 16; i++) insert.run(`${round}:${i}:`.padEnd(4_000, 'x'));
  })();
}

function walBytes(path: string): number {
  return statSync(`${path}-wal`).size;
}

function autocheckpoint(db: Db): number {
  return db.pragma('wal_autocheckpoint', { simple: true }) as number;
}

/** Resolves once the checkpointer has run `n` checkpoints in all. */
async function checkpointsReach(c: Checkpointer, n: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (c.checkpoints < n) {
    if (Date.now() > until) throw new Error(`only ${c.checkpoints} checkpoints of ${n} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('WAL checkpointer', () => {
  it('checkpoints on its worker while the connection never does: the WAL stays about one interval of writes long', async () => {
    const { db, path } = fresh();
    const c = startCheckpointer(db, { path, intervalMs: 20 });
    checkpointers.push(c);
    expect(autocheckpoint(db)).toBe(0);
    for (let round = 0; round < 40; round++) {
      commitBatch(db, round);
      // each batch is checkpointed before the next: the next commit starts the WAL over
      await checkpointsReach(c, round + 1);
    }
    expect(c.running).toBe(true);
    // 40 batches of ≥ 16 pages went through the WAL; it holds a few batches at most
    expect(walBytes(path)).toBeLessThan(4 * 16 * 4_096 * 2);
    expect(db.prepare('SELECT COUNT(*) FROM blobs').pluck().get()).toBe(40 * 16);
  });

  it('without it (and without automatic checkpoints) the same writes pile up in the WAL: what the test above measures', () => {
    const { db, path } = fresh();
    db.pragma('wal_autocheckpoint = 0');
    for (let round = 0; round < 40; round++) commitBatch(db, round);
    expect(walBytes(path)).toBeGreaterThan(40 * 16 * 4_096);
  });

  it('runs no checkpoint while nothing is written', async () => {
    const { db, path } = fresh();
    const c = startCheckpointer(db, { path, intervalMs: 10 });
    checkpointers.push(c);
    commitBatch(db, 0);
    await checkpointsReach(c, 1);
    await new Promise((r) => setTimeout(r, 150));
    expect(c.checkpoints).toBe(1);
  });

  it('a worker that fails hands checkpoints back to the connection', async () => {
    const { db } = fresh();
    const failures: Error[] = [];
    // the worker opens the file with fileMustExist: this one is not there
    const c = startCheckpointer(db, { path: join(dirs[0] as string, 'missing.db'), intervalMs: 10, onFailure: (err) => failures.push(err) });
    checkpointers.push(c);
    const until = Date.now() + 10_000;
    while (c.running && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    expect(c.running).toBe(false);
    expect(failures).toHaveLength(1);
    expect(autocheckpoint(db)).toBe(AUTOCHECKPOINT_PAGES);
  });

  it('close stops the worker, switches automatic checkpoints back on and is idempotent; the connection goes on', async () => {
    const { db, path } = fresh();
    const c = startCheckpointer(db, { path, intervalMs: 10 });
    const first = c.close();
    expect(c.close()).toBe(first);
    await first;
    expect(c.running).toBe(false);
    expect(autocheckpoint(db)).toBe(AUTOCHECKPOINT_PAGES);
    commitBatch(db, 0);
    db.pragma('wal_checkpoint(TRUNCATE)');
    expect(walBytes(path)).toBe(0);
  });

  it('close is awaited to the end in a process with nothing else to do (the worker is unref’d while it runs)', () => {
    if (process.env['CONTEXTD_BUILD_FAILED']) throw new Error(`the build failed:\n${process.env['CONTEXTD_BUILD_FAILED']}`);
    const { path } = fresh();
    const dist = (m: string): string => fileURLToPath(new URL(`../../dist/src/store/${m}`, import.meta.url));
    // The daemon's shutdown awaits close() and then checkpoints and closes the database: a process
    // that exits while close() is pending would skip both (and the 'contextd stopped' log line).
    const script = `
      const { openDb } = await import(${JSON.stringify(dist('db.js'))});
      const { startCheckpointer } = await import(${JSON.stringify(dist('checkpointer.js'))});
      const db = openDb(${JSON.stringify(path)});
      const c = startCheckpointer(db, { path: ${JSON.stringify(path)}, intervalMs: 10 });
      await new Promise((r) => setTimeout(r, 50));
      await c.close();
      db.close();
      process.stdout.write('closed');
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(out).toBe('closed');
  });
});
