import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { analyseFragmentText, decodeAnalysis, DERIVATION_VERSION, derivedDigestOf, encodeAnalysis, SessionModel, TERM_KEY_CHARS, type DerivedDataCache, type TextAnalysis } from '../../src/model/index.js';
import { MIN_CACHED_TEXT_CHARS } from '../../src/model/derived.js';
import { generateSession } from '../../src/bench/retention.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { TermIndex } from '../../src/model/relevance.js';
import { contentTermKeys, lineHashes, MAX_ANALYSED_CHARS } from '../../src/text/index.js';
import { MapCache, ownerOf } from './helpers.js';


const counter = createTokenCounter();

/** Where a row's term counts start (u32 words): the header's 10 words and the 64 signature slots. */
const COUNTS_WORD = 74;


function build(events: readonly TranscriptEvent[], derivedCache?: DerivedDataCache): SessionModel {
  const m = new SessionModel({ sessionId: 'd', tokenCounter: counter, budgetTokens: 200_000, ...(derivedCache ? { derivedCache } : {}) });
  m.applyAll(structuredClone(events));
  return m;
}

const session = generateSession(7, 12);

describe('derived data (term stats, fingerprints)', () => {
  it('round-trips through its encoding, for texts with and without terms and shingles', () => {
    for (const text of ['', 'ok', 'the the the', 'Running the pool tests again with the new timeout (3).', 'ünïcode wörds — 日本語 テキスト and src/model/index.ts '.repeat(20)]) {
      const a = analyseFragmentText(text);
      expect(decodeAnalysis(encodeAnalysis(a, ownerOf(text)), ownerOf(text))).toEqual(a);
    }
  });

  it('holds the content-term keys of texts up to TERM_KEY_CHARS chars and the line hashes of texts up to MAX_ANALYSED_CHARS', () => {
    const short = 'The retry loop in Pool.ts reads config.max_retries.\nThe retry loop in Pool.ts reads config.max_retries.\n  second   line ';
    const a = analyseFragmentText(short);
    expect(a.termKeys).toEqual(contentTermKeys(short));
    expect(a.lineHashes).toEqual(lineHashes(short));
    const long = 'pool_size line\n'.repeat(Math.ceil(TERM_KEY_CHARS / 15) + 1);
    const b = analyseFragmentText(long);
    expect(b.termKeys).toBeUndefined();
    expect(b.lineHashes).toEqual(lineHashes(long));
    const huge = 'x'.repeat(MAX_ANALYSED_CHARS + 1);
    const c = analyseFragmentText(huge);
    expect(c.termKeys).toBeUndefined();
    expect(c.lineHashes).toBeUndefined();
    for (const [text, x] of [[short, a], [long, b], [huge, c]] as const) expect(decodeAnalysis(encodeAnalysis(x, ownerOf(text)), ownerOf(text))).toEqual(x);
  });

  it('gives the planner the keys and line hashes of every message whose whole text is one fragment, read back from a cache after a rebuild', () => {
    const cache = new MapCache();
    const withReasoning: TranscriptEvent = { type: 'message', message: { id: 'r', role: 'assistant', text: 'Pool size set to 8 in config.ts.', reasoning: 'The pool_size default of 4 is too small.' } };
    const events = [...session.events, withReasoning];
    const first = build(events, cache);
    expect(first.messages().every((m) => derivedDigestOf(m) === undefined)).toBe(true); // nothing derived yet
    first.sections();
    const check = (model: SessionModel): number => {
      let keyed = 0;
      for (const m of model.messages()) {
        const keys = derivedDigestOf(m);
        if (m.reasoning || (m.role === 'assistant' && m.toolCalls?.length)) {
          if (m.reasoning) expect(keys).toBeUndefined();
          continue;
        }
        expect(keys?.termKeys).toEqual(contentTermKeys(m.text));
        expect(keys?.lineHashes).toEqual(m.role === 'tool' ? lineHashes(m.text) : undefined);
        keyed++;
      }
      return keyed;
    };
    const keyed = check(first);
    expect(keyed).toBeGreaterThan(20);
    // Stored rows hold the optional parts only for texts that are some message's whole text:
    // term keys for a message without calls or reasoning or a tool result, line hashes for a tool result.
    const wholeTexts = new Map<string, string>();
    for (const m of first.messages()) if (!m.reasoning && !(m.role === 'assistant' && m.toolCalls?.length)) wholeTexts.set(m.text, m.role);
    let calls = 0;
    for (const [text, row] of cache.rows) {
      const a = decodeAnalysis(row, ownerOf(text));
      const role = wholeTexts.get(text);
      expect([a?.termKeys !== undefined, a?.lineHashes !== undefined], text.slice(0, 60)).toEqual([role !== undefined, role === 'tool']);
      if (role === undefined) calls++;
    }
    expect(calls).toBeGreaterThan(0);
    cache.found = 0;
    const again = build(events, cache);
    again.sections();
    expect(cache.found).toBeGreaterThan(20);
    expect(check(again)).toBe(keyed);
    again.dropDerived();
    expect(again.messages().every((m) => derivedDigestOf(m) === undefined)).toBe(true);
  });

  it('a text stored without a part a later fragment needs gets it written back; a text met twice in one pass is written once, with both', () => {
    const text = `pool_size = 8 in config.ts\n${'Retrying the pool connection after a timeout. '.repeat(4)}\nsecond line`;
    const user: TranscriptEvent = { type: 'message', message: { id: 'u', role: 'user', text } };
    const call: TranscriptEvent = { type: 'message', message: { id: 'a', role: 'assistant', text: '', toolCalls: [{ id: 'c1', name: 'read', arguments: '{"path":"notes.txt"}' }] } };
    const result: TranscriptEvent = { type: 'message', message: { id: 't', role: 'tool', toolCallId: 'c1', text } };
    const stored = (cache: MapCache): TextAnalysis | undefined => decodeAnalysis(cache.rows.get(text) as Uint8Array, ownerOf(text));
    // the user message first, alone: its row has the term keys, no line hashes (no reader wants them)
    const cache = new MapCache();
    build([user], cache).sections();
    expect([stored(cache)?.termKeys, stored(cache)?.lineHashes]).toEqual([contentTermKeys(text), undefined]);
    // a later tool result of the same text reads that row, works the line hashes out and writes them back
    const later = build([call, result], cache);
    later.sections();
    expect(stored(cache)?.lineHashes).toEqual(lineHashes(text));
    const tool = later.messages().find((m) => m.role === 'tool');
    expect(tool && derivedDigestOf(tool)?.lineHashes).toEqual(lineHashes(text));
    // both in one pass: one row, with both parts
    const both = new MapCache();
    build([user, call, result], both).sections();
    expect([stored(both)?.termKeys, stored(both)?.lineHashes]).toEqual([contentTermKeys(text), lineHashes(text)]);
  });

  it('decodes a row wherever its bytes sit: a Buffer inside a larger pool, at any offset', () => {
    const text = 'ünïcode wörds and src/model/index.ts, config.max_retries = 3 '.repeat(8);
    const a = analyseFragmentText(text);
    const row = encodeAnalysis(a, ownerOf(text));
    for (const offset of [0, 1, 3, 4, 8, 13]) {
      const pool = Buffer.alloc(offset + row.length + 11, 0xab);
      pool.set(row, offset);
      // a Buffer's slice is a view of the pool, as rows read from SQLite may be
      expect(decodeAnalysis(pool.subarray(offset, offset + row.length), ownerOf(text))).toEqual(a);
      expect(decodeAnalysis(Buffer.from(pool).slice(offset, offset + row.length), ownerOf(text))).toEqual(a);
      // read in place where aligned, but what it keeps is its own: no array holds on to the pool
      const d = decodeAnalysis(pool.subarray(offset, offset + row.length), ownerOf(text));
      const kept = [d?.stats.hashes, d?.stats.counts, d?.features.signature, d?.termKeys, d?.lineHashes].filter((x) => x !== undefined);
      expect(kept.length).toBeGreaterThanOrEqual(3);
      for (const x of kept) expect(x.buffer).not.toBe(pool.buffer);
    }
  });

  it('refuses bytes of another version, truncated or corrupted, instead of trusting them', () => {
    const text = 'The retry loop in pool.ts reads config.max_retries before each attempt; the test expects 3 attempts.';
    const a = analyseFragmentText(text);
    const owner = ownerOf(text);
    const good = encodeAnalysis(a, owner);
    expect(decodeAnalysis(good, owner)).toEqual(a);
    // A row of another text sharing the key (a collision): refused, so the text is analysed again.
    expect(decodeAnalysis(good, { chars: owner.chars, check: owner.check ^ 1 })).toBeUndefined();
    expect(decodeAnalysis(good, { chars: owner.chars + 1, check: owner.check })).toBeUndefined();
    const other = good.slice();
    new DataView(other.buffer).setUint32(0, DERIVATION_VERSION + 1, true);
    expect(decodeAnalysis(other, owner)).toBeUndefined();
    for (const n of [0, 10, 4 * COUNTS_WORD, good.length - 3]) expect(decodeAnalysis(good.subarray(0, n), owner)).toBeUndefined();
    const badCount = good.slice();
    new DataView(badCount.buffer).setUint32(4 * COUNTS_WORD, 99, true); // a term count no longer sums to the length
    expect(decodeAnalysis(badCount, owner)).toBeUndefined();
    const badHash = good.slice();
    new DataView(badHash.buffer).setFloat64(badHash.length - 8, 0.5, true); // not a 52-bit hash (the last line hash)
    expect(decodeAnalysis(badHash, owner)).toBeUndefined();
    const lines = a.lineHashes?.length ?? 0;
    const badKey = good.slice();
    new DataView(badKey.buffer).setFloat64(badKey.length - 8 * (lines + 1), 2 ** 53, true); // the last term key, out of range
    expect(decodeAnalysis(badKey, owner)).toBeUndefined();
    const otherHash = good.slice();
    otherHash[otherHash.length - 8] = (otherHash[otherHash.length - 8] as number) ^ 1; // still a valid hash, another term: the checksum tells
    expect(decodeAnalysis(otherHash, owner)).toBeUndefined();
    const badSig = good.slice();
    for (let i = 10; i < COUNTS_WORD; i++) new DataView(badSig.buffer).setUint32(i * 4, 0xffffffff, true); // shingles but an empty fingerprint
    expect(decodeAnalysis(badSig, owner)).toBeUndefined();
  });

  it('refuses a row whose header words were damaged (the checksum covers them, not only the length check)', () => {
    // Swapped, header words 8 and 9 (content-term key count, line hash count) keep the row's
    // length, and here every value still passes the range checks.
    const text = `pool pool value\nsecond pool line\n${'x'.repeat(120)}`;
    const a = analyseFragmentText(text);
    const owner = ownerOf(text);
    expect([a.termKeys?.length, a.lineHashes?.length]).toEqual([5, 3]);
    const swapped = encodeAnalysis(a, owner).slice();
    const view = new DataView(swapped.buffer);
    const keys = view.getUint32(8 * 4, true);
    view.setUint32(8 * 4, view.getUint32(9 * 4, true), true);
    view.setUint32(9 * 4, keys, true);
    expect(decodeAnalysis(swapped, owner)).toBeUndefined();
    // One more shingle than counted (word 3): a value no structural check can tell from the right one.
    const shingles = encodeAnalysis(a, owner).slice();
    const sv = new DataView(shingles.buffer);
    sv.setUint32(3 * 4, sv.getUint32(3 * 4, true) + 1, true);
    expect(decodeAnalysis(shingles, owner)).toBeUndefined();
  });

  it('is not computed until scores are read, and scores read once at the end equal those read after every append', () => {
    const cache = new MapCache();
    const lazy = build(session.events, cache);
    expect(lazy.tokens()).toBeGreaterThan(10_000);
    expect(cache.asked).toBe(0); // built, counted, never derived
    const step = new SessionModel({ sessionId: 'd', tokenCounter: counter, budgetTokens: 200_000 });
    for (const e of structuredClone(session.events)) {
      step.apply(e);
      step.sections();
    }
    expect(lazy.sections()).toEqual(step.sections());
    expect(cache.asked).toBeGreaterThan(0);
  });

  it('read back from a cache gives exactly the scores computed from scratch, without analysing again', () => {
    const cache = new MapCache();
    const first = build(session.events, cache);
    const fromScratch = first.sections();
    const stored = cache.rows.size;
    expect(stored).toBeGreaterThan(20);
    expect([...cache.rows.keys()].every((t) => t.length >= MIN_CACHED_TEXT_CHARS)).toBe(true);
    cache.asked = 0;
    const again = build(session.events, cache);
    expect(again.sections()).toEqual(fromScratch);
    expect(cache.found).toBe(cache.asked); // every text asked for was found
    expect(cache.rows.size).toBe(stored);
    // A corrupted entry is recomputed (and written back), the scores unchanged.
    const [text] = [...cache.rows.keys()];
    cache.rows.set(text as string, new Uint8Array(12));
    expect(build(session.events, cache).sections()).toEqual(fromScratch);
    const recomputed = decodeAnalysis(cache.rows.get(text as string) as Uint8Array, ownerOf(text as string));
    const full = analyseFragmentText(text as string);
    expect([recomputed?.stats, recomputed?.features]).toEqual([full.stats, full.features]);
    // the optional parts as the fragment's readers asked for them: each absent or exact
    for (const part of ['termKeys', 'lineHashes'] as const) if (recomputed?.[part]) expect(recomputed[part]).toEqual(full[part]);
  });

  it('dropped under memory pressure and derived again: same scores, and appends after it still count', () => {
    const m = build(session.events);
    const before = m.sections();
    m.dropDerived();
    expect(m.sections()).toEqual(before);
    m.dropDerived();
    const extra: TranscriptEvent = { type: 'message', message: { id: 'late', role: 'user', text: 'Now make the retry loop in pool.ts honour config.max_retries.' } };
    m.apply(extra);
    const ref = build([...session.events, extra]);
    expect(m.sections()).toEqual(ref.sections());
  });
});

/**
 * A fixed text exercising the derivation's parts: prose with stop words, code, paths, numbers,
 * case, punctuation, non-ASCII, and repeated phrases (shingles).
 */
const GOLDEN_TEXT = [
  'The parser in src/parse/date.ts drops the UTC offset: parseDate("2024-03-01T10:00:00+02:00") returns 08:00Z.',
  'function parseDate(input: string): Date { const m = /^(\\d{4})-(\\d{2})/.exec(input); return new Date(Date.UTC(+m[1], +m[2] - 1)); }',
  'Error: expected 2024-03-01T08:00:00.000Z to equal 2024-03-01T10:00:00.000+02:00 at test/parse/date.test.ts:42:17',
  'Zürich naïve café — 東京 — the offset is lost, the offset is lost, the offset is lost again after the fix was reverted.',
  'npm test -- --run test/parse  # 3 failed, 118 passed; FAIL_FAST=1 MAX_RETRIES=0x1f',
].join('\n');

/**
 * The derivation of GOLDEN_TEXT as it is stored: DERIVATION_VERSION and the SHA-256 of its
 * encoding. Stored rows are trusted by version alone, so any change to what is derived (word
 * split, stop words, term hashing, shingles, MinHash) or to the encoding must bump the version;
 * this pin makes a change that forgets to fail.
 */
const GOLDEN = { version: 6, sha256: 'da62b1d7f74933b27c251e5e9e6a21a515e27654c4965f04556b5dff2df6253f' };

describe('derivation golden', () => {
  it('a fixed text derives and encodes to pinned bytes; a change must bump DERIVATION_VERSION', () => {
    const bytes = encodeAnalysis(analyseFragmentText(GOLDEN_TEXT), { chars: GOLDEN_TEXT.length, check: 0x5eed1234 });
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    expect(DERIVATION_VERSION, `DERIVATION_VERSION is now ${DERIVATION_VERSION}: pin GOLDEN = { version: ${DERIVATION_VERSION}, sha256: '${sha256}' }`).toBe(GOLDEN.version);
    expect(sha256, 'derivation changed: bump DERIVATION_VERSION (then pin the new version and hash in GOLDEN)').toBe(GOLDEN.sha256);
  });
});

describe('term index', () => {
  it('gives each distinct term hash one id, stable through table growth, and merges vectors in first-seen order', () => {
    const index = new TermIndex();
    const hashes = Float64Array.from({ length: 20_000 }, (_, i) => (i * 2654435761) % 2 ** 52); // spread, some above 2^32
    const first = index.intern({ hashes, counts: new Uint32Array(hashes.length).fill(1), length: hashes.length });
    expect(index.vocabulary).toBe(20_000);
    const again = index.intern({ hashes: hashes.slice().reverse(), counts: new Uint32Array(hashes.length).fill(2), length: 2 * hashes.length });
    expect(index.vocabulary).toBe(20_000);
    for (let i = 0; i < 20_000; i += 997) expect(again.pairs[2 * (19_999 - i)]).toBe(first.pairs[2 * i]);
    const a = index.intern({ hashes: Float64Array.from([5, 7, 9]), counts: Uint32Array.from([1, 2, 3]), length: 6 });
    const b = index.intern({ hashes: Float64Array.from([9, 11]), counts: Uint32Array.from([4, 5]), length: 9 });
    const merged = index.merge([a, b]);
    const id = (h: number): number => index.intern({ hashes: Float64Array.from([h]), counts: Uint32Array.from([1]), length: 1 }).pairs[0] as number;
    expect([...merged.pairs]).toEqual([id(5), 1, id(7), 2, id(9), 7, id(11), 5]);
    expect(merged.length).toBe(15);
    expect(index.merge([a, b])).toEqual(merged); // the merge's scratch slots are left clean
  });
});
