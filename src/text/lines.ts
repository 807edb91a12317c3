/**
 * Lines of a text as the near-duplicate tests compare them: trimmed, whitespace runs as one
 * space, empty lines left out; as strings (`lineSet`) or as their 52-bit hashes (`lineHashes`).
 */
import { isSpaceCode } from './chars.js';
import { FNV32_OFFSET_BASIS, FNV32_PRIME, hash52Of, HASH52_SECOND_BASIS } from './hash.js';

/** Set of trimmed non-empty lines (whitespace-normalized), for near-duplicate tests. */
export function lineSet(text: string): Set<string> {
  const out = new Set<string>();
  for (const l of text.split('\n')) {
    const trimmed = l.trim();
    // collapsing is the identity unless some whitespace run is not a single space
    const t = /\s\s|[^\S ]/.test(trimmed) ? trimmed.replace(/\s+/g, ' ') : trimmed;
    if (t.length > 0) out.add(t);
  }
  return out;
}

/**
 * The `hash52` of each line of `lineSet(text)`, sorted and distinct, read in one pass over the
 * text without making a string per line: each line is hashed as it is normalized (trimmed,
 * whitespace runs as one space). Same values as `hash52` of the `lineSet` strings (a test pins
 * it). The derived data of a text holds them (model/derived.ts), so a cold plan reads a
 * tool output's line set instead of hashing it again.
 */
export function lineHashes(text: string): Float64Array {
  let lines = 1;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  const hashes = new Float64Array(lines);
  let n = 0;
  let i = 0;
  const end = text.length;
  while (i <= end) {
    let a = FNV32_OFFSET_BASIS | 0; // as an int32 (same bits): the loop stays on int32 arithmetic
    let b = HASH52_SECOND_BASIS;
    let started = false;
    let gap = false;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c <= 32 || c >= 0xa0) {
        if (c === 10) break;
        if (isSpaceCode(c)) {
          gap = started;
          continue;
        }
      }
      if (gap) {
        a = Math.imul(a ^ 32, FNV32_PRIME);
        b = Math.imul(b ^ 32, FNV32_PRIME);
        gap = false;
      }
      a = Math.imul(a ^ c, FNV32_PRIME);
      b = Math.imul(b ^ c, FNV32_PRIME);
      started = true;
    }
    i++; // past the line break (or the end)
    if (!started) continue;
    hashes[n++] = hash52Of(a, b);
  }
  const out = hashes.subarray(0, n).sort();
  let k = 0;
  for (let j = 0; j < n; j++) if (j === 0 || out[j] !== out[k - 1]) out[k++] = out[j] as number;
  return k === lines ? hashes : hashes.slice(0, k);
}
