import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { contentTermKey, contentTermKeys, contentTerms, hash52, isIdentifierLikeKey, STOPWORDS } from '../../src/text/index.js';

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

/** The keys of `contentTerms(text)`, in its order: what `contentTermKeys` must give. */
function keysOfTerms(text: string): number[] {
  return [...contentTerms(text)].map(contentTermKey);
}

describe('contentTermKeys', () => {
  const piece = fc.oneof(
    fc.string({ maxLength: 10 }),
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.constantFrom('Pool', 'pool', 'POOL.', 'Config.MAX_retries', 'ws-client-', 'there', 'THERE', 'Because', 'x'.repeat(70), 'Y'.repeat(130), 'É', 'ß', 'İstanbul', 'KELVIN', '\u212aelvin', 'ΟΔΟΣ', '$var', '_priv', 'v2.1', ' ', '\n', '.', '-', '—', '…'),
  );

  it('gives the keys of the terms of contentTerms, in first-seen order, for any text', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), (parts) => {
        const text = parts.join(parts.length % 2 === 0 ? ' ' : '');
        expect([...contentTermKeys(text)]).toEqual(keysOfTerms(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('holds across texts of many distinct words and long runs of term characters', () => {
    const many = Array.from({ length: 40_000 }, (_, i) => `Term${i.toString(36)} term${(i % 977).toString(36)}.`).join(' ');
    for (const text of [many, `${'a'.repeat(250)} ${'B_'.repeat(99)}`, 'pool', '', 'the there because']) expect([...contentTermKeys(text)]).toEqual(keysOfTerms(text));
  });

  it('marks identifier-like terms (holding _, . or a digit) in the key', () => {
    expect(contentTermKey('max_retries')).toBe(hash52('max_retries') * 2 + 1);
    expect(isIdentifierLikeKey(contentTermKey('config.json'))).toBe(true);
    expect(isIdentifierLikeKey(contentTermKey('v2beta'))).toBe(true);
    expect(isIdentifierLikeKey(contentTermKey('ws-client'))).toBe(false);
    expect(isIdentifierLikeKey(contentTermKey('pool'))).toBe(false);
  });
});
