/**
 * Word tokenizing: one stop-word list and one word split for every feature built on words
 * (BM25 term stats, template search terms and fingerprints, the planner's content terms,
 * near-duplicate shingles). No tiktoken calls happen here.
 */
import { FNV32_OFFSET_BASIS, FNV32_PRIME, fnv1a32, hash52, hash52Of, HASH52_SECOND_BASIS } from './hash.js';
import { isDigitCode } from './chars.js';

/** Text longer than this is only partly analysed (the head and the tail), to bound per-call cost. */
export const MAX_ANALYSED_CHARS = 200_000;

/**
 * English function words and chat boilerplate that carry no topical signal. Template
 * fingerprints are built from words outside this list, so changing it changes stored
 * fingerprints: add a migration that recomputes them when you do.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  `the a an and or but if then else for to of in on at by with from into onto over under is are was were be been being it its this that these those
  i me my we our you your he she they them their there here what which who whom whose when where why how all any both each few more most other some such
  no nor not only own same so than too very can will just should now do does did doing have has had having would could might must shall may please
  let lets make sure also get got use using used want need like about after before again further once up down out off above below between through during
  can't don't won't isn't aren't wasn't weren't it's i'm you're we're they're that's let's ok okay yes yeah hi hello thanks thank`.split(/\s+/),
);

/**
 * Function words: articles, pronouns, auxiliaries, conjunctions and the commonest
 * prepositions — the grammar a telegraphic rendering can drop without changing what a
 * sentence says. Shorter than STOPWORDS on purpose: verbs and adverbs that carry meaning in
 * conversation ("make", "like", "want", "need", "more", "about", "after", "before") stay.
 * Span summaries (compact/summarize/span.ts) use it.
 */
export const FUNCTION_WORDS: ReadonlySet<string> = new Set(
  `the a an and or but if then so for to of in on at by with from into onto is are was were be been being am
  it its this that these those i me my mine we us our you your he him his she her they them their there here
  do does did doing have has had having can could will would shall should may might must
  which who whom whose what as than too very just also`.split(/\s+/),
);

/** Words agents say in every turn ("file", "think", "going"): no signal for content terms. */
const FILLER: ReadonlySet<string> = new Set(
  'while done because file line lines going think know upon'.split(' '),
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
 * gives `src`, `model`, `index`, `ts`), without stop words or one-character words.
 */
export function words(text: string): string[] {
  return rawWords(text).filter(isTerm);
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

/**
 * Search terms of a text: `words` of at most 40 chars without pure numbers, deduplicated in
 * first-occurrence order, at most `max`. Harvest (fingerprints, novelty) and bootstrap
 * (queries) both use it, so both sides see the same vocabulary.
 */
export function searchTerms(text: string, max = 200): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const w of words(text)) {
    if (w.length > 40 || /^\d+$/.test(w) || seen.has(w)) continue;
    seen.add(w);
    out.push(w);
    if (out.length >= max) break;
  }
  return out;
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

/** Term stats of a text without terms (shared, frozen). */
export const EMPTY_TERM_STATS: TermStats = Object.freeze({ terms: Object.freeze([]) as readonly string[], counts: new Uint32Array(0), length: 0 });

function statsOf(tf: ReadonlyMap<string, number>, length: number): TermStats {
  if (tf.size === 0) return EMPTY_TERM_STATS;
  return { terms: [...tf.keys()], counts: Uint32Array.from(tf.values()), length };
}

/** Term frequencies of the `words` of a text. */
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
    let h = FNV32_OFFSET_BASIS;
    for (let j = 0; j < size; j++) h = Math.imul(h ^ (wordHash[i + j] as number), FNV32_PRIME);
    out[i] = h >>> 0;
  }
  return out;
}

/**
 * Content terms: lowercased words of ≥ 4 chars that may hold `.`, `-` and `$` inside (so
 * `config.max_retries` and `ws-client` stay whole), without stop words or agent filler.
 * These name what a message is about and are matched between turns.
 */
export function contentTerms(text: string): Set<string> {
  const out = new Set<string>();
  const lower = text.toLowerCase();
  const seen = SEEN.begin();
  forEachTerm(lower, (at, stop) => {
    // A word met before in this text (kept or a stop word) is passed over without a string of its own.
    if (!seen.firstTime(lower, at, stop)) return;
    const w = lower.slice(at, stop);
    if (!STOPWORDS.has(w) && !FILLER.has(w)) out.add(ownCopy(w));
  });
  return out;
}

/**
 * Calls `visit(at, stop)` for each content-term occurrence `lower[at, stop)` of a lowercased
 * text, in order: the scan `/[a-z_$][\w$.-]{3,60}/g` makes, without a match object per term (at
 * a start character, take up to 60 following term characters; with fewer than 3, move on by
 * one), each run's trailing `.` and `-` left out, then kept when 4 or more characters are left.
 * The one home of these rules for both content-term readers.
 */
function forEachTerm(lower: string, visit: (at: number, stop: number) => void): void {
  const n = lower.length;
  let at = 0;
  while (at < n) {
    if (!isTermStart(lower.charCodeAt(at))) {
      at++;
      continue;
    }
    let end = at + 1;
    const limit = Math.min(n, at + 61);
    while (end < limit && isTermChar(lower.charCodeAt(end))) end++;
    if (end - at < 4) {
      at++;
      continue;
    }
    let stop = end;
    while (stop > at && (lower.charCodeAt(stop - 1) === 46 || lower.charCodeAt(stop - 1) === 45)) stop--; // trailing . and -
    if (stop - at >= 4) visit(at, stop);
    at = end;
  }
}

/**
 * A content term as a number: its `hash52`, doubled, plus 1 when the term holds `_`, `.` or a
 * digit (identifier-like, which `isIdentifierLikeKey` reads back). An exact integer below
 * 2^53. Indexes over every message of a session keep these instead of term strings; two terms
 * sharing a key (about one chance in 10^6 at 100k distinct terms) count as one.
 */
export function contentTermKey(term: string): number {
  return termKeyOf(hash52(term), IDENTIFIER_MARK.test(term));
}

/** The key of a term of hash `hash52` (the one place the identifier bit is put in). */
function termKeyOf(hash: number, identifierLike: boolean): number {
  return hash * 2 + (identifierLike ? 1 : 0);
}

/** Whether the term behind a `contentTermKey` holds `_`, `.` or a digit. */
export function isIdentifierLikeKey(key: number): boolean {
  return key % 2 === 1;
}

const IDENTIFIER_MARK = /[_.\d]/;

const STOP_KEYS: ReadonlySet<number> = new Set([...STOPWORDS, ...FILLER].map(contentTermKey));

/**
 * The `contentTermKey` of each term of `contentTerms(text)`, each once, in first-seen order,
 * without a string per term: the same scan, hashing each term's characters in place. A cold
 * plan indexes every message of a session this way (the term strings are made only for the
 * messages a summary is written from).
 */
export function contentTermKeys(text: string): Float64Array {
  const lower = text.toLowerCase();
  const seen = SEEN_KEYS.begin();
  forEachTerm(lower, (at, stop) => {
    let a = FNV32_OFFSET_BASIS | 0; // int32 arithmetic throughout (same bits as hash52's lanes)
    let b = HASH52_SECOND_BASIS | 0;
    let mark = false;
    for (let i = at; i < stop; i++) {
      const c = lower.charCodeAt(i);
      if (c === 95 || c === 46 || isDigitCode(c)) mark = true; // what IDENTIFIER_MARK matches
      a = Math.imul(a ^ c, FNV32_PRIME);
      b = Math.imul(b ^ c, FNV32_PRIME);
    }
    const key = termKeyOf(hash52Of(a, b), mark);
    // the stop-word check once per distinct term (a stop word's key is kept as seen too)
    if (seen.firstTime(a, key) && STOP_KEYS.has(key)) seen.drop();
  });
  return seen.keys();
}

/**
 * An open-addressed hash table that one call of a scan fills and the next call reuses: a
 * generation stamp per slot tells the slots this call placed, so `begin` empties it without
 * clearing anything. A subclass keeps its slots' data in typed arrays of `size` slots
 * (`allocateSlots`) and says how a slot's data moves when the table doubles (`homeOf`,
 * `moveSlot`); the table stays at most half full.
 */
abstract class StampedTable<Slots> {
  protected size = FIRST_SLOTS;
  protected stamp = new Uint32Array(FIRST_SLOTS);
  protected gen = 0;
  /** Slots this call placed. */
  private placed = 0;

  /** Empties the table for a new call (back to its first size after a call of many entries). */
  begin(): this {
    this.placed = 0;
    this.reset();
    if (this.size > MAX_KEPT_SLOTS) this.allocate(FIRST_SLOTS);
    this.gen++;
    if (this.gen === 0xffffffff) {
      this.stamp.fill(0);
      this.gen = 1;
    }
    return this;
  }

  /** Marks `slot` (its data just written) as placed by this call, doubling the table once it is half full. */
  protected place(slot: number): void {
    this.stamp[slot] = this.gen;
    if (++this.placed * 2 > this.size) this.grow();
  }

  /** Per-call state of the subclass, emptied at `begin`. */
  protected abstract reset(): void;
  /** Fresh slot arrays of `size` slots; returns the previous ones. */
  protected abstract allocateSlots(size: number): Slots;
  /** The hash a slot of `from` was placed by. */
  protected abstract homeOf(from: Slots, slot: number): number;
  /** Copies slot `slot` of `from` into slot `to` of the current arrays. */
  protected abstract moveSlot(from: Slots, slot: number, to: number): void;

  private allocate(size: number): Slots {
    this.size = size;
    this.stamp = new Uint32Array(size);
    return this.allocateSlots(size);
  }

  private grow(): void {
    const { stamp, gen } = this;
    const old = this.size;
    const from = this.allocate(old * 2);
    const mask = this.size - 1;
    for (let i = 0; i < old; i++) {
      if (stamp[i] !== gen) continue;
      let slot = this.homeOf(from, i) & mask;
      while (this.stamp[slot] === gen) slot = (slot + 1) & mask;
      this.stamp[slot] = gen;
      this.moveSlot(from, i, slot);
    }
  }
}

/**
 * The distinct term keys one `contentTermKeys` call has met, with the order they came in. Keys
 * are placed by their hash's first lane, which the caller has as an int32 (and which is the
 * key's top 32 bits: key = (lane × 2^20 + low) × 2 + mark).
 */
class SeenKeys extends StampedTable<Float64Array> {
  private slotKeys = new Float64Array(FIRST_SLOTS);
  /** The kept keys in first-seen order (`kept` of them; never more than the slots). */
  private order = new Float64Array(FIRST_SLOTS);
  private kept = 0;

  /** True the first time `key` (whose hash's first lane is `lane`) is met since `begin`; it is then kept. */
  firstTime(lane: number, key: number): boolean {
    const mask = this.size - 1;
    for (let slot = lane & mask; ; slot = (slot + 1) & mask) {
      if (this.stamp[slot] !== this.gen) {
        this.slotKeys[slot] = key;
        this.order[this.kept++] = key;
        this.place(slot);
        return true;
      }
      if (this.slotKeys[slot] === key) return false;
    }
  }

  /** Un-keeps the key `firstTime` just kept (it stays in the table: met again, it is not kept either). */
  drop(): void {
    this.kept--;
  }

  /** The kept keys, as an array of their own. */
  keys(): Float64Array {
    return this.order.slice(0, this.kept);
  }

  protected reset(): void {
    this.kept = 0;
  }

  protected allocateSlots(size: number): Float64Array {
    const previous = this.slotKeys;
    const order = new Float64Array(size);
    order.set(this.order.subarray(0, this.kept));
    this.order = order;
    this.slotKeys = new Float64Array(size);
    return previous;
  }

  protected homeOf(from: Float64Array, slot: number): number {
    return Math.floor((from[slot] as number) / 0x200000);
  }

  protected moveSlot(from: Float64Array, slot: number, to: number): void {
    this.slotKeys[to] = from[slot] as number;
  }
}

/**
 * The words one `contentTerms` call has met, as ranges of its lowercased text, placed by a
 * hash of their characters, so a repeated word costs a hash and a comparison of its characters,
 * not a substring and a Set lookup. Holds no string.
 */
class SeenRanges extends StampedTable<{ readonly hash: Int32Array; readonly from: Int32Array; readonly to: Int32Array }> {
  private hash = new Int32Array(FIRST_SLOTS);
  private from = new Int32Array(FIRST_SLOTS);
  private to = new Int32Array(FIRST_SLOTS);

  /** True the first time `text[from, to)` is met since `begin` (`text` is the same string throughout a call). */
  firstTime(text: string, from: number, to: number): boolean {
    let h = FNV32_OFFSET_BASIS | 0; // as an int32 (same bits)
    for (let i = from; i < to; i++) h = Math.imul(h ^ text.charCodeAt(i), FNV32_PRIME);
    const mask = this.size - 1;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      if (this.stamp[slot] !== this.gen) {
        this.hash[slot] = h;
        this.from[slot] = from;
        this.to[slot] = to;
        this.place(slot);
        return true;
      }
      if (this.hash[slot] === h && this.same(text, this.from[slot] as number, this.to[slot] as number, from, to)) return false;
    }
  }

  private same(text: string, a: number, aEnd: number, b: number, bEnd: number): boolean {
    if (aEnd - a !== bEnd - b) return false;
    for (; a < aEnd; a++, b++) if (text.charCodeAt(a) !== text.charCodeAt(b)) return false;
    return true;
  }

  protected reset(): void {}

  protected allocateSlots(size: number): { hash: Int32Array; from: Int32Array; to: Int32Array } {
    const previous = { hash: this.hash, from: this.from, to: this.to };
    this.hash = new Int32Array(size);
    this.from = new Int32Array(size);
    this.to = new Int32Array(size);
    return previous;
  }

  protected homeOf(from: { readonly hash: Int32Array }, slot: number): number {
    return from.hash[slot] as number;
  }

  protected moveSlot(from: { readonly hash: Int32Array; readonly from: Int32Array; readonly to: Int32Array }, slot: number, to: number): void {
    this.hash[to] = from.hash[slot] as number;
    this.from[to] = from.from[slot] as number;
    this.to[to] = from.to[slot] as number;
  }
}

/** Slots of the table at first. */
const FIRST_SLOTS = 1 << 12;
/** Table slots kept between calls (1-1.3 MiB of typed arrays per table); a larger table is dropped at the next call. */
const MAX_KEPT_SLOTS = 1 << 16;
const SEEN = new SeenRanges();
const SEEN_KEYS = new SeenKeys();

/** `[a-z_$]` */
function isTermStart(c: number): boolean {
  return (c >= 97 && c <= 122) || c === 95 || c === 36;
}

/** `[\w$.-]` (\w without the u flag: ASCII letters, digits, underscore). */
function isTermChar(c: number): boolean {
  return (c >= 97 && c <= 122) || isDigitCode(c) || (c >= 65 && c <= 90) || c === 95 || c === 36 || c === 46 || c === 45;
}

/**
 * `s` as a string of its own. V8 keeps a substring of 13 chars or more as a view of its
 * parent — here the lowercased copy of a whole message — so a cached term would keep that
 * copy alive; a JSON round trip makes a fresh flat string (exact for every string).
 */
export function ownCopy(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}

/**
 * Hashes of the word shingles (`size` consecutive raw words, stop words kept) of `text`: each
 * shingle hashes its words' hashes. Texts with fewer words than `size` give one hash per word.
 */
export function shingleHashes(text: string, size = 3): Uint32Array {
  return analyseText(text, size).shingles;
}
