/** Character classes by UTF-16 code, for scans that read a text without cutting it into strings. */

/**
 * True for what `\s` matches (and `trim` strips): ECMAScript white space and line terminators
 * (tab, LF, VT, FF, CR, space, NBSP, U+1680, U+2000–U+200A, LS, PS, U+202F, U+205F, U+3000, BOM).
 */
export function isSpaceCode(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** True for what `\d` matches (without the `u` flag): an ASCII digit. */
export function isDigitCode(c: number): boolean {
  return c >= 48 && c <= 57;
}
