import { describe, expect, it } from 'vitest';
import { textLanes } from '../../src/text/index.js';

const lanesOf = (s: string): string => {
  const out = new Uint32Array(3);
  textLanes(s, out);
  return [...out].join(',');
};

describe('textLanes', () => {
  it('tells apart texts that differ in one unit anywhere, in order, or by an odd last unit', () => {
    const base = 'The retry loop in pool.ts reads config.max_retries — ünïcode 🙂 and a tail';
    const seen = new Map<string, string>();
    const texts = [base, base.slice(0, -1), `${base}x`, `x${base}`, 'ab', 'ba', 'a', 'b', '', '\u0000', '\u0000\u0000', '\u0001\u0000', '\u0000\u0001'];
    for (let i = 0; i < base.length; i++) texts.push(`${base.slice(0, i)}${String.fromCharCode(base.charCodeAt(i) ^ 1)}${base.slice(i + 1)}`);
    for (const t of texts) {
      const lanes = lanesOf(t);
      expect(seen.get(lanes), `${JSON.stringify(t)} shares its lanes`).toBeUndefined();
      seen.set(lanes, t);
    }
  });

  it('gives the same lanes for the same text, whatever string object holds it', () => {
    const t = 'same text, built twice';
    expect(lanesOf(['same text,', 'built twice'].join(' '))).toBe(lanesOf(t));
  });
});
