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
  const out: string[] = [];
  for (const raw of boundText(text).toLowerCase().split(WORD_SPLIT)) {
    if (raw.length < 2 || raw.length > 64) continue;
    if (STOPWORDS.has(raw)) continue;
    out.push(raw);
  }
  return out;
}

/** Term frequencies of `text`, plus the number of terms (the BM25 document length). */
export interface TermStats {
  readonly tf: Map<string, number>;
  length: number;
}

export function termStats(text: string): TermStats {
  const tf = new Map<string, number>();
  const ws = words(text);
  for (const w of ws) tf.set(w, (tf.get(w) ?? 0) + 1);
  return { tf, length: ws.length };
}

/** Adds `b` into `a` (mutates `a`). */
export function mergeTermStats(a: TermStats, b: TermStats): void {
  for (const [t, n] of b.tf) a.tf.set(t, (a.tf.get(t) ?? 0) + n);
  a.length += b.length;
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
export function shingleHashes(text: string, size = 3): number[] {
  const ws = boundText(text)
    .toLowerCase()
    .split(WORD_SPLIT)
    .filter((w) => w.length > 0);
  const out: number[] = [];
  if (ws.length < size) {
    for (const w of ws) out.push(fnv1a32(w));
    return out;
  }
  for (let i = 0; i + size <= ws.length; i++) {
    let s = ws[i] as string;
    for (let j = 1; j < size; j++) s += ` ${ws[i + j] as string}`;
    out.push(fnv1a32(s));
  }
  return out;
}
