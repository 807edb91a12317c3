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
import { analyseText, contentTermKeys, FNV32_OFFSET_BASIS, FNV32_PRIME, hash52 } from '../text/index.js';
import type { Message } from './messages.js';
import { featuresOfShingles, MINHASH_SLOTS, type DensityFeatures } from './density.js';

/** Bump on any change to what `analyseFragmentText` computes or to the encoding below (test/model/derived.test.ts pins a fixed text's encoding to fail when one is forgotten). */
export const DERIVATION_VERSION = 3;

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
   * a session), for texts of at most TERM_KEY_CHARS chars; undefined for longer ones.
   */
  readonly termKeys: Float64Array | undefined;
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

/** Analyses one fragment's text (one pass over its words). */
export function analyseFragmentText(text: string): TextAnalysis {
  const { stats, shingles } = analyseText(text);
  const hashes = new Float64Array(stats.terms.length);
  for (let i = 0; i < hashes.length; i++) hashes[i] = hash52(stats.terms[i] as string);
  return { stats: { hashes, counts: stats.counts, length: stats.length }, features: featuresOfShingles(shingles), termKeys: text.length <= TERM_KEY_CHARS ? contentTermKeys(text) : undefined };
}

/**
 * The content-term keys of messages whose whole text is one derived fragment (a message of text
 * alone, or a tool result) and was analysed with them: read from the derived-data cache on a
 * cold plan, so the reference index does not scan every message's text again.
 */
const termKeysByMessage = new WeakMap<Message, Float64Array>();

/** `contentTermKeys(m.text)` when a scoring pass derived it with `m`'s fragment, else undefined. */
export function derivedTermKeys(m: Message): Float64Array | undefined {
  return termKeysByMessage.get(m);
}

/**
 * Records what `derivedTermKeys` gives for `m` when its fragment's text is `m.text` alone (no
 * reasoning joined to it) and `analysis` has its keys.
 */
export function noteTermKeys(m: Message, fragmentText: string, analysis: TextAnalysis): void {
  if (analysis.termKeys && fragmentText === m.text) termKeysByMessage.set(m, analysis.termKeys);
}

/** Forgets `m`'s keys (its derived data was dropped). */
export function forgetTermKeys(m: Message): void {
  termKeysByMessage.delete(m);
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
 * Header (u32 each): version, checksum of everything after the header, length, totalShingles,
 * uniqueShingles, term count, the owner's chars and check, and the content-term key count
 * (NO_TERM_KEYS: none); then the signature.
 */
const HEADER_WORDS = 9;
const NO_TERM_KEYS = 0xffffffff;
const HASH_LIMIT = 2 ** 52;
/** Content-term keys are below 2^53 (`contentTermKey`). */
const KEY_LIMIT = 2 ** 53;
const FIXED_WORDS = HEADER_WORDS + MINHASH_SLOTS;
const EMPTY_BIN = 0xffffffff;
/** Whether typed arrays read little-endian here (the encoding's order). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;


/** FNV-1a over bytes: catches a damaged row the structural checks would let through (a changed hash). */
function checksum(bytes: Uint8Array, from: number): number {
  return fnvInt32(bytes, from) >>> 0;
}

/**
 * The FNV-1a state as an int32 (same bits). Nothing but int32 arithmetic after its loop: V8
 * compiles the loop of a long row on the stack (OSR) and enters that code from later calls,
 * which deoptimized on every call when a value past 2^31 came out of it.
 */
function fnvInt32(bytes: Uint8Array, from: number): number {
  let h = FNV32_OFFSET_BASIS | 0;
  for (let i = from; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), FNV32_PRIME);
  return h;
}

/**
 * The bytes of an analysis (little-endian): the header and signature, the term counts (u32),
 * the term hashes (f64), then the content-term keys (f64).
 */
export function encodeAnalysis(a: TextAnalysis, owner: TextOwner): Uint8Array {
  const { stats, features, termKeys } = a;
  const n = stats.counts.length;
  const k = termKeys?.length ?? 0;
  const words = FIXED_WORDS + n;
  const out = new Uint8Array(words * 4 + n * 8 + k * 8);
  const view = new DataView(out.buffer);
  const head = [DERIVATION_VERSION, 0, stats.length, features.totalShingles, features.uniqueShingles, n, owner.chars, owner.check, termKeys ? k : NO_TERM_KEYS];
  head.forEach((v, i) => view.setUint32(i * 4, v, true));
  for (let i = 0; i < MINHASH_SLOTS; i++) view.setUint32((HEADER_WORDS + i) * 4, features.signature[i] as number, true);
  for (let i = 0; i < n; i++) view.setUint32((FIXED_WORDS + i) * 4, stats.counts[i] as number, true);
  for (let i = 0; i < n; i++) view.setFloat64(words * 4 + i * 8, stats.hashes[i] as number, true);
  for (let i = 0; i < k; i++) view.setFloat64(words * 4 + (n + i) * 8, termKeys?.[i] as number, true);
  view.setUint32(4, checksum(out, HEADER_WORDS * 4), true);
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
  // a copy of exactly these bytes (a Buffer's slice would be a view of its whole pool)
  const u32 = new Uint32Array(new Uint8Array(bytes).buffer);
  const [version, sum0, length, total, unique, termCount] = Array.from(u32.subarray(0, 6));
  const keyCount = u32[8];
  if (version === undefined || sum0 === undefined || length === undefined || total === undefined || unique === undefined || termCount === undefined || keyCount === undefined) return undefined;
  if (version !== DERIVATION_VERSION || u32[6] !== owner.chars || u32[7] !== owner.check) return undefined;
  if (unique > total || (total > 0 && unique === 0)) return undefined;
  const words = FIXED_WORDS + termCount;
  const keys = keyCount === NO_TERM_KEYS ? 0 : keyCount;
  if (bytes.length !== words * 4 + (termCount + keys) * 8 || checksum(bytes, HEADER_WORDS * 4) !== sum0) return undefined;
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
  // The hashes start at byte words × 4, the keys after them: copies of their own are aligned for a Float64Array.
  const hashes = new Float64Array(u32.buffer.slice(words * 4, words * 4 + termCount * 8));
  if (!allIntegersBelow(hashes, HASH_LIMIT)) return undefined;
  const termKeys = keyCount === NO_TERM_KEYS ? undefined : new Float64Array(u32.buffer.slice(words * 4 + termCount * 8));
  if (termKeys && !allIntegersBelow(termKeys, KEY_LIMIT)) return undefined;
  return {
    stats: { hashes, counts, length },
    features: { signature, empty: total === 0, totalShingles: total, uniqueShingles: unique },
    termKeys,
  };
}

function allIntegersBelow(values: Float64Array, limit: number): boolean {
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!(Number.isInteger(v) && v >= 0 && v < limit)) return false;
  }
  return true;
}
