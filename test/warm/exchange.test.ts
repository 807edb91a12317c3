import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { harvestSession, redactAll } from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { TemplateStore, allPatterns } from '../../src/store/templates.js';
import { silentLogger } from '../../src/util/logger.js';
import { EXPORT_FORMAT, exportTemplates, importTemplates } from '../../src/warm/index.js';
import { SessionBuilder, cleanup, codingSession, plantedSecrets, tempDir, tempStore } from '../harvest/fixtures.js';

afterEach(cleanup);
const deps = (store: TemplateStore) => ({ store, tokenCounter: createTokenCounter(), logger: silentLogger() });

async function seeded(): Promise<TemplateStore> {
  const { store } = tempStore();
  await harvestSession({ sessionId: 'a', messages: codingSession().messages, meta: { repo: 'acme/parser' } }, deps(store));
  await harvestSession({ sessionId: 'b', messages: codingSession({ task: 'fix the failing parser test again. Never use any.' }).messages, meta: { repo: 'acme/parser' } }, deps(store));
  const docs = new SessionBuilder().user('summarize docs/guide.md into README.md').call('read_file', { path: 'docs/guide.md' }, '# Guide').call('write_file', { path: 'README.md' }, 'ok');
  await harvestSession({ sessionId: 'c', messages: docs.messages, meta: { repo: 'acme/parser' } }, deps(store));
  return store;
}

describe('export / import', () => {
  it('round-trips templates, items, knowledge and patterns into a fresh store', async () => {
    const src = await seeded();
    const file = join(tempDir(), 'export.json');
    const out = await exportTemplates(src, file);
    expect(out.templates).toBe(src.count());
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { format: string; schemaVersion: number; templates: unknown[] };
    expect(doc.format).toBe(EXPORT_FORMAT);
    expect(doc.schemaVersion).toBe(1);

    const { store: dst, db } = tempStore();
    const report = await importTemplates(dst, file, redactAll);
    expect(report.bad).toEqual([]);
    expect(report.templates.created).toBe(src.count());
    for (const s of src.list()) {
      const a = src.get(s.id, 0);
      const b = dst.get(s.id, 0);
      expect(b).toBeDefined();
      expect(b?.items.map((i) => [i.kind, i.text, i.evidence])).toEqual(a?.items.map((i) => [i.kind, i.text, i.evidence]));
      expect(b?.knowledge.map((k) => [k.category, k.text, k.evidence])).toEqual(a?.knowledge.map((k) => [k.category, k.text, k.evidence]));
      expect(b?.sessions).toEqual(a?.sessions);
    }
    expect(allPatterns(db).length).toBe(allPatterns(src.db).length);
    // Importing the same file again duplicates nothing and inflates no evidence.
    const again = await importTemplates(dst, file, redactAll);
    expect(again.templates).toEqual({ created: 0, merged: src.count() });
    const first = src.list()[0]?.id ?? '';
    expect(dst.get(first, 0)?.items.map((i) => i.evidence)).toEqual(src.get(first, 0)?.items.map((i) => i.evidence));
    expect(dst.search(['parser']).length).toBeGreaterThan(0);
  });

  it('writes through no planted temp-file symlink and leaves an owner-only file, even over an existing one', async () => {
    const src = await seeded();
    const shared = tempDir();
    const victim = join(tempDir(), 'victim.txt');
    writeFileSync(victim, 'precious\n');
    const file = join(shared, 'templates.json');
    writeFileSync(file, '{}\n');
    chmodSync(file, 0o644);
    // another user of the folder plants the temp name an export used to take (pid-based)
    symlinkSync(victim, `${file}.tmp-${process.pid}`);
    const umask = process.umask(0);
    try {
      await exportTemplates(src, file);
    } finally {
      process.umask(umask);
    }
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((JSON.parse(readFileSync(file, 'utf8')) as { format: string }).format).toBe(EXPORT_FORMAT);
    // only the export and the planted link: no temp file left behind
    expect(readdirSync(shared).sort()).toEqual(['templates.json', `templates.json.tmp-${process.pid}`]);
  });

  it('reports bad records and keeps going; redacts secrets found in an import', async () => {
    const src = await seeded();
    const file = join(tempDir(), 'export.json');
    await exportTemplates(src, file);
    const doc = JSON.parse(readFileSync(file, 'utf8')) as { templates: unknown[]; patterns: unknown[] };
    const good = (doc.templates[0] ?? {}) as Record<string, unknown>;
    const secret = plantedSecrets(9).find((s) => s.kind === 'github-token');
    doc.templates = [
      { ...good, id: 't-aaaaaaaaaaaa', task: `deploy with ${secret?.text ?? ''}` },
      { ...good, id: 'not an id' },
      { ...good, taskType: 'cooking' },
      'garbage',
      { ...good, id: 't-bbbbbbbbbbbb', items: [{ kind: 'example', text: '', evidence: 1, updatedAt: 1 }] },
    ];
    doc.patterns = [{ kind: 'constraint', text: 'x', repo: '', sessionCount: 0, sessions: [], firstSeen: 0, lastSeen: 0 }];
    writeFileSync(file, JSON.stringify(doc));
    const { store: dst, db } = tempStore();
    const report = await importTemplates(dst, file, redactAll);
    expect(report.templates.created).toBe(1);
    expect(report.bad.map((b) => [b.kind, b.index])).toEqual([
      ['template', 1],
      ['template', 2],
      ['template', 3],
      ['template', 4],
      ['pattern', 0],
    ]);
    expect(report.bad[0]?.error).toMatch(/^id:/);
    expect(report.bad[1]?.error).toMatch(/^taskType:/);
    const t = dst.get('t-aaaaaaaaaaaa');
    expect(t?.task).toContain('[REDACTED:github-token]');
    for (const leak of secret?.mustNotLeak ?? []) expect(JSON.stringify(db.prepare('SELECT * FROM templates').all())).not.toContain(leak);
  });

  it('rejects a file that is not an export at all', async () => {
    const file = join(tempDir(), 'x.json');
    writeFileSync(file, JSON.stringify({ hello: 1 }));
    const { store } = tempStore();
    await expect(importTemplates(store, file, redactAll)).rejects.toThrow(/not a contextd template export/);
    writeFileSync(file, '{oops');
    await expect(importTemplates(store, file, redactAll)).rejects.toThrow(/cannot read template export/);
  });
});
