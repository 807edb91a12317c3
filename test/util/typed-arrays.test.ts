import { describe, expect, it } from 'vitest';
import { doubled } from '../../src/util/typed-arrays.js';

describe('doubled', () => {
  it('gives an array of the same kind, twice as long, with the values first and zeros after', () => {
    const a = Int32Array.from([-1, 5, 7]);
    const b = doubled(a);
    expect(b).toBeInstanceOf(Int32Array);
    expect([...b]).toEqual([-1, 5, 7, 0, 0, 0]);
    expect(a).not.toBe(b);
    const f = doubled(Float64Array.from([2 ** 52 + 1]));
    expect(f).toBeInstanceOf(Float64Array);
    expect([...f]).toEqual([2 ** 52 + 1, 0]);
    expect([...doubled(new Uint32Array(0))]).toEqual([0]);
  });
});
