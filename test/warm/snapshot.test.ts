/**
 * The warm snapshot: written from a real SQLite template store, it must answer every read query
 * the bootstrap makes exactly as the store does (so the hook's daemon-down bootstrap equals the
 * store's), stay owner-only, and be refused — never guessed at — when it is not ours.
 */
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { harvestFiles } from '../../src/harvest/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { matchTerms } from '../../src/store/fts.js';
import type { TemplateStore } from '../../src/store/templates.js';
import { isContextdError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/logger.js';
import { bootstrap } from '../../src/warm/index.js';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';
import { fts5Tokens, parseWarmSnapshot, readWarmSnapshot, type SnapshotTemplateSource } from '../../src/warm/snapshot-source.js';
import { buildWarmSnapshot, encodeWarmSnapshot, refreshWarmSnapshot, writeWarmSnapshot } from '../../src/warm/snapshot.js';
import { generatedCorpus, writeTranscripts } from '../fixtures/transcripts.js';
import { cleanup, tempDir, tempStore } from '../harvest/fixtures.js';

const counter = createTokenCounter();
const NOW = Date.UTC(2026, 10, 1);
const WORDS = ['fix', 'date', 'parser', 'offset', 'widgets', 'test', 'zone', 'the', 'parse_date', 'date_parse', 'src/parser.ts', 'npm', 'café', 'build', 'failing'];

let store: TemplateStore;
let stateDir: string;

beforeAll(async () => {
  const dir = tempDir();
  writeTranscripts(join(dir, 'sessions'), generatedCorpus());
  ({ store } = tempStore(dir));
  stateDir = join(dir, 'state');
  const summary = await harvestFiles([join(dir, 'sessions')], { store, tokenCounter: counter, logger: silentLogger() });
  expect(summary.harvested).toBeGreaterThan(2);
});
afterAll(() => cleanup());

/** The snapshot of `store` as the hook reads it: encoded to the file's text, then parsed. */
function snapshotOf(s: TemplateStore): SnapshotTemplateSource {
  return parseWarmSnapshot(encodeWarmSnapshot(buildWarmSnapshot(s, NOW)));
}

describe('warm snapshot', () => {
  it('is written owner-only and read back as what the store holds', () => {
    const r = writeWarmSnapshot(store, stateDir, NOW);
    expect(r).toMatchObject({ written: true, templates: store.count() });
    const path = join(stateDir, WARM_SNAPSHOT_FILE);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const source = readWarmSnapshot(stateDir);
    expect(source?.writtenAt).toBe(NOW);
    const file = buildWarmSnapshot(store, NOW);
    // The comparisons below mean something only if there is knowledge, repo knowledge and patterns to compare.
    expect(file.knowledge.length).toBeGreaterThan(0);
    expect(Object.keys(file.repoKnowledge).length).toBeGreaterThan(0);
    expect(file.patterns.length).toBeGreaterThan(0);
    expect(source?.list().map((t) => t.id)).toEqual(store.list().map((t) => t.id));
    for (const t of store.list()) expect(source?.get(t.id, NOW + 86_400_000)).toEqual(store.get(t.id, NOW + 86_400_000));
  });

  it('is written through no symlink planted at a temp name, and is owner-only over an existing file', () => {
    const dir = join(tempDir(), 'state');
    mkdirSync(dir);
    const path = join(dir, WARM_SNAPSHOT_FILE);
    writeFileSync(path, '{}', { mode: 0o644 });
    const victim = join(tempDir(), 'victim.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, `${path}.${process.pid}.tmp`); // the pid-based temp name once used
    expect(writeWarmSnapshot(store, dir, NOW)).toMatchObject({ written: true });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readWarmSnapshot(dir)?.writtenAt).toBe(NOW);
  });

  it('answers search, list, knowledge and patterns as the SQLite store does (property)', () => {
    const source = snapshotOf(store);
    const repos = [...new Set(store.list().map((t) => t.repo)), 'acme/none', ''];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 8 }), fc.constantFrom(...repos), (words, repo) => {
        const terms = matchTerms(words.join(' ')).concat(words.filter((w) => w.includes('_')));
        const fromStore = store.search(terms, 60);
        const fromSnapshot = source.search(terms, 60);
        expect(fromSnapshot.map((h) => h.templateId).sort()).toEqual(fromStore.map((h) => h.templateId).sort());
        const rankOf = new Map(fromStore.map((h) => [h.templateId, h.rank]));
        for (const h of fromSnapshot) expect(h.rank).toBeCloseTo(rankOf.get(h.templateId) ?? NaN, 6);
        const name = repo.split('/').pop() ?? '';
        expect(source.list({ repoName: name, limit: 20 })).toEqual(store.list({ repoName: name, limit: 20 }));
        const ids = fromStore.slice(0, 3).map((h) => h.templateId);
        expect(source.knowledgeFor(ids, repo || undefined, NOW + 1000)).toEqual(store.knowledgeFor(ids, repo || undefined, NOW + 1000));
        expect(source.patterns(repo || undefined)).toEqual(store.patterns(repo || undefined));
      }),
      { numRuns: 80 },
    );
  });

  it('treats words that name Object.prototype members as plain words (constructor, toString)', () => {
    const source = snapshotOf(store);
    for (const extra of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const terms = ['parser', extra];
      const fromSnapshot = source.search(terms, 60);
      expect(fromSnapshot.every((h) => Number.isFinite(h.rank))).toBe(true);
      expect(fromSnapshot.map((h) => h.templateId).sort()).toEqual(store.search(terms, 60).map((h) => h.templateId).sort());
    }
  });

  it('gives the same bootstrap as the store for any task, repo and budget (property)', () => {
    const source = snapshotOf(store);
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 10 }),
        fc.option(fc.constantFrom('acme/dateparse', 'octo/widgets', 'acme/none', '/home/u/src/widgets')),
        fc.integer({ min: 50, max: 3000 }),
        (words, repo, budgetTokens) => {
          const request = { task: words.join(' '), repo: repo ?? undefined, budgetTokens };
          const viaStore = bootstrap(request, { store, tokenCounter: counter, now: () => NOW });
          const viaSnapshot = bootstrap(request, { store: source, tokenCounter: counter, now: () => NOW });
          expect(viaSnapshot).toEqual(viaStore);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('tokenizes like FTS5 unicode61: letters and digits, lower case, no diacritics', () => {
    expect(fts5Tokens('Fix parse_date in src/Parser.ts — Café 42x')).toEqual(['fix', 'parse', 'date', 'in', 'src', 'parser', 'ts', 'cafe', '42x']);
  });

  it('refuses what is not a current snapshot, naming why', () => {
    const bad = (text: string): string => {
      try {
        parseWarmSnapshot(text, 'x.json');
      } catch (err) {
        expect(isContextdError(err, 'WARM_SNAPSHOT_INVALID')).toBe(true);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    const [headLine, ...details] = encodeWarmSnapshot(buildWarmSnapshot(store, NOW)).split('\n');
    const good = JSON.parse(headLine!) as Record<string, unknown> & { templates: { detail: [number, number] }[] };
    const withHeader = (header: unknown): string => [JSON.stringify(header), ...details].join('\n');
    expect(bad('{"format":"contextd-warm-snapshot","vers')).toMatch(/not JSON/);
    expect(bad('[]')).toMatch(/not a contextd warm snapshot/);
    expect(bad(withHeader({ ...good, version: 99 }))).toMatch(/version 99/);
    // A version-1 file (one JSON document, before detail lines) is refused, not misread.
    expect(bad(JSON.stringify({ ...good, version: 1 }))).toMatch(/version 1, this contextd reads 2/);
    expect(bad(withHeader({ ...good, patterns: undefined }))).toMatch(/incomplete/);
    expect(bad(withHeader({ ...good, templates: [{ id: 'x' }] }))).toMatch(/malformed template/);
    // A detail range past the end of the file (a truncated file) is refused up front.
    const [first, ...others] = good.templates;
    expect(bad(withHeader({ ...good, templates: [{ ...first, detail: [0, 1e9] }, ...others] }))).toMatch(/malformed template/);
    expect(parseWarmSnapshot(withHeader(good)).list()).toHaveLength(store.count());
  });

  it('parses a template\'s detail line only when a query needs it, and refuses a corrupt one when it does', () => {
    const text = encodeWarmSnapshot(buildWarmSnapshot(store, NOW));
    const [headLine, firstDetail, ...rest] = text.split('\n');
    // Same length, not JSON: the header's byte ranges still hold, the detail does not parse.
    const corrupt = [headLine, '#'.repeat(Buffer.byteLength(firstDetail!, 'utf8')), ...rest].join('\n');
    const source = parseWarmSnapshot(corrupt, 'x.json');
    const [broken, ...fine] = store.list();
    // Queries that read only the header still work, as do the other templates' details...
    expect(source.list().map((t) => t.id)).toEqual(store.list().map((t) => t.id));
    for (const t of fine) expect(source.get(t.id, NOW)).toEqual(store.get(t.id, NOW));
    // ...and the corrupt one is refused with the snapshot's error, so the hook falls back to the store.
    let err: unknown;
    try {
      source.get(broken!.id, NOW);
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err, 'WARM_SNAPSHOT_INVALID')).toBe(true);
    expect((err as Error).message).toContain(`unreadable detail of template ${broken!.id}`);
  });

  it('refuses a detail line that is JSON but not a detail (an item that is null, or lacks its evidence), and a term table that is null', () => {
    const text = encodeWarmSnapshot(buildWarmSnapshot(store, NOW));
    const [headLine, firstDetail, ...rest] = text.split('\n');
    const size = Buffer.byteLength(firstDetail!, 'utf8');
    const broken = store.list()[0]!;
    // Padded with spaces (still JSON) to the length the header locates.
    const withDetail = (detail: unknown): SnapshotTemplateSource => {
      const json = JSON.stringify(detail);
      expect(Buffer.byteLength(json, 'utf8')).toBeLessThanOrEqual(size);
      return parseWarmSnapshot([headLine, json.padEnd(size, ' '), ...rest].join('\n'), 'x.json');
    };
    const refused = (query: () => unknown): string => {
      try {
        query();
      } catch (err) {
        expect(isContextdError(err, 'WARM_SNAPSHOT_INVALID')).toBe(true);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused(() => withDetail({ items: [null], body: 'fix the parser' }).get(broken.id, NOW))).toContain(`malformed detail of template ${broken.id}`);
    expect(refused(() => withDetail({ items: [{ id: 1, kind: 'command', text: 'npm test' }], body: '' }).get(broken.id, NOW))).toContain('malformed detail');
    expect(refused(() => withDetail({ items: [], body: null }).get(broken.id, NOW))).toContain('malformed detail');
    // A well-formed detail of the same length is read.
    expect(withDetail({ items: [], body: '' }).get(broken.id, NOW)?.items).toEqual([]);

    const header = JSON.parse(headLine!) as { templates: { search: Record<string, unknown> }[]; knowledge: unknown[]; repoKnowledge: unknown; patterns: unknown[] };
    const [first, ...others] = header.templates;
    const withHeader = (h: unknown): string => [JSON.stringify(h), firstDetail, ...rest].join('\n');
    expect(refused(() => parseWarmSnapshot(withHeader({ ...header, templates: [{ ...first, search: { ...first!.search, tf: null } }, ...others] }), 'x.json'))).toMatch(/malformed template/);
    expect(refused(() => parseWarmSnapshot(withHeader({ ...header, knowledge: [null, ...header.knowledge] }), 'x.json'))).toMatch(/malformed knowledge item/);
    expect(refused(() => parseWarmSnapshot(withHeader({ ...header, repoKnowledge: { 'acme/x': 7 } }), 'x.json'))).toMatch(/malformed repository knowledge list/);
    expect(refused(() => parseWarmSnapshot(withHeader({ ...header, patterns: [null] }), 'x.json'))).toMatch(/malformed user pattern/);
    expect(refused(() => parseWarmSnapshot(withHeader({ ...header, templates: [{ ...first, knowledgeIds: 3 }, ...others] }), 'x.json'))).toMatch(/malformed template/);
    // The header as written is read.
    expect(parseWarmSnapshot(withHeader(header)).list()).toHaveLength(store.count());
  });

  it('is not written past its limits, and an older one is removed then (the hook reads the store)', () => {
    expect(writeWarmSnapshot(store, stateDir, NOW).written).toBe(true);
    const path = join(stateDir, WARM_SNAPSHOT_FILE);
    expect(writeWarmSnapshot(store, stateDir, NOW, { maxTemplates: 1 })).toMatchObject({ written: false, skipped: expect.stringMatching(/templates, over 1$/) });
    expect(existsSync(path)).toBe(false);
    expect(writeWarmSnapshot(store, stateDir, NOW, { maxBytes: 1000 })).toMatchObject({ written: false, skipped: expect.stringMatching(/bytes, over 1000$/) });
    expect(existsSync(path)).toBe(false);
    expect(readWarmSnapshot(stateDir)).toBeUndefined();
  });

  it('a failed refresh removes the stale snapshot instead of leaving it to be served', () => {
    const { db, store: other } = tempStore();
    const otherState = join(db.name, '..');
    expect(writeWarmSnapshot(other, otherState, NOW).written).toBe(true);
    db.close(); // every read of the store now fails
    expect(refreshWarmSnapshot(other, otherState, silentLogger(), NOW)).toBeUndefined();
    expect(existsSync(join(otherState, WARM_SNAPSHOT_FILE))).toBe(false);
  });
});
