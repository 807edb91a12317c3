/**
 * Building SQLite FTS5 MATCH expressions from text a person or an agent typed. FTS5 has its own
 * query syntax (quotes, `AND`/`OR`/`NOT`, `NEAR`, `*`, `:`, `^`, parentheses), so raw input is
 * never passed to MATCH: it is cut into letter/digit words, each quoted as a string, and the
 * words are OR-ed so BM25 ranks rows that match more (and rarer) words first. Punctuation in
 * the input can therefore never cause an FTS5 syntax error.
 */

/** Most words a MATCH expression is built from; the rest of a long query is ignored. */
export const MAX_MATCH_TERMS = 64;

/** The letter/digit words of `text`, lower-cased, de-duplicated, in order of first appearance. */
export function matchTerms(text: string): string[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, MAX_MATCH_TERMS);
}

/**
 * A MATCH expression matching rows that contain any of `terms` (each quoted; embedded quotes
 * dropped), or `undefined` when no term is left.
 */
export function matchAny(terms: readonly string[]): string | undefined {
  const clean = [...new Set(terms.map((t) => t.replace(/"/g, '').trim()).filter((t) => t.length > 0))].slice(0, MAX_MATCH_TERMS);
  if (clean.length === 0) return undefined;
  return clean.map((t) => `"${t}"`).join(' OR ');
}

/** A MATCH expression for free text typed by a person or an agent (see the module note). */
export function matchText(text: string): string | undefined {
  return matchAny(matchTerms(text));
}
