import { createRequire } from 'node:module';
import type { Tiktoken, TiktokenEncoding } from 'tiktoken';

const requireHere = createRequire(import.meta.url);

/**
 * Where tiktoken's entry file is, resolved as this module loads (a stat and a read of its
 * package.json). Not at the first count: Node remembers a package.json it could not read as
 * missing for the life of the process, so a first resolve under descriptor pressure (EMFILE,
 * the first scan of many transcripts) left `require('tiktoken')` failing for good — every count,
 * every model, until a restart. Resolved here, the lazy load below reads files by path only,
 * and a load that fails is tried again at the next count.
 */
let tiktokenEntry: string | undefined = resolveTiktoken();

function resolveTiktoken(): string | undefined {
  try {
    return requireHere.resolve('tiktoken');
  } catch {
    return undefined; // resolved (and its failure reported) at the first count
  }
}

// tiktoken instantiates its WASM when loaded: required on first count, so a module that only
// needs the constants below (a hook's daemon-down bootstrap) does not pay for it.
const requireTiktoken = (): typeof import('tiktoken') => requireHere((tiktokenEntry ??= requireHere.resolve('tiktoken'))) as typeof import('tiktoken');

/** Counts tokens of text. Implementations must be deterministic for the same input. */
export interface TokenCounter {
  /** Name of the encoding, e.g. `o200k_base`. */
  readonly encoding: string;
  count(text: string): number;
}

/** Fixed token estimate for one image or opaque binary part (never tokenized as text). */
export const IMAGE_TOKEN_ESTIMATE = 1_500;
/** Per-message framing overhead in chat formats (role, separators). */
export const MESSAGE_OVERHEAD_TOKENS = 4;

export const SUPPORTED_ENCODINGS = ['o200k_base', 'cl100k_base'] as const;
export type EncodingName = (typeof SUPPORTED_ENCODINGS)[number];

/** Encoders loaded, per encoding: only loads that succeeded (a failed one is tried again). */
const encoders = new Map<string, Tiktoken>();

function encoderFor(encoding: EncodingName): Tiktoken {
  let enc = encoders.get(encoding);
  if (!enc) {
    enc = requireTiktoken().get_encoding(encoding as TiktokenEncoding);
    encoders.set(encoding, enc);
  }
  return enc;
}

/**
 * Longest run of non-white-space characters tokenized in one piece. tiktoken's BPE works on
 * the pieces its pattern splits text into, in time that grows with the square of a piece's
 * length: one 100k-char run of letters (a base64 blob, a minified file, padding) held the
 * daemon's event loop for 4-9 s. Runs longer than this are counted in pieces of this size.
 */
export const LONGEST_RUN_CHARS = 512;
const LONG_RUN = new RegExp(`\\S{${LONGEST_RUN_CHARS + 1},}`, 'g');

/**
 * Tokens of `text` by `encode`: exact when no run of non-white-space is longer than
 * LONGEST_RUN_CHARS; each longer run is counted in pieces of that many chars (a token or two
 * more per piece than counted whole, at most).
 */
export function countInPieces(text: string, encode: (piece: string) => number): number {
  LONG_RUN.lastIndex = 0;
  if (!LONG_RUN.test(text)) return encode(text);
  let total = 0;
  let from = 0;
  LONG_RUN.lastIndex = 0; // (matchAll starts where `test` left it)
  for (const m of text.matchAll(LONG_RUN)) {
    if (m.index > from) total += encode(text.slice(from, m.index));
    const end = m.index + m[0].length;
    for (let at = m.index; at < end; ) {
      let cut = Math.min(end, at + LONGEST_RUN_CHARS);
      // never between the two halves of a surrogate pair
      if (cut < end && isHighSurrogate(text.charCodeAt(cut - 1))) cut++;
      total += encode(text.slice(at, cut));
      at = cut;
    }
    from = end;
  }
  if (from < text.length) total += encode(text.slice(from));
  return total;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A tiktoken-backed counter. Encoders are shared per process (the WASM tables are large).
 * Special-token text inside transcripts (e.g. `<|endoftext|>`) is counted as ordinary text.
 * Very long runs without white space are counted in pieces (`countInPieces`).
 */
export function createTokenCounter(encoding: EncodingName = 'o200k_base'): TokenCounter {
  // Built on the first count: loading the BPE tables costs about a second of CPU, which a
  // restart whose counts all come from the token cache never needs to pay before it answers.
  // A load that throws (EMFILE reading the WASM) leaves nothing behind: the next count tries again.
  let enc: Tiktoken | undefined;
  return {
    encoding,
    count(text: string): number {
      if (text.length === 0) return 0;
      const e = (enc ??= encoderFor(encoding));
      return countInPieces(text, (piece) => e.encode_ordinary(piece).length);
    },
  };
}

/**
 * A lasting memo of token counts, injected by whoever owns storage (the daemon backs it with
 * SQLite keyed by a hash of the texts), so a message counted once is never tokenized again —
 * not after a restart either. One entry holds the counts of all the texts of one message, so
 * a message costs one lookup however many parts it has. Implementations must return exactly
 * the counts they were given for the same texts.
 */
export interface TokenCountCache {
  get(encoding: string, texts: readonly string[]): readonly number[] | undefined;
  set(encoding: string, texts: readonly string[], counts: readonly number[]): void;
  /**
   * The counts of many messages' texts at once (undefined where not cached), in order: one
   * storage round trip for a whole batch of appended lines instead of one per message.
   */
  getMany?(encoding: string, textsList: readonly (readonly string[])[]): (readonly number[] | undefined)[];
}

/**
 * Messages shorter than this (all parts together) are counted directly when looked up one at a
 * time: cheaper than a lookup. In a batch (`countTextsMany`) every message is looked up.
 */
export const MIN_CACHED_CHARS = 64;

/** The token counts of `texts`, read from `cache` when it has them (and stored there when not). */
export function countTexts(counter: TokenCounter, texts: readonly string[], cache?: TokenCountCache): number[] {
  const chars = texts.reduce((n, t) => n + t.length, 0);
  const cached = cache && chars >= MIN_CACHED_CHARS;
  if (cached) {
    const hit = cache.get(counter.encoding, texts);
    if (hit && hit.length === texts.length) return [...hit];
  }
  const counts = texts.map((t) => (t.length === 0 ? 0 : counter.count(t)));
  if (cached) cache.set(counter.encoding, texts, counts);
  return counts;
}

/**
 * `countTexts` for many messages: looked up together (`getMany`, when the cache has it), the
 * ones not found counted and stored. Returns the counts in order. In a batch a lookup costs
 * less than counting even a short message, and a batch served entirely from the cache (a
 * restart) never loads the tokenizer's tables.
 */
export function countTextsMany(counter: TokenCounter, textsList: readonly (readonly string[])[], cache?: TokenCountCache): number[][] {
  if (!cache?.getMany) return textsList.map((texts) => countTexts(counter, texts, cache));
  const out: number[][] = new Array<number[]>(textsList.length);
  const asked: number[] = [];
  textsList.forEach((texts, i) => {
    if (texts.some((t) => t.length > 0)) asked.push(i);
    else out[i] = texts.map(() => 0);
  });
  const hits = asked.length > 0 ? cache.getMany(counter.encoding, asked.map((i) => textsList[i] as readonly string[])) : [];
  asked.forEach((i, k) => {
    const texts = textsList[i] as readonly string[];
    const hit = hits[k];
    if (hit && hit.length === texts.length) {
      out[i] = [...hit];
      return;
    }
    const counts = texts.map((t) => (t.length === 0 ? 0 : counter.count(t)));
    cache.set(counter.encoding, texts, counts);
    out[i] = counts;
  });
  return out;
}

/** The tokenizer family a model name implies: GPT-4o/4.1/5/o-series use o200k; older GPT-4/3.5 cl100k. */
export function encodingForModel(model: string | undefined): EncodingName {
  if (!model) return 'o200k_base';
  const m = model.toLowerCase();
  if (/^gpt-4(?!o|\.1|\.5)|^gpt-3\.5|text-embedding-3|text-embedding-ada/.test(m)) return 'cl100k_base';
  return 'o200k_base';
}
