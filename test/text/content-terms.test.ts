import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { contentTerms, STOPWORDS } from '../../src/text/index.js';

/** The scan contentTerms stands for, written plainly: a substring and a set lookup per match. */
function reference(text: string): string[] {
  const filler = new Set('while done because file line lines going think know upon'.split(' '));
  const out = new Set<string>();
  for (const m of text.toLowerCase().matchAll(/[a-z_$][\w$.-]{3,60}/g)) {
    const w = m[0].replace(/[.-]+$/, '');
    if (w.length >= 4 && !STOPWORDS.has(w) && !filler.has(w)) out.add(w);
  }
  return [...out];
}

describe('contentTerms', () => {
  it('gives the terms of the plain scan, in first-seen order, for any text', () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 10 }),
      fc.constantFrom('Pool', 'pool', 'POOL.', 'config.max_retries', 'ws-client-', 'there', 'because', 'x'.repeat(70), 'É', 'ß', 'İstanbul', '$var', '_priv', ' ', '\n', '.', '-'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), (parts) => {
        const text = parts.join(' ');
        expect([...contentTerms(text)]).toEqual(reference(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('holds across texts of many distinct words (its table grows, then shrinks again)', () => {
    const many = Array.from({ length: 40_000 }, (_, i) => `term${i.toString(36)} Term${(i % 977).toString(36)}`).join(' ');
    for (const text of [many, 'after the big one: pool pool config', many.slice(0, 50_000), 'pool']) {
      expect([...contentTerms(text)]).toEqual(reference(text));
    }
  });
});
