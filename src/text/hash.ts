/** Stable non-cryptographic hashes of strings (ids, handles, shingles) without node:crypto. */

/**
 * FNV-1a's 32-bit offset basis and prime: the one home of the constants every FNV-1a loop of
 * the project starts from and multiplies by (some loops are written out inline where a call per
 * character or word cost too much; tests pin them to the functions here).
 */
export const FNV32_OFFSET_BASIS = 0x811c9dc5;
export const FNV32_PRIME = 0x01000193;
/** The offset basis of `hash52`'s second lane (its low 20 bits). */
export const HASH52_SECOND_BASIS = 0x050c5d1f;

/** 32-bit FNV-1a hash of a string. */
export function fnv1a32(s: string): number {
  let h = FNV32_OFFSET_BASIS;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, FNV32_PRIME);
  }
  return h >>> 0;
}

/**
 * A 52-bit hash of a string as an exact double (two FNV-1a passes with different offset
 * bases): a compact stand-in for the string in set comparisons, where a 32-bit hash would
 * collide within a few tens of thousands of strings.
 */
export function hash52(s: string): number {
  let a = FNV32_OFFSET_BASIS;
  let b = HASH52_SECOND_BASIS;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, FNV32_PRIME);
    b = Math.imul(b ^ c, FNV32_PRIME);
  }
  return hash52Of(a, b);
}

/**
 * The 52-bit value of `hash52`'s two lanes (the first lane's 32 bits, then the second's low
 * 20): for the loops that hash a line or a term inline, as the characters go by.
 */
export function hash52Of(a: number, b: number): number {
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}

/**
 * 64-bit FNV-1a as 16 hex digits: stable ids and handles. Computed on two 32-bit halves
 * (the prime is 2^40 + 0x1b3, so `h × prime` is `h × 0x1b3 + (h << 40)`): the planner hashes
 * every edit's message ids on every plan, and BigInt arithmetic per character cost more than
 * the rest of building an edit.
 */
export function fnv1a64(text: string): string {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < text.length; i++) {
    lo = (lo ^ text.charCodeAt(i)) >>> 0;
    const p = lo * 0x1b3; // < 2^41: exact
    hi = (Math.imul(hi, 0x1b3) + Math.floor(p / 0x100000000) + (lo << 8)) >>> 0;
    lo = p >>> 0;
  }
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/**
 * Three 32-bit FNV-1a-style lanes of a string in one pass (different offset bases
 * and primes), written to `out[0..2]`: lanes 0–1 make a 64-bit cache key, lane 2 a check a
 * cache row keeps of the text it was made from, so two texts sharing a key (a collision) are
 * told apart by the row and recomputed, never confused. Much cheaper than a SHA-1 per text
 * for the many short texts of a session, and allocates nothing.
 */
export function textLanes(s: string, out: Uint32Array): void {
  let a = FNV32_OFFSET_BASIS;
  let b = HASH52_SECOND_BASIS;
  let c = 0x2c1b3c6d;
  const n = s.length;
  // Two UTF-16 units per step, as one 32-bit value: a cold plan keys every fragment text of a
  // session, and this loop was a twentieth of it; an odd last unit goes alone.
  for (let i = 0; i < n; i += 2) {
    const ch = i + 1 < n ? (s.charCodeAt(i) << 16) | s.charCodeAt(i + 1) : s.charCodeAt(i);
    a = Math.imul(a ^ ch, FNV32_PRIME);
    // a multiply carries bits only upward: without this shift lane a's low 16 bits would never
    // see a pair's first unit (the value's high half)
    a ^= a >>> 15;
    b = Math.imul(b ^ ch, 0x5bd1e995);
    b ^= b >>> 13;
    c = Math.imul(c ^ ch, 0x27d4eb2f);
    c ^= c >>> 16;
  }
  // the length last: an odd last unit U and a last pair (0, U) are the same 32-bit value
  a = Math.imul(a ^ n, FNV32_PRIME);
  b = Math.imul(b ^ n, 0x5bd1e995);
  c = Math.imul(c ^ n, 0x27d4eb2f);
  out[0] = a >>> 0;
  out[1] = b >>> 0;
  out[2] = c >>> 0;
}
