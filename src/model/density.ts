/**
 * Density: new information per token (design §4), 0–1.
 *
 * Each message fragment gets, once at ingest, a 64-bin one-permutation MinHash fingerprint of
 * its 3-word shingles (each shingle is hashed once; its bin is the top 6 bits of the mixed
 * hash and the bin keeps the smallest remaining value) and its shingle counts. A section's
 * fingerprint is the bin-wise minimum of its fragments' (exactly the fingerprint of the union
 * of their shingles), so no section text is re-read when scoring. Then
 *
 *   density = max(DENSITY_FLOOR, (1 − maxSimilarityToNewer) × repetitionFactor)
 *
 * - `maxSimilarityToNewer`: the highest estimated Jaccard similarity between this section's
 *   shingles and those of any NEWER live section of the same group (same tool for tool
 *   sections, same kind otherwise): equal bins over bins not empty in both. The newest copy
 *   of a repeated output keeps density 1; older copies drop towards the floor. Similarities
 *   below SIMILARITY_NOISE are treated as 0 (estimation noise on unrelated texts).
 * - `repetitionFactor = min(1, uniqueShingles / totalShingles / REPETITION_KNEE)`: a log made
 *   of the same line repeated a thousand times carries little information per token.
 *   Texts with fewer than MIN_SHINGLES_FOR_REPETITION shingles are not penalised.
 */
import { shingleHashes } from '../text/index.js';

export const MINHASH_SLOTS = 64;
export const DENSITY_FLOOR = 0.05;
export const SIMILARITY_NOISE = 0.1;
export const REPETITION_KNEE = 0.6;
export const MIN_SHINGLES_FOR_REPETITION = 20;

const EMPTY_BIN = 0xffffffff;
const BIN_SHIFT = 26; // 2^6 = MINHASH_SLOTS bins
const VALUE_MASK = (1 << BIN_SHIFT) - 1;

/** Shingle-level features of a text or section. */
export interface DensityFeatures {
  /** One-permutation MinHash; an empty bin holds 0xffffffff. */
  readonly signature: Uint32Array;
  /** No shingles at all. */
  readonly empty: boolean;
  readonly totalShingles: number;
  /** Distinct shingles (for a merged section: the sum over its fragments). */
  readonly uniqueShingles: number;
}

/** murmur3's finalizer: spreads the FNV hash so its top bits pick bins evenly. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Features from shingle hashes (see text.ts `analyseText`). */
export function featuresOfShingles(hashes: Uint32Array): DensityFeatures {
  const sig = new Uint32Array(MINHASH_SLOTS).fill(EMPTY_BIN);
  for (let i = 0; i < hashes.length; i++) {
    const v = mix(hashes[i] as number);
    const bin = v >>> BIN_SHIFT;
    const val = v & VALUE_MASK;
    if (val < (sig[bin] as number)) sig[bin] = val;
  }
  let unique = 0;
  if (hashes.length > 0) {
    const sorted = hashes.slice().sort();
    unique = 1;
    for (let i = 1; i < sorted.length; i++) if (sorted[i] !== sorted[i - 1]) unique++;
  }
  return { signature: sig, empty: hashes.length === 0, totalShingles: hashes.length, uniqueShingles: unique };
}

export function densityFeatures(text: string): DensityFeatures {
  return featuresOfShingles(shingleHashes(text));
}

/** Features of several texts taken together (a section of several fragments). */
export function mergeFeatures(parts: readonly DensityFeatures[]): DensityFeatures {
  if (parts.length === 1) return parts[0] as DensityFeatures;
  const sig = new Uint32Array(MINHASH_SLOTS).fill(EMPTY_BIN);
  let total = 0;
  let unique = 0;
  for (const p of parts) {
    for (let i = 0; i < MINHASH_SLOTS; i++) if ((p.signature[i] as number) < (sig[i] as number)) sig[i] = p.signature[i] as number;
    total += p.totalShingles;
    unique += p.uniqueShingles;
  }
  return { signature: sig, empty: total === 0, totalShingles: total, uniqueShingles: unique };
}

/** Estimated Jaccard similarity of the shingle sets behind two fingerprints (0 when either is empty). */
export function similarity(a: DensityFeatures, b: DensityFeatures): number {
  if (a.empty || b.empty) return 0;
  let same = 0;
  let used = 0;
  for (let i = 0; i < MINHASH_SLOTS; i++) {
    const x = a.signature[i] as number;
    const y = b.signature[i] as number;
    if (x === EMPTY_BIN && y === EMPTY_BIN) continue;
    used++;
    if (x === y) same++;
  }
  return binSimilarity(same, used);
}

/**
 * The similarity of `same` equal bins out of `used` bins not empty in both: their share, 0
 * below the noise floor (one home for `similarity` and `SharedBins.bestFrom`).
 */
function binSimilarity(same: number, used: number): number {
  const s = used === 0 ? 0 : same / used;
  return s < SIMILARITY_NOISE ? 0 : s;
}

/** Bits set in a 32-bit integer. */
function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/**
 * An index of a list of fingerprints by bin value, to find a fingerprint's most similar later
 * one without comparing it with every later one: only fingerprints sharing a bin value can
 * have a similarity above 0, and the number of bins they share is exactly `similarity`'s
 * `same`. So the shared bins are counted from the index, and `used` (bins not empty in both)
 * comes from each fingerprint's mask of non-empty bins — the same integers, hence the same
 * float, as `similarity` computes bin by bin. After a restart every section of a group looks
 * for its best match; this makes that pass proportional to the shared bins, not to the pairs.
 */
export class SharedBins {
  /**
   * An open-addressed table of the (bin, value) pairs held: `keys[slot]` is the pair (the bin in
   * the top 6 bits, as a mixed hash holds it), `heads[slot]` the newest entry holding it (-1: a
   * free slot). An entry is `position × MINHASH_SLOTS + bin`; `next[entry]` is the entry before it
   * holding the same pair (-1: none). So a bin value's positions are read newest first, as
   * `bestFrom` wants them, from three typed arrays: no map or array per value (a cold plan built
   * thousands of them, all kept until the pass ended).
   */
  private readonly keys: Int32Array;
  private readonly heads: Int32Array;
  private readonly next: Int32Array;
  /** Bits of the table's size (a power of two). */
  private readonly bits: number;
  /** Non-empty bins of each position: bins 0–31 and 32–63. */
  private readonly maskLo: Int32Array;
  private readonly maskHi: Int32Array;
  /** Shared bins per position of the current query, and the positions it touched. */
  private readonly counts: Uint8Array;
  private readonly touched: Int32Array;

  constructor(list: readonly (DensityFeatures | undefined)[]) {
    this.maskLo = new Int32Array(list.length);
    this.maskHi = new Int32Array(list.length);
    this.counts = new Uint8Array(list.length);
    this.touched = new Int32Array(list.length);
    let held = 0;
    list.forEach((f, i) => {
      if (!f || f.empty) return;
      this.maskLo[i] = maskOf(f, 0);
      this.maskHi[i] = maskOf(f, 32);
      held += popcount32(this.maskLo[i] as number) + popcount32(this.maskHi[i] as number);
    });
    // at most half full: probes stay short
    let bits = 4;
    while (1 << bits < 2 * held) bits++;
    this.bits = bits;
    this.keys = new Int32Array(1 << bits);
    this.heads = new Int32Array(1 << bits).fill(-1);
    this.next = new Int32Array(list.length * MINHASH_SLOTS);
    list.forEach((f, i) => {
      if (!f || f.empty) return;
      for (let bin = 0; bin < MINHASH_SLOTS; bin++) {
        const v = f.signature[bin] as number;
        if (v === EMPTY_BIN) continue;
        const key = (bin << BIN_SHIFT) | v;
        const slot = this.slotOf(key);
        const entry = i * MINHASH_SLOTS + bin;
        this.next[entry] = this.heads[slot] as number;
        this.heads[slot] = entry;
        this.keys[slot] = key;
      }
    });
  }

  /** The slot holding `key`, or the free slot where it would go. */
  private slotOf(key: number): number {
    const mask = (1 << this.bits) - 1;
    let slot = Math.imul(key, 0x9e3779b1) >>> (32 - this.bits);
    while (this.heads[slot] !== -1 && this.keys[slot] !== key) slot = (slot + 1) & mask;
    return slot;
  }

  /**
   * The position ≥ `from` whose fingerprint is most similar to `f` (the first of equals) and
   * that similarity — what comparing `f` with each of them in order, keeping a strictly higher
   * `similarity`, finds; `{ at: -1, sim: 0 }` when none is above 0.
   */
  bestFrom(from: number, f: DensityFeatures): { readonly at: number; readonly sim: number } {
    let at = -1;
    let best = 0;
    if (f.empty) return { at, sim: best };
    const counts = this.counts;
    const touched = this.touched;
    let n = 0;
    for (let bin = 0; bin < MINHASH_SLOTS; bin++) {
      const v = f.signature[bin] as number;
      if (v === EMPTY_BIN) continue;
      const next = this.next;
      // newest first: the positions before `from` end the walk
      for (let entry = this.heads[this.slotOf((bin << BIN_SHIFT) | v)] as number; entry !== -1; entry = next[entry] as number) {
        const i = (entry / MINHASH_SLOTS) | 0;
        if (i < from) break;
        if (counts[i] === 0) touched[n++] = i;
        counts[i] = (counts[i] as number) + 1;
      }
    }
    const lo = maskOf(f, 0);
    const hi = maskOf(f, 32);
    for (let k = 0; k < n; k++) {
      const i = touched[k] as number;
      const same = counts[i] as number;
      counts[i] = 0;
      const used = popcount32(lo | (this.maskLo[i] as number)) + popcount32(hi | (this.maskHi[i] as number));
      const sim = binSimilarity(same, used);
      if (sim > best || (sim === best && sim > 0 && i < at)) {
        best = sim;
        at = i;
      }
    }
    return { at, sim: best };
  }
}

/** Bits of the non-empty bins `offset`…`offset + 31` of a fingerprint. */
function maskOf(f: DensityFeatures, offset: number): number {
  let m = 0;
  for (let b = 0; b < 32; b++) if (f.signature[offset + b] !== EMPTY_BIN) m |= 1 << b;
  return m;
}

/** 1 for varied text, lower for text that repeats the same shingles. */
export function repetitionFactor(f: DensityFeatures): number {
  if (f.totalShingles < MIN_SHINGLES_FOR_REPETITION) return 1;
  return Math.min(1, f.uniqueShingles / f.totalShingles / REPETITION_KNEE);
}

/** Density from the highest similarity to a newer section of the same group and the repetition factor. */
export function densityOf(maxSimilarityToNewer: number, f: DensityFeatures | undefined): number {
  const rep = f ? repetitionFactor(f) : 1;
  return Math.max(DENSITY_FLOOR, Math.min(1, (1 - maxSimilarityToNewer) * rep));
}
