/**
 * Cheap lexical features of section text: word terms for BM25 and word shingles for
 * near-duplicate detection. No tokenizer (tiktoken) calls happen here.
 */

/** Text longer than this is only partly analysed (the head and the tail), to bound per-append cost. */
export const MAX_ANALYSED_CHARS = 200_000;

/** English function words and agent boilerplate that carry no topical signal. */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'a an and are as at be been being but by can could did do does doing done for from had has have having he her here ' +
    'hers him his how i if in into is it its itself just let me more most my no nor not now of off on once only or other ' +
    'our ours out over own same she should so some such than that the their theirs them then there these they this those ' +
    'through to too under until up very was we were what when where which while who whom why will with would you your ' +
    'yours yourself ll ve re don doesn didn isn wasn aren won also may might must shall us via per okay ok yes'
  ).split(' '),
);

/** Bound `text` to MAX_ANALYSED_CHARS, keeping its head and tail. */
export function boundText(text: string): string {
  if (text.length <= MAX_ANALYSED_CHARS) return text;
  const half = MAX_ANALYSED_CHARS / 2;
  return `${text.slice(0, half)}\n${text.slice(text.length - half)}`;
}

const WORD_SPLIT = /[^\p{L}\p{N}_]+/u;

/**
 * Lowercase words of `text`, split on every non-word character (so `src/model/index.ts`
 * gives `src`, `model`, `index`, `ts`), without stopwords or one-character words.
 */
export function words(text: string): string[] {
  return rawWords(text).filter(isTerm);
}

/**
 * Term frequencies of a text, compactly: `terms[i]` occurs `counts[i]` times (terms unique, in
 * first-seen order), plus the number of terms (the BM25 document length). Two parallel arrays
 * instead of a Map: a session holds one of these per message, and a Map's hash table costs
 * several times more memory than the data in it.
 */
export interface TermStats {
  readonly terms: readonly string[];
  readonly counts: Uint32Array;
  readonly length: number;
}

export const EMPTY_TERM_STATS: TermStats = Object.freeze({ terms: Object.freeze([]) as readonly string[], counts: new Uint32Array(0), length: 0 });

function statsOf(tf: ReadonlyMap<string, number>, length: number): TermStats {
  if (tf.size === 0) return EMPTY_TERM_STATS;
  return { terms: [...tf.keys()], counts: Uint32Array.from(tf.values()), length };
}

/** Lowercased raw words (empty pieces dropped) of the bounded text: the input of terms and shingles. */
function rawWords(text: string): string[] {
  const ws = boundText(text).toLowerCase().split(WORD_SPLIT);
  let n = 0;
  for (const w of ws) if (w.length > 0) ws[n++] = w;
  ws.length = n;
  return ws;
}

function isTerm(w: string): boolean {
  return w.length >= 2 && w.length <= 64 && !STOPWORDS.has(w);
}

export function termStats(text: string): TermStats {
  return analyseText(text).stats;
}

/** Terms and shingle hashes of a text, from one pass over its words (both are needed at ingest). */
export function analyseText(text: string, shingleSize = 3): { stats: TermStats; shingles: Uint32Array } {
  const ws = rawWords(text);
  const tf = new Map<string, number>();
  let length = 0;
  const wordHash = new Uint32Array(ws.length);
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i] as string;
    wordHash[i] = fnv1a32(w);
    if (!isTerm(w)) continue;
    tf.set(w, (tf.get(w) ?? 0) + 1);
    length++;
  }
  return { stats: statsOf(tf, length), shingles: shingleHashesOf(wordHash, shingleSize) };
}

/** Hashes of `size` consecutive words (one per word when there are fewer words than `size`). */
function shingleHashesOf(wordHash: Uint32Array, size: number): Uint32Array {
  if (wordHash.length < size) return wordHash;
  const out = new Uint32Array(wordHash.length - size + 1);
  for (let i = 0; i < out.length; i++) {
    let h = 0x811c9dc5;
    for (let j = 0; j < size; j++) h = Math.imul(h ^ (wordHash[i + j] as number), 0x01000193);
    out[i] = h >>> 0;
  }
  return out;
}

/** Sum of several term stats (a section made of several fragments). */
export function mergeTermStats(parts: readonly TermStats[]): TermStats {
  const tf = new Map<string, number>();
  let length = 0;
  for (const p of parts) {
    p.terms.forEach((t, i) => tf.set(t, (tf.get(t) ?? 0) + (p.counts[i] as number)));
    length += p.length;
  }
  return statsOf(tf, length);
}

/** 32-bit FNV-1a hash of a string. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Hashes of the word shingles (`size` consecutive raw words, stopwords kept) of `text`.
 * Texts with fewer words than `size` give one shingle per word.
 */
export function shingleHashes(text: string, size = 3): Uint32Array {
  return analyseText(text, size).shingles;
}
