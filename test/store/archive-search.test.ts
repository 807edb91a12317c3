import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Archive, MIGRATIONS, matchText, migrate, openDb, type ArchivedEdit, type Db } from '../../src/store/index.js';

const dirs: string[] = [];
const dbs: Db[] = [];
function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-search-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'state'));
  return join(dir, 'state', 'contextd.db');
}
function open(path: string): Db {
  const db = openDb(path);
  dbs.push(db);
  return db;
}

afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function edit(handle: string, sessionId: string, messages: ArchivedEdit['messages']): ArchivedEdit {
  return { handle, sessionId, reason: 'low-score', sectionIds: ['s1'], messages, tokens: 10, createdAt: 1 };
}

const PARSER = edit('h_parser', 'A', [
  { id: 'm1', role: 'assistant', text: 'Reading the parser.', toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"src/tokenizer/lexer.ts"}' }] },
  { id: 'm2', role: 'tool', toolName: 'read_file', text: 'export function lexQuotedStrings(input) { /* handles escaped quotes */ }' },
]);
const DEPLOY = edit('h_deploy', 'A', [{ id: 'm3', role: 'user', text: 'The staging deploy uses the blue-green strategy on port 8443.' }]);
const OTHER = edit('h_other', 'B', [{ id: 'm4', role: 'user', text: 'Deploying the parser to staging failed with a certificate error.' }]);

describe('archive search (FTS5)', () => {
  it('finds archived originals by what they are about, best match first, per session, limited', () => {
    const archive = new Archive(open(tempPath()));
    archive.putMany([PARSER, DEPLOY, OTHER]);

    const deploy = archive.search('which port does the staging deploy use?');
    expect(deploy[0]?.handle).toBe('h_deploy');
    expect(deploy[0]?.messages).toEqual(DEPLOY.messages);
    expect(deploy[0]?.score).toBeGreaterThan(0);
    for (let i = 1; i < deploy.length; i++) expect(deploy[i - 1]!.score).toBeGreaterThanOrEqual(deploy[i]!.score);

    // Tool names and call arguments are searchable, not only message text; stems match (deploying ~ deploy).
    expect(archive.search('lexer.ts').map((h) => h.handle)).toEqual(['h_parser']);
    expect(archive.search('read_file').map((h) => h.handle)).toEqual(['h_parser']);
    expect(archive.search('deploying', { sessionId: 'A' }).map((h) => h.handle)).toEqual(['h_deploy']);
    expect(archive.search('certificate', { sessionId: 'A' })).toEqual([]);
    expect(archive.search('certificate').map((h) => h.sessionId)).toEqual(['B']);
    expect(archive.search('parser staging deploy', { limit: 1 })).toHaveLength(1);
    expect(archive.search('nothing like this anywhere')).toEqual([]);
  });

  it('never lets punctuation or FTS5 syntax in the query cause an error', () => {
    const archive = new Archive(open(tempPath()));
    archive.putMany([PARSER, DEPLOY]);
    const nasty = ['"unbalanced', 'parser AND (', 'NEAR(deploy port', 'col:value', '^start*', 'a OR', "it's -deploy", '***', '""', '()', 'NOT', 'ü ✓ 部署'];
    for (const q of nasty) expect(() => archive.search(q), q).not.toThrow();
    expect(archive.search('"unbalanced parser').map((h) => h.handle)).toContain('h_parser');
    expect(archive.search('***')).toEqual([]);
    expect(matchText('***')).toBeUndefined();
    expect(matchText('Port: 8443, "staging"!')).toBe('"port" OR "8443" OR "staging"');
  });

  it('indexes rows archived before the index existed, once, and re-opening is idempotent', () => {
    const path = tempPath();
    const old = new Database(path);
    migrate(old, MIGRATIONS.filter((m) => m.version < 3));
    old.prepare(
      `INSERT INTO archive (handle, session_id, reason, section_ids, messages, tokens, created_at) VALUES ('h_old', 'S', 'low-score', '["s1"]', ?, 5, 1)`,
    ).run(JSON.stringify([{ id: 'x', role: 'tool', text: 'the flaky integration test times out on CI' }]));
    old.close();

    const db = open(path);
    const archive = new Archive(db);
    expect(archive.search('flaky test').map((h) => h.handle)).toEqual(['h_old']);
    db.close();
    const again = open(path);
    expect((again.prepare(`SELECT COUNT(*) AS n FROM archive_fts`).get() as { n: number }).n).toBe(1);
    // A relinked handle (same originals, newer plan) keeps exactly one index row.
    new Archive(again).putMany([{ ...edit('h_old', 'S', []), planId: 'p9' }]);
    expect((again.prepare(`SELECT COUNT(*) AS n FROM archive_fts`).get() as { n: number }).n).toBe(1);
    expect(new Archive(again).search('flaky')[0]?.messages[0]?.text).toContain('flaky integration test');
  });
  it('keeps no second copy of the archived text beside its index (migration 11), and searches as before', () => {
    // ~1 MB of archived text: how much the state file grows by with the index of migration 3
    // (text copied into archive_fts_content) and with the contentless one of migration 11.
    const words = Array.from({ length: 60_000 }, (_, i) => `word${i % 5000}`).join(' ');
    const big = edit('h_big', 'S', [{ id: 'b', role: 'tool', text: `the release checklist ${words}` }]);
    const growth = (db: Db): number => {
      const pages = () => (db.prepare('PRAGMA page_count').pluck().get() as number) * (db.prepare('PRAGMA page_size').pluck().get() as number);
      const before = pages();
      new Archive(db).putMany([big]);
      return pages() - before;
    };
    const v10 = new Database(tempPath());
    migrate(v10, MIGRATIONS.filter((m) => m.version <= 10));
    const withCopy = growth(v10 as unknown as Db);
    v10.close();
    const path = tempPath();
    const db = open(path);
    const contentless = growth(db);
    // measured: 0.68 MB against 1.21 MB, the text itself being 0.54 MB
    expect(withCopy - contentless, `grew ${withCopy} B with the copy, ${contentless} B without`).toBeGreaterThan(words.length * 0.8);
    // search, per session, and a relink that keeps one index row, as before
    const archive = new Archive(db);
    archive.putMany([DEPLOY, OTHER]);
    expect(archive.search('release checklist').map((h) => h.handle)).toEqual(['h_big']);
    expect(archive.search('staging', { sessionId: 'B' }).map((h) => h.handle)).toEqual(['h_other']);
    archive.putMany([{ ...DEPLOY, planId: 'p2' }]);
    expect((db.prepare(`SELECT COUNT(*) AS n FROM archive_fts WHERE handle = 'h_deploy'`).get() as { n: number }).n).toBe(1);
  });

  it('a state file of migration 10 keeps its archived originals searchable once migrated', () => {
    const path = tempPath();
    const v10 = new Database(path);
    migrate(v10, MIGRATIONS.filter((m) => m.version <= 10));
    new Archive(v10 as unknown as Db).putMany([PARSER, DEPLOY, OTHER]);
    v10.close();
    const archive = new Archive(open(path));
    expect(archive.search('staging deploy').map((h) => h.handle).sort()).toEqual(['h_deploy', 'h_other']);
    expect(archive.search('staging', { sessionId: 'A' }).map((h) => h.handle)).toEqual(['h_deploy']);
  });
  it('scores as the index of migration 10 did after a row is deleted or re-indexed (review)', () => {
    // bm25 weighs by the index's row count and total tokens: a row leaving the index must leave
    // them too (a contentless_delete index kept them, and every score drifted).
    const scores = (version: number): string[] => {
      const db = new Database(':memory:');
      migrate(db, MIGRATIONS.filter((m) => m.version <= version));
      const archive = new Archive(db as unknown as Db);
      archive.putMany([PARSER, DEPLOY, OTHER, edit('h_gone', 'A', [{ id: 'g', role: 'user', text: 'staging staging staging notes about nothing else at all' }])]);
      db.prepare(`DELETE FROM archive WHERE handle = 'h_gone'`).run();
      db.prepare(`UPDATE archive SET session_id = 'C' WHERE handle = 'h_other'`).run();
      const out = archive.search('staging deploy').map((h) => `${h.handle} ${h.score.toPrecision(12)}`);
      expect((db.prepare(`SELECT COUNT(*) AS n FROM archive_fts`).get() as { n: number }).n).toBe(3);
      db.close();
      return out;
    };
    expect(scores(11)).toEqual(scores(10));
  });
});
