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
 * Term statistics per section are computed once at insert (see text.ts); document frequencies
 * are maintained incrementally here; scoring runs lazily over all sections without any
 * tokenizer call.
 */
import type { TermStats } from '../text/index.js';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
export const GOAL_TERM_WEIGHT = 1;
export const ANCHOR_TERM_WEIGHT = 0.3;
export const RELEVANCE_FLOOR = 0.05;

/** Document frequencies over the live sections, maintained incrementally. */
export class TermIndex {
  private readonly df = new Map<string, number>();
  private docs = 0;
  private totalLength = 0;

  add(stats: TermStats): void {
    this.docs++;
    this.totalLength += stats.length;
    for (const t of stats.tf.keys()) this.df.set(t, (this.df.get(t) ?? 0) + 1);
  }

  remove(stats: TermStats): void {
    this.docs--;
    this.totalLength -= stats.length;
    for (const t of stats.tf.keys()) {
      const n = (this.df.get(t) ?? 0) - 1;
      if (n <= 0) this.df.delete(t);
      else this.df.set(t, n);
    }
  }

  clear(): void {
    this.df.clear();
    this.docs = 0;
    this.totalLength = 0;
  }

  get documents(): number {
    return this.docs;
  }

  idf(term: string): number {
    const n = this.df.get(term) ?? 0;
    return Math.log(1 + (this.docs - n + 0.5) / (n + 0.5));
  }

  /** Folds each query term's idf into its weight, once per scoring pass. */
  prepare(query: ReadonlyMap<string, number>): Map<string, number> {
    const out = new Map<string, number>();
    for (const [t, w] of query) if (this.df.has(t)) out.set(t, w * this.idf(t));
    return out;
  }

  /** Raw BM25 of one document against a query from `prepare()`. */
  bm25(doc: TermStats, prepared: ReadonlyMap<string, number>): number {
    if (prepared.size === 0 || doc.length === 0) return 0;
    const avg = this.docs > 0 ? this.totalLength / this.docs : 1;
    const norm = BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / Math.max(avg, 1));
    let score = 0;
    // Iterate the smaller of the two maps.
    if (doc.tf.size <= prepared.size) {
      for (const [t, f] of doc.tf) {
        const wIdf = prepared.get(t);
        if (wIdf !== undefined) score += (wIdf * (f * (BM25_K1 + 1))) / (f + norm);
      }
    } else {
      for (const [t, wIdf] of prepared) {
        const f = doc.tf.get(t);
        if (f !== undefined) score += (wIdf * (f * (BM25_K1 + 1))) / (f + norm);
      }
    }
    return score;
  }
}

/** Builds the weighted query from the goal's terms and the anchors' terms. */
export function buildQuery(goal: TermStats | undefined, anchors: readonly TermStats[]): Map<string, number> {
  const q = new Map<string, number>();
  for (const a of anchors) for (const t of a.tf.keys()) q.set(t, ANCHOR_TERM_WEIGHT);
  if (goal) for (const t of goal.tf.keys()) q.set(t, GOAL_TERM_WEIGHT);
  return q;
}

/** Normalises raw BM25 scores to RELEVANCE_FLOOR..1 by dividing by the maximum. */
export function normalizeRelevance(raw: readonly number[]): number[] {
  let max = 0;
  for (const r of raw) if (r > max) max = r;
  if (max <= 0) return raw.map(() => 1);
  return raw.map((r) => RELEVANCE_FLOOR + ((1 - RELEVANCE_FLOOR) * r) / max);
}
