/**
 * Density: new information per token (design §4), 0–1.
 *
 * Each section gets, once (when its text is complete), a 64-slot MinHash signature over its
 * 3-word shingles and a unique-shingle ratio. Then
 *
 *   density = max(DENSITY_FLOOR, (1 − maxSimilarityToNewer) × repetitionFactor)
 *
 * - `maxSimilarityToNewer`: the highest estimated Jaccard similarity between this section's
 *   shingles and those of any NEWER live section of the same group (same tool for tool
 *   sections, same kind otherwise). The newest copy of a repeated output keeps density 1; older
 *   copies drop towards the floor. Similarities below SIMILARITY_NOISE are treated as 0
 *   (MinHash estimation noise on unrelated texts).
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

/** Per-slot multipliers/offsets for the universal hashes h_i(x) = a_i·x + b_i mod 2^32 (a_i odd). */
const SEEDS_A = new Uint32Array(MINHASH_SLOTS);
const SEEDS_B = new Uint32Array(MINHASH_SLOTS);
{
  // xorshift32 with a fixed seed: deterministic across processes.
  let x = 0x9e3779b9;
  const next = (): number => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  for (let i = 0; i < MINHASH_SLOTS; i++) {
    SEEDS_A[i] = next() | 1;
    SEEDS_B[i] = next();
  }
}

/** Shingle-level features of one section, computed once from its text. */
export interface DensityFeatures {
  /** MinHash signature; empty text gives an all-0xffffffff signature and `empty: true`. */
  readonly signature: Uint32Array;
  readonly empty: boolean;
  readonly totalShingles: number;
  readonly uniqueShingles: number;
}

export function densityFeatures(text: string): DensityFeatures {
  const hashes = shingleHashes(text);
  const unique = new Set(hashes);
  const sig = new Uint32Array(MINHASH_SLOTS).fill(0xffffffff);
  for (const h of unique) {
    for (let i = 0; i < MINHASH_SLOTS; i++) {
      const v = (Math.imul(SEEDS_A[i] as number, h) + (SEEDS_B[i] as number)) >>> 0;
      if (v < (sig[i] as number)) sig[i] = v;
    }
  }
  return { signature: sig, empty: unique.size === 0, totalShingles: hashes.length, uniqueShingles: unique.size };
}

/** Estimated Jaccard similarity of the shingle sets behind two signatures (0 when either is empty). */
export function similarity(a: DensityFeatures, b: DensityFeatures): number {
  if (a.empty || b.empty) return 0;
  let same = 0;
  for (let i = 0; i < MINHASH_SLOTS; i++) if (a.signature[i] === b.signature[i]) same++;
  const s = same / MINHASH_SLOTS;
  return s < SIMILARITY_NOISE ? 0 : s;
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
