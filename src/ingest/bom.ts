/**
 * The UTF-8 byte order mark at the start of a transcript file. JSON.parse refuses a leading
 * U+FEFF, so every reader of a transcript's first line skips it there, and only there: a mark
 * anywhere else is text (and a line that starts with one is malformed, as any other).
 */

/** The UTF-8 byte order mark (U+FEFF). */
const UTF8_BOM = Uint8Array.of(0xef, 0xbb, 0xbf);

/** Bytes of a UTF-8 byte order mark at the start of `bytes`: 3 when there is one, else 0. */
export function utf8BomLength(bytes: Uint8Array): number {
  return bytes.length >= UTF8_BOM.length && bytes[0] === UTF8_BOM[0] && bytes[1] === UTF8_BOM[1] && bytes[2] === UTF8_BOM[2] ? UTF8_BOM.length : 0;
}

/** A whole file's bytes as text, without the byte order mark it may start with. */
export function decodeUtf8File(bytes: Buffer): string {
  return bytes.toString('utf8', utf8BomLength(bytes));
}
