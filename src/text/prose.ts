/** Sentences, constraints, clipping and small collection helpers over prose. Pure. */

/** Lowercase, collapse whitespace. */
export function normalizeSpace(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim();
}

/** Deduplicate keeping first occurrence. */
export function uniq<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

/** Clip a string to `max` chars on a word boundary, marking the cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, Math.max(0, max - 1));
  const sp = cut.lastIndexOf(' ');
  return `${sp > max * 0.6 ? cut.slice(0, sp) : cut}…`;
}

/** Jaccard similarity of two sets. */
export function jaccard<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of small) if (large.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

/** Split prose into sentences and lines (code fences are left as lines). */
export function sentences(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+(?=[A-Z`"'(\[])/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The last `n` sentences of a text (its conclusion). */
export function lastSentences(text: string, n: number): string[] {
  const all = sentences(text).filter((s) => !/^[`~]{3}/.test(s));
  return all.slice(Math.max(0, all.length - n));
}

const CONSTRAINT_RE = /\b(must|never|always|do not|don't|dont|should not|shouldn't|must not|mustn't|required|make sure|ensure|only use|avoid)\b/i;

/** Sentences that state a constraint ("must", "never", "always", "do not" …). */
export function extractConstraints(text: string): string[] {
  return uniq(sentences(text).filter((s) => CONSTRAINT_RE.test(s) && s.length <= 300));
}

/**
 * Phrases that point at text the reader may no longer have ("see above", "as shown below",
 * "See above for more details"). A summary must not carry them: the text they point at is gone.
 */
const DANGLING_RE = /\s*\(?\b(?:see|shown|as|details|output|listed|mentioned|described)\s+(?:(?:the\s+)?(?:output\s+|error\s+|log\s+)?(?:above|below))(?:\s+for\s+(?:more\s+)?details)?\)?\.?/gi;

/**
 * `text` without dangling "see above"-style references. Only where one was cut does the text
 * before it close up on a following `.`, `,`, `;` or `:`; elsewhere a space before them stays
 * (`find . -name`, `git add .gitignore`, `matrix(.57 0 0 .57)`).
 */
export function stripDanglingRefs(text: string): string {
  let out = '';
  let from = 0;
  for (const m of text.matchAll(DANGLING_RE)) {
    out += text.slice(from, m.index);
    from = m.index + m[0].length;
    const gap = /^\s*(?=[.,;:])/.exec(text.slice(from));
    if (gap) {
      out = out.trimEnd();
      from += gap[0].length;
    }
  }
  return (out + text.slice(from)).trim();
}
