import { describe, expect, it } from 'vitest';
import { Subscriptions } from '../../src/daemon/subscriptions.js';

describe('Subscriptions', () => {
  it('answers both ways, and forgets a closed connection on both sides', () => {
    const subs = new Subscriptions();
    subs.add('c1', 'a');
    subs.add('c1', 'b');
    subs.add('c2', 'a');
    subs.add('c2', 'a'); // twice: once
    expect([...subs.connectionsOf('a')].sort()).toEqual(['c1', 'c2']);
    expect([...subs.connectionsOf('b')]).toEqual(['c1']);
    expect(subs.connectionsOf('nobody').size).toBe(0);
    expect(subs.sessionsOf('c1').sort()).toEqual(['a', 'b']);
    expect(subs.has('c2', 'b')).toBe(false);
    expect(subs.follows('c2')).toBe(true);

    subs.dropConnection('c1');
    expect([...subs.connectionsOf('a')]).toEqual(['c2']);
    expect(subs.connectionsOf('b').size).toBe(0);
    expect(subs.sessionsOf('c1')).toEqual([]);
    expect(subs.follows('c1')).toBe(false);
    subs.dropConnection('c1'); // closed twice: nothing to do
    expect(subs.has('c2', 'a')).toBe(true);
  });
});
