/** Stable non-cryptographic hashes of strings (ids, handles, shingles) without node:crypto. */

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
 * A 52-bit hash of a string as an exact double (two FNV-1a passes with different offset
 * bases): a compact stand-in for the string in set comparisons, where a 32-bit hash would
 * collide within a few tens of thousands of strings.
 */
export function hash52(s: string): number {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193);
  }
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
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  let c = 0x2c1b3c6d;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    a = Math.imul(a ^ ch, 0x01000193);
    b = Math.imul(b ^ ch, 0x5bd1e995);
    b ^= b >>> 13;
    c = Math.imul(c ^ ch, 0x27d4eb2f);
    c ^= c >>> 16;
  }
  out[0] = a >>> 0;
  out[1] = b >>> 0;
  out[2] = c >>> 0;
}
