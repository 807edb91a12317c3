import { describe, expect, it } from 'vitest';
import { SessionModel } from '../../src/model/index.js';
import { messageListCopies } from '../../src/model/context.js';
import { asst, user } from './helpers.js';

describe('LiveContext message list', () => {
  it('grows by an append without copying the list, and a list handed out never changes', () => {
    const m = new SessionModel({ sessionId: 'S' });
    m.apply(user('u0', 'start the work'));
    const first = m.messages();
    expect(Object.isFrozen(first)).toBe(true);
    const before = messageListCopies();
    const n = 2000;
    for (let i = 1; i <= n; i++) m.apply(i % 2 ? asst(`a${i}`, `step ${i}`) : user(`u${i}`, `next ${i}`));
    // k appends with nobody reading: no list was copied (the old append copied the whole list each time).
    expect(messageListCopies() - before).toBe(0);
    expect(first.map((x) => x.id)).toEqual(['u0']);

    const all = m.messages();
    expect(all).toHaveLength(n + 1);
    expect(Object.isFrozen(all)).toBe(true);
    expect(all[0]).toBe(first[0]);
    // one copy when read, none on a second read without a change
    expect(messageListCopies() - before).toBe(n + 1);
    expect(m.messages()).toBe(all);

    m.apply(asst('last', 'done'));
    const grown = m.messages();
    expect(all).toHaveLength(n + 1);
    expect(grown).toHaveLength(n + 2);
    expect(grown.slice(0, n + 1).every((x, i) => x === all[i])).toBe(true);
    expect(grown.at(-1)?.id).toBe('last');
  });

  it('rebuilds the list after a change other than an append', () => {
    const m = new SessionModel({ sessionId: 'S' });
    m.applyAll([user('u1', 'read the parser'), asst('a1', 'The parser reads tokens one by one.'), user('u2', 'now fix it')]);
    const before = m.messages();
    const sec = m.sections().find((s) => s.messageIds.includes('a1'));
    expect(sec).toBeDefined();
    m.replaceSections([sec?.id ?? ''], { text: 'summary of a1 (recall ctx_test)', editId: 'e1', handle: 'ctx_test', reason: 'test' });
    const after = m.messages();
    expect(before.map((x) => x.id)).toEqual(['u1', 'a1', 'u2']);
    expect(after.map((x) => x.id)).not.toContain('a1');
    expect(after).toHaveLength(3);
  });
});
