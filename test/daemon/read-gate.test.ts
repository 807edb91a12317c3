import { describe, expect, it } from 'vitest';
import { holdsReads, ReadGate, type ReadFacts } from '../../src/daemon/read-gate.js';
import { RebuildList, rebuildFits } from '../../src/daemon/rebuild-list.js';

const facts = (f: Partial<ReadFacts> = {}): ReadFacts => ({ steady: true, closing: false, current: true, fed: false, queued: false, restoring: false, planDue: false, released: false, headroom: () => 0.5, ...f });

describe('read gate', () => {
  it('holds a session\'s reads after the first scan while its lines wait, its model is rebuilt, or it is over budget with a plan due', () => {
    expect(holdsReads(facts())).toBe(false);
    expect(holdsReads(facts({ queued: true }))).toBe(true);
    expect(holdsReads(facts({ restoring: true }))).toBe(true);
    expect(holdsReads(facts({ planDue: true }))).toBe(false);
    expect(holdsReads(facts({ planDue: true, headroom: () => 0 }))).toBe(true);
    expect(holdsReads(facts({ planDue: true, headroom: () => 0, released: true }))).toBe(false);
    // never during the first scan, on shutdown, for a session replaced or fed over the socket
    for (const f of [{ steady: false }, { closing: true }, { current: false }, { fed: true }]) expect(holdsReads(facts({ queued: true, ...f }))).toBe(false);
  });

  it('wakes the readers of one session, and every reader on wakeAll; a reader nobody wakes looks again by itself', async () => {
    const gate = new ReadGate<string>(60_000);
    const woken: string[] = [];
    const a = gate.wait('a').then(() => woken.push('a'));
    const b = gate.wait('b').then(() => woken.push('b'));
    gate.wake('a');
    await a;
    expect(woken).toEqual(['a']);
    gate.wakeAll();
    await b;
    expect(woken).toEqual(['a', 'b']);
    await new ReadGate<string>(1).wait('c');
  });

  it('lists sessions to rebuild in release order; a rebuild fits within the budget or with none', () => {
    const list = new RebuildList<string>();
    list.add('x', 10);
    list.add('y', 20);
    expect([...list.keys()]).toEqual(['x', 'y']);
    expect(list.tokensOf('y')).toBe(20);
    list.delete('x');
    expect([...list.keys()]).toEqual(['y']);
    expect(rebuildFits(20, 80, 100)).toBe(true);
    expect(rebuildFits(21, 80, 100)).toBe(false);
    expect(rebuildFits(1e9, 1e9, 0)).toBe(true);
  });
});
