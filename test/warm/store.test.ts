import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { harvestSession } from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { openDb } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { TemplateStore, allPatterns, hammingDistance } from '../../src/store/templates.js';
import { classifyTaskText, searchTerms as termsOf } from '../../src/text/index.js';
import { silentLogger } from '../../src/util/logger.js';
import { SessionBuilder, cleanup, codingSession, tempDir, tempStore, trackDb } from '../harvest/fixtures.js';

afterEach(cleanup);
const DAY = 86_400_000;
const NOW = Date.parse('2026-11-21T00:00:00Z');
const deps = (store: TemplateStore, now = NOW) => ({ store, tokenCounter: createTokenCounter(), logger: silentLogger(), now: () => now });

describe('template store', () => {
  it('migration 2 upgrades a version-1 database in place, WAL mode', () => {
    const dir = tempDir();
    const path = join(dir, 'contextd.db');
    const v1 = new Database(path);
    const first = MIGRATIONS.find((m) => m.version === 1);
    v1.exec(first?.sql ?? '');
    v1.pragma('user_version = 1');
    v1.prepare(`INSERT INTO sessions (session_id, file, format, first_seen, last_seen) VALUES ('s', 'f', 'codex', 1, 2)`).run();
    v1.close();
    const db = trackDb(openDb(path));
    expect(db.pragma('user_version', { simple: true })).toBeGreaterThanOrEqual(2);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type IN ('table')`).all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['templates', 'template_items', 'knowledge', 'user_patterns', 'harvested_sessions', 'templates_fts', 'sessions']));
    expect((db.prepare('SELECT COUNT(*) AS n FROM sessions').get() as { n: number }).n).toBe(1);
  });

  it('merges near-identical sessions into one template; evidence counts sessions, not repeats', async () => {
    const { store } = tempStore();
    const a = await harvestSession({ sessionId: 's1', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
    // A second session doing the same work later, in another checkout (the same content — whatever its ids or times — would count once).
    const later = (): ReturnType<typeof codingSession> => codingSession({ start: Date.parse('2026-11-20T12:00:00Z'), system: '# Project rules\nUse TypeScript strict mode.\nCheckout: ~/work/parser-2' });
    const b = await harvestSession({ sessionId: 's2', messages: later().messages, meta: { repo: 'acme/parser' } }, deps(store, NOW + 1000));
    expect(a.templateId).toBeDefined();
    expect(b.merged).toBe(true);
    expect(b.templateId).toBe(a.templateId);
    const again = await harvestSession({ sessionId: 's2', messages: later().messages, meta: { repo: 'acme/parser' } }, deps(store));
    expect(again.skipped).toBe('already-harvested');
    expect(store.count()).toBe(1);
    const t = store.get(a.templateId ?? '', NOW + 1000);
    expect(t?.sessionCount).toBe(2);
    expect(t?.sessions.map((s) => s.sessionId)).toEqual(['s1', 's2']);
    const rec = t?.items.find((i) => i.kind === 'recovery');
    expect(rec?.evidence).toBe(2);
    const texts = t?.items.map((i) => `${i.kind}:${i.category}:${i.text}`) ?? [];
    expect(new Set(texts).size).toBe(texts.length); // no duplicates
    const pitfall = t?.knowledge.find((k) => k.category === 'pitfall');
    expect(pitfall?.evidence).toBe(2);
    expect(pitfall?.confidence).toBeCloseTo(0.64, 2);
  });

  it('keeps different tasks apart and promotes user patterns only once a second session shows them', async () => {
    const { store, db } = tempStore();
    const r1 = await harvestSession({ sessionId: 'a', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
    expect(r1.items.promotedPatterns).toBe(0);
    expect(store.patterns('acme/parser').filter((p) => p.kind === 'constraint')).toEqual([]);
    expect(allPatterns(db).some((p) => p.text === 'Never use any.' && !p.promoted)).toBe(true);
    const other = new SessionBuilder()
      .user('write release notes for version 2 in docs/CHANGELOG.md. Never use any.')
      .call('read_file', { path: 'docs/CHANGELOG.md' }, '# Changelog')
      .call('write_file', { path: 'docs/CHANGELOG.md' }, 'ok')
      .assistant('done');
    const r2 = await harvestSession({ sessionId: 'b', messages: other.messages, meta: { repo: 'acme/parser' } }, deps(store));
    expect(r2.templateId).not.toBe(r1.templateId);
    expect(store.count()).toBe(2);
    const promoted = store.patterns('acme/parser');
    expect(promoted.map((p) => p.text)).toContain('Never use any.');
    expect(promoted.find((p) => p.text === 'Never use any.')?.sessionCount).toBe(2);
  });

  it('decays confidence with age and the decay pass deletes stale items', async () => {
    const { store } = tempStore();
    const r = await harvestSession({ sessionId: 'a', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
    const id = r.templateId ?? '';
    const fresh = store.get(id, NOW)?.knowledge[0]?.confidence ?? 0;
    const old = store.get(id, NOW + 60 * DAY)?.knowledge[0]?.confidence ?? 0;
    expect(old).toBeCloseTo(fresh / 4, 5); // two half-lives of 30 days
    expect(store.decay(NOW + DAY)).toEqual({ items: 0, knowledge: 0 });
    const gone = store.decay(NOW + 200 * DAY);
    expect(gone.items).toBeGreaterThan(0);
    expect(gone.knowledge).toBeGreaterThan(0);
    expect(store.get(id, NOW + 200 * DAY)?.items).toEqual([]);
  });

  it('records outcomes, searches with BM25 and deletes with cascade', async () => {
    const { store, db } = tempStore();
    const r = await harvestSession({ sessionId: 'a', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
    const id = r.templateId ?? '';
    expect(store.recordOutcome([id, id, 't-missing'], 'success')).toBe(1);
    store.recordOutcome([id], 'failure');
    const s = store.summaries([id])[0];
    expect([s?.usageCount, s?.successCount, s?.failureCount]).toEqual([2, 1, 1]);
    expect(s?.successRate).toBeCloseTo(0.5, 5);
    expect(store.search(termsOf('parser test failing'))[0]?.templateId).toBe(id);
    expect(store.search(termsOf('kubernetes helm chart'))).toEqual([]);
    expect(store.delete(id)).toBe(true);
    expect(store.delete(id)).toBe(false);
    expect((db.prepare('SELECT COUNT(*) AS n FROM template_items').get() as { n: number }).n).toBe(0);
    expect((db.prepare('SELECT COUNT(*) AS n FROM knowledge').get() as { n: number }).n).toBe(0);
    expect(store.search(termsOf('parser'))).toEqual([]);
  });

  it('helpers: hamming distance, task text classes, terms', () => {
    expect(hammingDistance('0000000000000000', '0000000000000003')).toBe(2);
    expect(hammingDistance('ffffffffffffffff', '0000000000000000')).toBe(64);
    expect(classifyTaskText('fix the bug in the parser function and run the tests')).toBe('code');
    expect(classifyTaskText('rename and move the pdf files into one folder')).toBe('file');
    expect(classifyTaskText('research and compare the options, explain why')).toBe('research');
    expect(classifyTaskText('hello')).toBe('mixed');
    expect(termsOf('Fix the Parser, fix it NOW 42')).toEqual(['fix', 'parser']);
  });
});
