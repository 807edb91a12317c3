/**
 * Relevance: lexical BM25 of each section against the current goal (design §4), 0–1.
 *
 * The query is a weighted bag of terms: every term of the current goal (the latest real user
 * instruction) weighs GOAL_TERM_WEIGHT, every other term found in an anchor (system prompt,
 * earlier instructions, key decisions) weighs ANCHOR_TERM_WEIGHT. Each live section is one BM25
 * document (k1 = 1.2, b = 0.75, idf = ln(1 + (N − df + 0.5)/(df + 0.5))).
 *
 * Normalisation: `relevance = RELEVANCE_FLOOR + (1 − RELEVANCE_FLOOR) × raw / maxRaw`, so the
 * best-matching section gets 1 and a section sharing no term gets RELEVANCE_FLOOR (never 0, so
 * the other score factors still order it). When no section matches (or there is no goal yet)
 * every section gets 1: relevance then carries no signal and does not distort the score.
 *
 * Term statistics per fragment are derived when first scored (derived.ts); document frequencies
 * are maintained incrementally here; scoring runs lazily over all sections without any
 * tokenizer call.
 */
import type { TermHashes } from './derived.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
export const GOAL_TERM_WEIGHT = 1;
export const ANCHOR_TERM_WEIGHT = 0.3;
export const RELEVANCE_FLOOR = 0.05;

/**
 * Term frequencies of one fragment or section with its terms interned by the session's
 * `TermIndex`: `pairs` holds `id, count` pairs in the order the terms were first seen, so one
 * typed array stands for what were an array of term strings (one string copy per fragment
 * holding the term) and an array of counts.
 */
export interface TermVector {
  readonly pairs: Uint32Array;
  /** Number of terms (the BM25 document length). */
  readonly length: number;
}

/** A query ready for `TermIndex.bm25`: weight × idf by term id, and how many terms it has. */
export interface PreparedQuery {
  readonly weights: Float64Array;
  readonly size: number;
}

/** A vector without terms (shared, frozen). */
export const EMPTY_TERM_VECTOR: TermVector = Object.freeze({ pairs: new Uint32Array(0), length: 0 });

/**
 * Term hash → id, open addressing over typed arrays: the keys are 52-bit doubles, which a Map
 * boxes and hashes slowly, and a cold plan looks up every term of every message once.
 */
class TermIds {
  private keys = new Float64Array(2048);
  private vals = new Int32Array(2048).fill(-1);
  private mask = 2047;
  size = 0;

  private static slot(key: number, mask: number): number {
    let h = Math.imul((key >>> 0) ^ Math.floor(key / 0x100000000), 0x9e3779b1);
    h ^= h >>> 15;
    return h & mask;
  }

  /** The id of `key`, or -1. */
  get(key: number): number {
    for (let i = TermIds.slot(key, this.mask); ; i = (i + 1) & this.mask) {
      const v = this.vals[i] as number;
      if (v < 0 || this.keys[i] === key) return v;
    }
  }

  /** Adds a key not present yet, with the next id; returns it. */
  add(key: number): number {
    if ((this.size + 1) * 2 > this.vals.length) this.grow();
    const id = this.size++;
    this.place(key, id);
    return id;
  }

  clear(): void {
    this.keys = new Float64Array(2048);
    this.vals = new Int32Array(2048).fill(-1);
    this.mask = 2047;
    this.size = 0;
  }

  private place(key: number, id: number): void {
    let i = TermIds.slot(key, this.mask);
    while ((this.vals[i] as number) >= 0) i = (i + 1) & this.mask;
    this.keys[i] = key;
    this.vals[i] = id;
  }

  private grow(): void {
    const { keys, vals } = this;
    this.keys = new Float64Array(keys.length * 2);
    this.vals = new Int32Array(vals.length * 2).fill(-1);
    this.mask = this.vals.length - 1;
    for (let i = 0; i < vals.length; i++) if ((vals[i] as number) >= 0) this.place(keys[i] as number, vals[i] as number);
  }
}

/**
 * The session's term dictionary and the document frequencies over its live sections, both
 * maintained incrementally. Each distinct term is held once, as its hash (`intern`: no term
 * string is kept); ids stay valid until
 * `clear()`, also when a term's document frequency drops to 0.
 */
export class TermIndex {
  /** Term hash (see TermHashes) → id. */
  private readonly ids = new TermIds();
  private df = new Uint32Array(1024);
  /** Per term id: where `merge` put it in the vector being built, or -1 (all -1 between calls). */
  private slot = new Int32Array(1024).fill(-1);
  private docs = 0;
  private totalLength = 0;

  /** The vector of `stats`, its terms given ids (new terms are added to the dictionary). */
  intern(stats: TermHashes): TermVector {
    const { hashes, counts } = stats;
    if (hashes.length === 0) return EMPTY_TERM_VECTOR;
    const pairs = new Uint32Array(hashes.length * 2);
    for (let i = 0; i < hashes.length; i++) {
      const t = hashes[i] as number;
      let id = this.ids.get(t);
      if (id < 0) {
        id = this.ids.add(t);
        if (id >= this.df.length) {
          const grown = new Uint32Array(this.df.length * 2);
          grown.set(this.df);
          this.df = grown;
          const slot = new Int32Array(grown.length).fill(-1);
          slot.set(this.slot);
          this.slot = slot;
        }
      }
      pairs[2 * i] = id;
      pairs[2 * i + 1] = counts[i] as number;
    }
    return { pairs, length: stats.length };
  }

  /**
   * Sum of several vectors of this index (a section made of several fragments), terms in
   * first-seen order: one pass with a slot per term id instead of a map (a cold plan merges
   * every call section's call and result).
   */
  merge(parts: readonly TermVector[]): TermVector {
    let n = 0;
    let length = 0;
    for (const p of parts) {
      n += p.pairs.length;
      length += p.length;
    }
    if (n === 0) return EMPTY_TERM_VECTOR;
    const out = new Uint32Array(n);
    const { slot } = this;
    let j = 0;
    for (const { pairs } of parts) {
      for (let i = 0; i < pairs.length; i += 2) {
        const id = pairs[i] as number;
        const at = slot[id] as number;
        if (at >= 0) {
          out[at + 1]! += pairs[i + 1] as number;
        } else {
          slot[id] = j;
          out[j] = id;
          out[j + 1] = pairs[i + 1] as number;
          j += 2;
        }
      }
    }
    for (let k = 0; k < j; k += 2) slot[out[k] as number] = -1;
    return { pairs: j === n ? out : out.slice(0, j), length };
  }

  /** Distinct terms in the dictionary (live or not). */
  get vocabulary(): number {
    return this.ids.size;
  }

  add(v: TermVector): void {
    this.docs++;
    this.totalLength += v.length;
    const { pairs } = v;
    for (let i = 0; i < pairs.length; i += 2) this.df[pairs[i] as number]!++;
  }

  remove(v: TermVector): void {
    this.docs--;
    this.totalLength -= v.length;
    const { pairs } = v;
    for (let i = 0; i < pairs.length; i += 2) {
      const id = pairs[i] as number;
      if ((this.df[id] as number) > 0) this.df[id]!--;
    }
  }

  clear(): void {
    this.ids.clear();
    this.df = new Uint32Array(1024);
    this.slot = new Int32Array(1024).fill(-1);
    this.docs = 0;
    this.totalLength = 0;
  }

  get documents(): number {
    return this.docs;
  }

  idf(id: number): number {
    const n = this.df[id] ?? 0;
    return Math.log(1 + (this.docs - n + 0.5) / (n + 0.5));
  }

  /**
   * Folds each query term's idf into its weight, once per scoring pass: a dense array by term
   * id (0 for terms outside the query or in no live section — a real weight is never 0, as
   * idf > 0), so `bm25` reads a weight per document term without a hash lookup.
   */
  prepare(query: ReadonlyMap<number, number>): PreparedQuery {
    const weights = new Float64Array(this.ids.size);
    let size = 0;
    for (const [id, w] of query) {
      if ((this.df[id] ?? 0) > 0) {
        weights[id] = w * this.idf(id);
        size++;
      }
    }
    return { weights, size };
  }

  /** Raw BM25 of one document against a query from `prepare()`. */
  bm25(doc: TermVector, prepared: PreparedQuery): number {
    if (prepared.size === 0 || doc.length === 0) return 0;
    const avg = this.docs > 0 ? this.totalLength / this.docs : 1;
    const norm = BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / Math.max(avg, 1));
    let score = 0;
    const { pairs } = doc;
    const { weights } = prepared;
    for (let i = 0; i < pairs.length; i += 2) {
      const wIdf = weights[pairs[i] as number] ?? 0;
      if (wIdf === 0) continue;
      const f = pairs[i + 1] as number;
      score += (wIdf * (f * (BM25_K1 + 1))) / (f + norm);
    }
    return score;
  }
}

/** Builds the weighted query (term id → weight) from the goal's terms and the anchors' terms. */
export function buildQuery(goal: TermVector | undefined, anchors: readonly TermVector[]): Map<number, number> {
  const q = new Map<number, number>();
  for (const a of anchors) for (let i = 0; i < a.pairs.length; i += 2) q.set(a.pairs[i] as number, ANCHOR_TERM_WEIGHT);
  if (goal) for (let i = 0; i < goal.pairs.length; i += 2) q.set(goal.pairs[i] as number, GOAL_TERM_WEIGHT);
  return q;
}

/** Normalises raw BM25 scores to RELEVANCE_FLOOR..1 by dividing by the maximum. */
export function normalizeRelevance(raw: readonly number[]): number[] {
  let max = 0;
  for (const r of raw) if (r > max) max = r;
  if (max <= 0) return raw.map(() => 1);
  return raw.map((r) => RELEVANCE_FLOOR + ((1 - RELEVANCE_FLOOR) * r) / max);
}
