import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { boundedJaccard } from '../../src/compact/detectors/redundant-tool-output.js';

/** Sorted distinct values as the detector's line sets hold them. */
const lineSet = fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 50 }).map((xs) => Float64Array.from(xs.sort((p, q) => p - q)));

describe('the redundant-output line-set similarity', () => {
  it('is the exact Jaccard similarity when it reaches the threshold, else -1', () => {
    fc.assert(
      fc.property(lineSet, lineSet, fc.constantFrom(0.5, 0.3, 0.75, 0.9, 1), (a, b, need) => {
        const inA = new Set(a);
        const inter = [...b].filter((x) => inA.has(x)).length;
        const union = a.length + b.length - inter;
        const sim = union === 0 ? Number.NaN : inter / union;
        const expected = sim >= need ? sim : -1;
        if (a.length === 0 || b.length === 0) return; // never compared: a shape needs an output line
        expect(boundedJaccard(a, b, need)).toBe(expected);
      }),
      { numRuns: 20_000 },
    );
  });
});
