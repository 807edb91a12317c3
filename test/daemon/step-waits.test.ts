import { describe, expect, it } from 'vitest';
import { StepWaits } from '../../src/daemon/step-waits.js';

describe('sessions waiting for their kept steps', () => {
  it('lets what waits for a key go on when it stops, clears its watch, and knows no other key', async () => {
    const waits = new StepWaits<string>();
    let looked = 0;
    const watch = setInterval(() => looked++, 1);
    waits.start('a', watch);
    waits.start('b');
    expect(waits.until('c')).toBeUndefined();
    const order: string[] = [];
    const a = waits.until('a')?.then(() => order.push('a'));
    const b = waits.until('b')?.then(() => order.push('b'));
    waits.stop('b');
    await b;
    expect(order).toEqual(['b']);
    expect(waits.keys()).toEqual(['a']);
    waits.stop('a');
    await a;
    const seen = looked;
    await new Promise((r) => setTimeout(r, 20));
    expect(looked).toBe(seen); // the watch interval was cleared
    expect(waits.keys()).toEqual([]);
    waits.stop('a'); // stopping twice is nothing
  });
});
