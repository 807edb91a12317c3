import { describe, expect, it } from 'vitest';
import { LoopBudget } from '../../src/daemon/loop-budget.js';

/** Workers that each take `steps` steps, pausing through their own hook before each. */
async function run(budget: LoopBudget, names: readonly string[], steps: number, log: string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const pause = budget.hook();
      for (let i = 0; i < steps; i++) {
        await pause();
        log.push(name);
      }
    }),
  );
}

describe('LoopBudget (one slice per event-loop iteration, shared)', () => {
  it('with no budget, every worker takes one step per iteration, in turn: none is starved, and I/O runs between', async () => {
    const budget = new LoopBudget(() => 0);
    const log: string[] = [];
    // An I/O-like callback of every iteration: it must interleave with the steps.
    let ticking = true;
    const tick = (): void => {
      log.push('|');
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    await run(budget, ['a', 'b', 'c'], 3, log);
    ticking = false;
    const steps = log.join('').split('|').filter((x) => x.length > 0);
    expect(steps).toEqual(['abc', 'abc', 'abc']);
  });

  it('while the budget lasts a worker goes on without yielding (only its first step waits for the next iteration)', async () => {
    const budget = new LoopBudget(() => Number.POSITIVE_INFINITY);
    const log: string[] = [];
    await run(budget, ['a', 'b', 'c'], 3, log);
    expect(log.join('')).toBe('aaabbbccc');
    expect(budget.left()).toBe(true);
  });
});
