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

/** 64-bit FNV-1a as 16 hex digits: stable ids and handles. */
export function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * prime) & mask;
  }
  return h.toString(16).padStart(16, '0');
}
