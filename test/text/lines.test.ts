import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { hash52, lineHashes, lineSet } from '../../src/text/index.js';

/** What `lineHashes` stands for: the hash52 of each lineSet line, sorted and distinct. */
function reference(text: string): number[] {
  return [...new Set([...lineSet(text)].map(hash52))].sort((a, b) => a - b);
}

describe('lineHashes', () => {
  it('equals hash52 of each lineSet line, sorted and distinct', () => {
    const cases = [
      '',
      '\n\n',
      'one line',
      '  padded  \n\tTabbed\tline \r\nsame   line\nsame line\n',
      'a\u00a0\u00a0b\n\u2028x\u3000y\ufeff\n\v\f\n\u2000lead and trail\u205f',
      'é ünïcode — “quotes” 🙂\nrepeat\nrepeat\n',
    ];
    for (const text of cases) expect([...lineHashes(text)]).toEqual(reference(text));
    const piece = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u2028', '\u3000', '\ufeff', 'x', 'y'));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
        const text = parts.join('');
        expect([...lineHashes(text)]).toEqual(reference(text));
      }),
      { numRuns: 500 },
    );
  });

  it('holds for many lines, repeated ones among them', () => {
    const text = Array.from({ length: 5000 }, (_, i) => `line ${i % 3000}`).join('\n');
    const got = lineHashes(text);
    expect(got.length).toBe(3000);
    expect([...got]).toEqual(reference(text));
  });
});
