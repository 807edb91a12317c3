/** Re-harvesting is idempotent by content: copies count once, a grown transcript replaces its earlier harvest. */
import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { harvestFiles } from '../../src/harvest/index.js';
import { contentHashChain } from '../../src/harvest/content-hash.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { openDb } from '../../src/store/db.js';
import { MIGRATIONS, migrate } from '../../src/store/index.js';
import { TemplateStore } from '../../src/store/templates.js';
import { silentLogger } from '../../src/util/logger.js';
import { SessionBuilder, cleanup, codingSession, tempDir, tempStore, trackDb } from './fixtures.js';

afterEach(cleanup);
const deps = (store: TemplateStore) => ({ store, tokenCounter: createTokenCounter(), logger: silentLogger() });

describe('content hash of a harvested transcript', () => {
  it('chains over messages: equal content gives equal hashes, each prefix its own', () => {
    const a = contentHashChain(codingSession().messages);
    const b = contentHashChain(codingSession().messages);
    expect(a).toEqual(b);
    expect(new Set(a).size).toBe(a.length);
    const grown = contentHashChain(codingSession().user('and now the lexer').messages);
    expect(grown.slice(0, a.length)).toEqual(a);
    expect(grown.at(-1)).not.toBe(a.at(-1));
    expect(contentHashChain([])).toEqual([]);
  });

  it('hashes what messages say, not their ids, timestamps or offsets', () => {
    const a = codingSession().messages;
    const renamed = a.map((m, i) => ({
      ...m,
      id: `uuid-${i}`,
      timestamp: (m.timestamp ?? 0) + 3_600_000,
      sourceOffset: 17 + i * 100,
      ...(m.toolCallId ? { toolCallId: `other_${m.toolCallId}` } : {}),
      ...(m.toolCalls ? { toolCalls: m.toolCalls.map((c) => ({ ...c, id: `other_${c.id}` })) } : {}),
    }));
    expect(contentHashChain(renamed)).toEqual(contentHashChain(a));
    const edited = a.map((m, i) => (i === 2 ? { ...m, toolCalls: m.toolCalls?.map((c) => ({ ...c, arguments: '{"path":"src/lexer.ts"}' })) } : m));
    expect(contentHashChain(edited).slice(0, 2)).toEqual(contentHashChain(a).slice(0, 2));
    expect(contentHashChain(edited)[2]).not.toBe(contentHashChain(a)[2]);
    const failed = a.map((m, i) => (i === 4 ? { ...m, isError: !m.isError } : m));
    expect(contentHashChain(failed).at(-1)).not.toBe(contentHashChain(a).at(-1));
  });

  it('counts a re-export of a transcript under new tool call ids and line offsets once', async () => {
    const dir = tempDir();
    const first = codingSession().writeTo(join(dir, 'first.jsonl'));
    // the same conversation written again: other call ids, and a blank line first (every offset moves)
    const again = join(dir, 'exported.jsonl');
    writeFileSync(again, `\n${readFileSync(first, 'utf8').replaceAll('"call_', '"call_exp')}`);
    const { store } = tempStore();
    const r = await harvestFiles([first, again], deps(store));
    expect(r.files).toBe(2);
    expect(r.harvested).toBe(1);
    expect(r.skippedReasons['already-harvested']).toBe(1);
    expect(store.list().map((t) => t.sessionCount)).toEqual([1]);
  });

  it('counts the same transcript once however many copies, under any path or name', async () => {
    const dir = tempDir();
    const original = codingSession().writeTo(join(dir, 'original.jsonl'));
    for (let i = 0; i < 12; i++) {
      const sub = join(dir, `copy-${i}`);
      mkdirSync(sub);
      copyFileSync(original, join(sub, `session-${i}.jsonl`));
    }
    const { store } = tempStore();
    const r = await harvestFiles([dir], deps(store));
    expect(r.files).toBe(13);
    expect(r.harvested).toBe(1);
    expect(r.skippedReasons['already-harvested']).toBe(12);
    expect(store.list().map((t) => t.sessionCount)).toEqual([1]);
    const t = store.get(store.list()[0]?.id ?? '');
    expect(t?.items.find((i) => i.kind === 'recovery')?.evidence).toBe(1);
    // A second run over the same folder changes nothing.
    const again = await harvestFiles([dir], deps(store));
    expect(again.harvested).toBe(0);
    expect(store.list().map((t) => t.sessionCount)).toEqual([1]);
  });

  it('a transcript that grew replaces its earlier contribution, also as a copy under another name', async () => {
    const dir = tempDir();
    const first = codingSession().writeTo(join(dir, 'work.jsonl'));
    const { store } = tempStore();
    expect((await harvestFiles([first], deps(store))).harvested).toBe(1);
    const templateId = store.list()[0]?.id ?? '';
    const grown = join(dir, 'work-continued.jsonl');
    writeFileSync(grown, readFileSync(first));
    appendFileSync(grown, `${JSON.stringify({ role: 'user', content: 'also run the linter' })}\n${JSON.stringify({ role: 'assistant', content: 'The linter passes too.' })}\n`);
    const r = await harvestFiles([grown], deps(store));
    expect(r.harvested).toBe(1);
    const t = store.get(templateId);
    expect(store.count()).toBe(1);
    expect(t?.sessionCount).toBe(1);
    expect(t?.sessions.map((s) => s.sessionId)).toEqual(['work']);
    expect(t?.items.find((i) => i.kind === 'recovery')?.evidence).toBe(1);
    expect(store.harvestedSession('work')?.messageCount).toBe(13);
  });

  it('a grown transcript skipped as low value keeps its template link; growing on, it stays one session of that template', async () => {
    const dir = tempDir();
    const path = codingSession().writeTo(join(dir, 'work.jsonl'));
    const { store, db } = tempStore();
    expect((await harvestFiles([path], deps(store))).harvested).toBe(1);
    const templateId = store.list()[0]?.id ?? '';
    const turn = (ask: string, answer: string): string => `${JSON.stringify({ role: 'user', content: ask })}\n${JSON.stringify({ role: 'assistant', content: answer })}\n`;
    appendFileSync(path, turn('also run the linter', 'The linter passes too.'));
    // its new state scores under the bar: skipped, but its earlier harvest still counts in the template
    const skipped = await harvestFiles([path], { ...deps(store), minValue: 2 });
    expect(skipped.skippedReasons['low-value']).toBe(1);
    expect(store.harvestedSession('work')).toMatchObject({ templateId, skipped: 'low-value', messageCount: 13 });
    appendFileSync(path, turn('and format the code', 'Formatted.'));
    expect((await harvestFiles([path], deps(store))).harvested).toBe(1);
    expect(store.count()).toBe(1);
    expect(store.get(templateId)?.sessionCount).toBe(1);
    expect(db.prepare(`SELECT COUNT(*) AS n FROM template_sessions WHERE session_id = 'work'`).get()).toEqual({ n: 1 });
    expect(store.harvestedSession('work')).toMatchObject({ templateId, skipped: null, messageCount: 15 });
  });

  it('a session skipped as empty does not absorb a later session that starts with the same boilerplate', async () => {
    const dir = tempDir();
    const system = '# Project rules\nUse TypeScript strict mode.';
    const idle = new SessionBuilder().system(system).writeTo(join(dir, 'idle.jsonl'));
    const { store } = tempStore();
    expect((await harvestFiles([idle], deps(store))).skippedReasons.empty).toBe(1);
    // another session whose first message is the same system prompt, then real work
    const work = codingSession({ system }).writeTo(join(dir, 'work.jsonl'));
    const r = await harvestFiles([work], deps(store));
    expect(r.harvested).toBe(1);
    expect(store.harvestedSession('work')).toMatchObject({ skipped: null, messageCount: 11 });
    expect(store.harvestedSession('idle')).toMatchObject({ skipped: 'empty', templateId: null, messageCount: 1 });
    expect(store.get(store.list()[0]?.id ?? '')?.sessions.map((s) => s.sessionId)).toEqual(['work']);
    // the idle session, once it does work of its own, is harvested under its own id too
    appendFileSync(idle, `${JSON.stringify({ role: 'user', content: 'write the changelog entry for the lexer release' })}\n${JSON.stringify({ role: 'assistant', content: 'Added the changelog entry.' })}\n`);
    const later = await harvestFiles([idle], { ...deps(store), minValue: 0 });
    expect(later.harvested).toBe(1);
    expect(store.harvestedSession('idle')).toMatchObject({ skipped: null, messageCount: 3 });
    expect(store.harvestedSession('work')).toMatchObject({ skipped: null, messageCount: 11 });
  });

  it('migration 6 adds the content hash to a version-5 database; older rows are still found by id', () => {
    const path = join(tempDir(), 'contextd.db');
    const old = new Database(path);
    migrate(old, MIGRATIONS.filter((m) => m.version < 6));
    old.prepare(`INSERT INTO harvested_sessions (session_id, template_id, message_count, value_score, skipped, harvested_at) VALUES ('old', NULL, 4, 0.1, 'low-value', 1)`).run();
    old.close();
    const db = trackDb(openDb(path));
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)?.version);
    const store = new TemplateStore(db);
    expect(store.harvestedSession('old')).toEqual({ sessionId: 'old', messageCount: 4, templateId: null, skipped: 'low-value', contentHash: null });
    store.recordSkipped('new', 2, 0, 'low-value', 2, 'abc');
    expect(store.harvestedByContent(['zzz', 'abc'])).toMatchObject({ sessionId: 'new', contentHash: 'abc' });
    expect(store.harvestedByContent(['zzz'])).toBeUndefined();
  });
});
