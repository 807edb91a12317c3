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

describe('textLanes mixing (two units a step)', () => {
  it("every lane's low 16 bits depend on every unit, not only on each pair's second unit", () => {
    // Lane 0 is FNV-1a (xor, multiply: carries only move up), so the first unit of a pair,
    // packed into the word's high 16 bits, never reaches the lane's low 16 bits — the store
    // key's bits 21-36 — and a bit-15 change of two such units cancels in lane 0 entirely.
    const out = new Uint32Array(3);
    const low = [new Set<number>(), new Set<number>(), new Set<number>()];
    for (let i = 0; i < 2000; i++) {
      let t = '';
      for (const d of String(i).padStart(6, '0')) t += `${d}y`; // only the even-indexed units vary
      textLanes(t, out);
      for (let k = 0; k < 3; k++) low[k]?.add((out[k] as number) & 0xffff);
    }
    expect(low.map((s) => s.size > 1900)).toEqual([true, true, true]);
    const base = 'The retry loop in pool.ts reads config.max_retries';
    const flipped = [...base].map((c, i) => (i === 2 || i === 10 ? String.fromCharCode(c.charCodeAt(0) ^ 0x8000) : c)).join('');
    const a = new Uint32Array(3);
    const b = new Uint32Array(3);
    textLanes(base, a);
    textLanes(flipped, b);
    expect(a[0]).not.toBe(b[0]);
  });
});
