import { describe, expect, it } from 'vitest';
import { LoopBudget } from '../../src/daemon/loop-budget.js';

/** Workers that each take `steps` steps, pausing through their planner hook before each. */
async function run(budget: LoopBudget, names: readonly string[], steps: number, log: string[]): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const w = budget.worker();
      const pause = w.hook();
      try {
        for (let i = 0; i < steps; i++) {
          await pause();
          log.push(name);
        }
      } finally {
        w.done();
      }
    }),
  );
}

describe('LoopBudget (a slice per event-loop iteration, shared out to the workers)', () => {
  it('with no slice, every worker takes one step per iteration, in turn: none is starved, and I/O runs between', async () => {
    const budget = new LoopBudget(() => 0);
    const log: string[] = [];
    // A callback of every iteration (as a socket read would be): it must interleave with the steps.
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
    expect(budget.workers).toBe(0);
  });

  it('while its share lasts a worker goes on without yielding (only its first step waits for the next iteration)', async () => {
    const budget = new LoopBudget(() => Number.POSITIVE_INFINITY);
    const log: string[] = [];
    await run(budget, ['a', 'b', 'c'], 3, log);
    expect(log.join('')).toBe('aaabbbccc');
  });

  it('counts its workers; done() is idempotent', () => {
    const budget = new LoopBudget(() => 4);
    const a = budget.worker();
    const b = budget.worker();
    expect(budget.workers).toBe(2);
    a.done();
    a.done();
    expect(budget.workers).toBe(1);
    b.done();
    expect(budget.workers).toBe(0);
  });
});
