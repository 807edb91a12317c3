/**
 * Per-fragment derived data — term statistics (relevance) and the shingle fingerprint
 * (density) — computed from a fragment's text when a scoring pass first needs it, not at
 * ingest, and readable from a lasting cache keyed by the text (the daemon backs it with SQLite),
 * so a cold plan after a restart reads instead of re-analysing every message.
 *
 * The encoding is versioned: a change to how the data is derived (word split, stop words,
 * shingle size, MinHash bins) must bump DERIVATION_VERSION, so stored rows of the old
 * derivation are recomputed, never trusted.
 */
import { analyseText, contentTermKeys, FNV32_OFFSET_BASIS, FNV32_PRIME, hash52, lineHashes, MAX_ANALYSED_CHARS } from '../text/index.js';
import type { Message } from './messages.js';
import { featuresOfShingles, MINHASH_SLOTS, type DensityFeatures } from './density.js';

/** Bump on any change to what `analyseFragmentText` computes or to the encoding below (test/model/derived.test.ts pins a fixed text's encoding to fail when one is forgotten). */
export const DERIVATION_VERSION = 6;

/**
 * Term frequencies of a text with each term stood for by its 52-bit hash (`hash52`): the
 * model only ever compares terms, so no term string is kept or stored (two terms of a session
 * sharing a hash — about one chance in 10⁶ at 100k distinct terms — would count as one).
 */
export interface TermHashes {
  /** Distinct terms' hashes in first-seen order (exact integers below 2^52). */
  readonly hashes: Float64Array;
  readonly counts: Uint32Array;
  /** Number of terms (the BM25 document length): the sum of `counts`. */
  readonly length: number;
}

/** Texts up to this many chars also get their content-term keys (`TextAnalysis.termKeys`). */
export const TERM_KEY_CHARS = 20_000;

/** What a fragment's text gives: its term statistics and density fingerprint. */
export interface TextAnalysis {
  readonly stats: TermHashes;
  readonly features: DensityFeatures;
  /**
   * `contentTermKeys` of the text (the planner's reference index reads them for every message of
   * a session), for texts of at most TERM_KEY_CHARS chars when asked for (`AnalysisParts`);
   * else undefined.
   */
  readonly termKeys: Float64Array | undefined;
  /**
   * `lineHashes` of the text (the redundant-output detector compares tool outputs by them), for
   * texts of at most MAX_ANALYSED_CHARS chars when asked for (`AnalysisParts`); else undefined.
   */
  readonly lineHashes: Float64Array | undefined;
}

/**
 * A lasting memo of `TextAnalysis` by fragment text, injected by whoever owns storage.
 * `getMany` returns one entry per text (undefined when unknown or unreadable); `setMany`
 * takes what was computed (an implementation may write it later, in batches).
 * Implementations must return exactly what they were given for the same text.
 */
export interface DerivedDataCache {
  getMany(texts: readonly string[]): (TextAnalysis | undefined)[];
  setMany(entries: readonly { readonly text: string; readonly analysis: TextAnalysis }[]): void;
}

/** Texts shorter than this are analysed without a cache lookup: cheaper than a round trip, and not worth a stored row. */
export const MIN_CACHED_TEXT_CHARS = 128;

/** Which optional parts of an analysis to compute: those the fragment's readers use. */
export interface AnalysisParts {
  readonly termKeys: boolean;
  readonly lineHashes: boolean;
}

/** Every optional part. */
export const ALL_ANALYSIS_PARTS: AnalysisParts = Object.freeze({ termKeys: true, lineHashes: true });

/** Analyses one fragment's text (one pass over its words); the optional parts only when `parts` asks for them. */
export function analyseFragmentText(text: string, parts: AnalysisParts = ALL_ANALYSIS_PARTS): TextAnalysis {
  const { stats, shingles } = analyseText(text);
  const hashes = new Float64Array(stats.terms.length);
  for (let i = 0; i < hashes.length; i++) hashes[i] = hash52(stats.terms[i] as string);
  const base = { stats: { hashes, counts: stats.counts, length: stats.length }, features: featuresOfShingles(shingles), termKeys: undefined, lineHashes: undefined };
  return withParts(base, text, parts);
}

/**
 * `analysis` (of `text`) with the optional parts `parts` asks for and it lacks worked out;
 * itself when it lacks none. A text stored without a part (first analysed for a fragment whose
 * readers did not need it) gets it when a fragment that does reads the row.
 */
export function withParts(analysis: TextAnalysis, text: string, parts: AnalysisParts): TextAnalysis {
  const keys = parts.termKeys && !analysis.termKeys && text.length <= TERM_KEY_CHARS;
  const lines = parts.lineHashes && !analysis.lineHashes && text.length <= MAX_ANALYSED_CHARS;
  if (!keys && !lines) return analysis;
  return { ...analysis, termKeys: keys ? contentTermKeys(text) : analysis.termKeys, lineHashes: lines ? lineHashes(text) : analysis.lineHashes };
}

/**
 * A digest of a message's whole text: what the planner reads of every message (its content-term
 * keys, and a tool result's line hashes), kept from its fragment's derived data.
 */
export interface TextDigest {
  /** `contentTermKeys(m.text)`, when the analysis had them. */
  readonly termKeys: Float64Array | undefined;
  /** `lineHashes(m.text)` of a tool result, when the analysis had them. */
  readonly lineHashes: Float64Array | undefined;
}

/**
 * The digests of messages whose whole text is one derived fragment (a message of text alone, or
 * a tool result): read from the derived-data cache on a cold plan, so the planner does not scan
 * every message's text again. Only the digest's two arrays are kept, not the whole analysis.
 */
const digestByMessage = new WeakMap<Message, TextDigest>();

/** The digest of `m.text` when a scoring pass derived it with `m`'s fragment, else undefined. */
export function derivedDigestOf(m: Message): TextDigest | undefined {
  return digestByMessage.get(m);
}

/**
 * Records what `derivedDigestOf` gives for `m` when its fragment's text is `m.text` alone (no
 * reasoning joined to it). Line hashes are kept for tool results only: no other message's
 * lines are compared.
 */
export function noteDigest(m: Message, fragmentText: string, analysis: TextAnalysis): void {
  const termKeys = analysis.termKeys;
  const lines = m.role === 'tool' ? analysis.lineHashes : undefined;
  if ((termKeys || lines) && fragmentText === m.text) digestByMessage.set(m, { termKeys, lineHashes: lines });
}

/** Forgets `m`'s digest (its derived data was dropped). */
export function forgetDigest(m: Message): void {
  digestByMessage.delete(m);
}

/**
 * What a stored row records of the text it was derived from: its length in UTF-16 units and a
 * 32-bit hash independent of the cache key. A row whose owner differs from the text asked for
 * (two texts sharing a key) is not returned, so a key collision costs a recompute, never a
 * wrong result.
 */
export interface TextOwner {
  readonly chars: number;
  readonly check: number;
}

/**
 * Header (u32 each): version, checksum of every other word of the row, length, totalShingles,
 * uniqueShingles, term count, the owner's chars and check, the content-term key count and the
 * line hash count (ABSENT: none); then the signature.
 */
const HEADER_WORDS = 10;
/** The header word holding the checksum (the one word it does not cover). */
const CHECKSUM_WORD = 1;
const ABSENT = 0xffffffff;
const HASH_LIMIT = 2 ** 52;
/** Content-term keys are below 2^53 (`contentTermKey`). */
const KEY_LIMIT = 2 ** 53;
const FIXED_WORDS = HEADER_WORDS + MINHASH_SLOTS;
const EMPTY_BIN = 0xffffffff;
/** Whether typed arrays read little-endian here (the encoding's order). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;


/**
 * FNV-1a over every 32-bit word of a row but its own (CHECKSUM_WORD, the second): catches a
 * damaged row the structural checks would let through (a changed hash, two section counts
 * swapped); any one changed word changes it. Word by word, not byte by byte: a cold plan
 * checks every row it reads, and rows carry every line hash of their text.
 */
function checksum(words: Uint32Array): number {
  return fnvInt32(words) >>> 0;
}

/**
 * The FNV-1a state as an int32 (same bits). Nothing but int32 arithmetic after its loop: V8
 * compiles the loop of a long row on the stack (OSR) and enters that code from later calls,
 * which deoptimized on every call when a value past 2^31 came out of it.
 */
function fnvInt32(words: Uint32Array): number {
  let h = Math.imul((FNV32_OFFSET_BASIS | 0) ^ (words[0] as number), FNV32_PRIME);
  for (let i = CHECKSUM_WORD + 1; i < words.length; i++) h = Math.imul(h ^ (words[i] as number), FNV32_PRIME);
  return h;
}

/**
 * The bytes of an analysis (little-endian): the header and signature, the term counts (u32),
 * the term hashes (f64), the content-term keys (f64), then the line hashes (f64).
 */
export function encodeAnalysis(a: TextAnalysis, owner: TextOwner): Uint8Array {
  const { stats, features, termKeys, lineHashes: lines } = a;
  const n = stats.counts.length;
  const k = termKeys?.length ?? 0;
  const l = lines?.length ?? 0;
  const words = FIXED_WORDS + n;
  const out = new Uint8Array(words * 4 + (n + k + l) * 8);
  const view = new DataView(out.buffer);
  const head = [DERIVATION_VERSION, 0, stats.length, features.totalShingles, features.uniqueShingles, n, owner.chars, owner.check, termKeys ? k : ABSENT, lines ? l : ABSENT];
  head.forEach((v, i) => view.setUint32(i * 4, v, true));
  for (let i = 0; i < MINHASH_SLOTS; i++) view.setUint32((HEADER_WORDS + i) * 4, features.signature[i] as number, true);
  for (let i = 0; i < n; i++) view.setUint32((FIXED_WORDS + i) * 4, stats.counts[i] as number, true);
  for (let i = 0; i < n; i++) view.setFloat64(words * 4 + i * 8, stats.hashes[i] as number, true);
  for (let i = 0; i < k; i++) view.setFloat64(words * 4 + (n + i) * 8, termKeys?.[i] as number, true);
  for (let i = 0; i < l; i++) view.setFloat64(words * 4 + (n + k + i) * 8, lines?.[i] as number, true);
  view.setUint32(CHECKSUM_WORD * 4, checksum(new Uint32Array(out.buffer)), true);
  return out;
}

/**
 * The analysis in `bytes`, or undefined when they are of another version, of another text
 * than `owner` (a key collision), or inconsistent (truncated, corrupted): the caller then
 * recomputes it. Checks every invariant the encoder's
 * input holds (counts sum to the length, a term per count, an empty signature exactly when
 * there are no shingles), so a damaged row is not trusted.
 */
export function decodeAnalysis(bytes: Uint8Array, owner: TextOwner): TextAnalysis | undefined {
  // Read through typed-array views of one aligned copy, which read the encoding's
  // little-endian order on every platform Node runs on (x64, arm64); on a big-endian one no
  // row is trusted: the data is computed again, never misread.
  if (!LITTLE_ENDIAN || bytes.length < FIXED_WORDS * 4 || bytes.length % 4 !== 0) return undefined;
  // Read in place when the row's bytes are 4-byte aligned (SQLite's rows come as Buffers of
  // their own), else through an aligned copy. Only copies are kept (`slice`, `f64At`), never a
  // view: a Buffer's slice may be a view of its whole pool. A copy per row was a twentieth of a
  // cold plan's decoding (CPU profile of bench plan).
  const u32 = bytes.byteOffset % 4 === 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4) : new Uint32Array(new Uint8Array(bytes).buffer);
  const version = u32[0];
  const sum0 = u32[1];
  const length = u32[2];
  const total = u32[3];
  const unique = u32[4];
  const termCount = u32[5];
  const keyCount = u32[8];
  const lineCount = u32[9];
  if (version === undefined || sum0 === undefined || length === undefined || total === undefined || unique === undefined || termCount === undefined || keyCount === undefined || lineCount === undefined) return undefined;
  if (version !== DERIVATION_VERSION || u32[6] !== owner.chars || u32[7] !== owner.check) return undefined;
  if (unique > total || (total > 0 && unique === 0)) return undefined;
  const words = FIXED_WORDS + termCount;
  const keys = keyCount === ABSENT ? 0 : keyCount;
  const lines = lineCount === ABSENT ? 0 : lineCount;
  if (bytes.length !== words * 4 + (termCount + keys + lines) * 8 || checksum(u32) !== sum0) return undefined;
  const signature = u32.slice(HEADER_WORDS, FIXED_WORDS);
  let used = 0;
  for (let i = 0; i < MINHASH_SLOTS; i++) if (signature[i] !== EMPTY_BIN) used++;
  if ((total === 0) !== (used === 0)) return undefined;
  const counts = u32.slice(FIXED_WORDS, words);
  let sum = 0;
  for (let i = 0; i < termCount; i++) {
    const c = counts[i] as number;
    if (c === 0) return undefined;
    sum += c;
  }
  if (sum !== length) return undefined;
  // The hashes start at byte words × 4, the keys and line hashes after them: each is copied
  // into an array of its own (aligned for a Float64Array). Not a Float64Array over a sliced
  // ArrayBuffer: the redundant-output detector's merge loop read line hashes held that way at
  // a fifth of the speed (2.4 ms of a 35 ms cold plan against 0.9; CPU profiles of bench plan).
  const f64At = (from: number, count: number): Float64Array => {
    const out = new Float64Array(count);
    new Uint8Array(out.buffer).set(new Uint8Array(u32.buffer, u32.byteOffset + words * 4 + from * 8, count * 8));
    return out;
  };
  const hashes = f64At(0, termCount);
  if (!allIntegersBelow(hashes, HASH_LIMIT)) return undefined;
  const termKeys = keyCount === ABSENT ? undefined : f64At(termCount, keys);
  if (termKeys && !allIntegersBelow(termKeys, KEY_LIMIT)) return undefined;
  const lineHashList = lineCount === ABSENT ? undefined : f64At(termCount + keys, lines);
  if (lineHashList && !allIntegersBelow(lineHashList, HASH_LIMIT)) return undefined;
  return {
    stats: { hashes, counts, length },
    features: { signature, empty: total === 0, totalShingles: total, uniqueShingles: unique },
    termKeys,
    lineHashes: lineHashList,
  };
}

function allIntegersBelow(values: Float64Array, limit: number): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!(Number.isInteger(v) && v >= 0 && v < limit)) return false;
  }
  return true;
}
