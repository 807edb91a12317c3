import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { harvestFiles, harvestSession, listTranscriptFiles, sessionFromEvents } from '../../src/harvest/index.js';
import type { Message } from '../../src/model/messages.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { TemplateStore } from '../../src/store/templates.js';
import { silentLogger } from '../../src/util/logger.js';
import { generatedCorpus, generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';
import { cleanup, codingSession, tempDir, tempStore } from './fixtures.js';

afterEach(cleanup);
const deps = (store: TemplateStore) => ({ store, tokenCounter: createTokenCounter(), logger: silentLogger() });

describe('harvestFiles', () => {
  it('harvests every transcript of a folder, then skips them all on a second run', async () => {
    const folder = tempDir();
    writeTranscripts(folder, generatedCorpus());
    const jsonl = readdirSync(folder).filter((f) => f.endsWith('.jsonl'));
    expect(jsonl.length).toBe(generatedCorpus().length);
    const { store, db } = tempStore();
    const progress: number[] = [];
    const first = await harvestFiles([folder], deps(store), (p) => progress.push(p.done));
    expect(first.files).toBe(jsonl.length);
    expect(first.failed).toEqual([]);
    expect(first.harvested + first.skipped).toBe(jsonl.length);
    expect(first.harvested).toBeGreaterThanOrEqual(3);
    expect(progress).toEqual(jsonl.map((_, i) => i + 1));
    expect(first.filesPerSecond).toBeGreaterThan(0);
    // Every template carries a value breakdown and at least one item.
    for (const t of store.list()) {
      const full = store.get(t.id);
      expect(Object.keys(full?.valueBreakdown ?? {})).toContain('novelty');
      expect(full?.items.length ?? 0).toBeGreaterThan(0);
      expect(['code', 'file', 'research', 'mixed']).toContain(t.taskType);
    }
    const templates = store.count();
    const second = await harvestFiles([folder], deps(store));
    expect(second.harvested).toBe(0);
    expect(second.skippedReasons['already-harvested']).toBe(jsonl.length);
    expect(store.count()).toBe(templates);
    expect((db.prepare('SELECT COUNT(*) AS n FROM harvested_sessions').get() as { n: number }).n).toBe(jsonl.length);
  });

  it('walks directories recursively, reports bad files and missing paths without stopping', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    codingSession().writeTo(join(dir, 'a', 'b', 'one.jsonl'));
    writeFileSync(join(dir, 'a', 'two.jsonl'), generateTranscript('claude-code', { seed: 6 }).jsonl);
    writeFileSync(join(dir, 'a', 'bad.jsonl'), 'this is not json\n');
    writeFileSync(join(dir, 'a', 'notes.txt'), 'ignored');
    expect((await listTranscriptFiles([dir])).map((f) => f.slice(dir.length))).toEqual(['/a/b/one.jsonl', '/a/bad.jsonl', '/a/two.jsonl']);
    const { store } = tempStore();
    const r = await harvestFiles([dir, join(dir, 'missing')], deps(store));
    expect(r.files).toBe(3);
    expect(r.harvested).toBe(2);
    expect(r.failed.map((f) => f.file.slice(dir.length))).toEqual(['/missing', '/a/bad.jsonl']);
    expect(r.failed[1]?.error).toMatch(/no transcript line could be parsed/);
  });
});

describe('sessions from events', () => {
  it('drops a rewound branch but keeps history across the agent’s own compaction', () => {
    const m = (id: string): Message => ({ id, role: 'user', text: id });
    const s = sessionFromEvents('s', [
      { type: 'meta', meta: { cwd: '/w' } },
      { type: 'message', message: m('a') },
      { type: 'message', message: m('b') },
      { type: 'truncate', keepThroughId: 'a', reason: 'rewind' },
      { type: 'message', message: m('c') },
      { type: 'reset', reason: 'compacted' },
      { type: 'message', message: m('d') },
      { type: 'turn-end' },
      { type: 'meta', meta: { model: 'gpt-5' } },
    ]);
    expect(s.messages.map((x) => x.id)).toEqual(['a', 'c', 'd']);
    expect(s.meta).toEqual({ cwd: '/w', model: 'gpt-5' });
    expect(s.turnEnds).toBe(1);
  });

  it('skips empty and low-value sessions, remembering them', async () => {
    const { store } = tempStore();
    const empty = await harvestSession({ sessionId: 'e', messages: [{ id: '1', role: 'system', text: 'x' }] }, deps(store));
    expect(empty.skipped).toBe('empty');
    const tiny = await harvestSession({ sessionId: 't', messages: [{ id: '1', role: 'user', text: 'hi' }] }, { ...deps(store), minValue: 0.9 });
    expect(tiny.skipped).toBe('low-value');
    expect(tiny.value.score).toBeGreaterThan(0);
    expect(store.harvestedSession('t')).toMatchObject({ skipped: 'low-value', templateId: null });
    expect(store.count()).toBe(0);
  });
});
