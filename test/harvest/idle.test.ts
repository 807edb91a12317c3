import { describe, expect, it } from 'vitest';
import { IdleTracker } from '../../src/harvest/index.js';

const MIN = 60_000;

describe('IdleTracker', () => {
  it('reports a session once it has been idle for the timeout (default 30 min)', () => {
    const t = new IdleTracker();
    t.touch('a', 0);
    t.touch('b', 10 * MIN);
    expect(t.due(29 * MIN)).toEqual([]);
    expect(t.due(30 * MIN)).toEqual(['a']);
    expect(t.due(30 * MIN)).toEqual([]); // reported once
    expect(t.due(40 * MIN)).toEqual(['b']);
    expect(t.size).toBe(0);
  });

  it('activity re-arms the timeout; old timestamps do not move it back', () => {
    const t = new IdleTracker({ idleMs: 10 * MIN });
    t.touch('a', 0);
    t.touch('a', 8 * MIN);
    t.touch('a', 2 * MIN);
    expect(t.due(17 * MIN)).toEqual([]);
    expect(t.due(18 * MIN)).toEqual(['a']);
  });

  it('a turn end followed by a shorter idle finishes the session sooner', () => {
    const t = new IdleTracker({ idleMs: 30 * MIN, turnEndIdleMs: 5 * MIN });
    t.turnEnded('a', 0);
    t.touch('b', 0);
    expect(t.nextDueAt()).toBe(5 * MIN);
    expect(t.due(5 * MIN)).toEqual(['a']);
    t.turnEnded('c', 10 * MIN);
    t.touch('c', 11 * MIN); // the agent went on: the full timeout applies again
    expect(t.due(20 * MIN)).toEqual([]);
    expect(t.due(41 * MIN)).toEqual(['b', 'c']);
  });

  it('end() forgets a session that ended explicitly; a resumed session is tracked again', () => {
    const t = new IdleTracker({ idleMs: MIN });
    t.touch('a', 0);
    expect(t.end('a')).toBe(true);
    expect(t.due(10 * MIN)).toEqual([]);
    t.touch('a', 20 * MIN);
    expect(t.due(21 * MIN)).toEqual(['a']);
  });
});
