import { describe, expect, it } from 'vitest';
import { ReferenceIndex } from '../../src/compact/keyterms.js';
import type { Message } from '../../src/model/messages.js';

/** A word of letters only for `i` (no digit: whether it is rare then decides whether it is key). */
function word(i: number): string {
  let w = 'kw';
  for (let n = i + 26 * 27; n > 0; n = Math.floor(n / 26)) w += String.fromCharCode(97 + (n % 26));
  return w;
}

/** A session of many distinct terms (past any initial table size), some referenced again later, some common. */
function messages(n: number): Message[] {
  return Array.from({ length: n }, (_, i): Message => {
    if (i % 7 === 3) return { id: `t${i}`, role: 'tool', toolCallId: `c${i}`, text: `output of ${word(i)} mentions ${word(i % 40)} and ${word(i * 13)} ${word(i + 5000)} ${word(i + 6000)} ${word(i + 7000)}` };
    if (i % 5 === 0) return { id: `u${i}`, role: 'user', text: `please look at ${word((i * 3) % 40)} and ${word(Math.max(0, i - 20))} again` };
    return { id: `a${i}`, role: 'assistant', text: `working on ${word(i + 9000)} and ${word(i + 9001)}, checked ${word(i % 40)}`, toolCalls: i % 3 === 0 ? [{ id: `c${i + 1}`, name: 'read_file', arguments: `{"path":"src/${word(i + 12000)}.ts"}` }] : [] };
  });
}

/** Every message's terms with their key terms, as an index reads them. */
function keyTermsOfAll(index: ReferenceIndex, list: readonly Message[]): string[][] {
  return list.map((m, i) => index.keyTermsFor(`${m.text}`, i));
}

describe('ReferenceIndex', () => {
  it('grown message by message (also while an earlier plan still reads it) equals one built from scratch', () => {
    const all = messages(900);
    const owner = {};
    const goal = `fix ${word(7)} and ${word(100)} in src/${word(12042)}.ts`;
    let held: { index: ReferenceIndex; list: readonly Message[]; expected: string[][] } | undefined;
    for (const n of [100, 101, 400, 401, 402, 899, 900]) {
      const list = all.slice(0, n);
      const grown = ReferenceIndex.of(owner, list, goal);
      const scratch = new ReferenceIndex(list, goal);
      const expected = keyTermsOfAll(scratch, list);
      expect(keyTermsOfAll(grown, list)).toEqual(expected);
      expect(grown.goalWords()).toEqual(scratch.goalWords());
      // the one held across a later `of` must not see that plan's messages
      if (held) {
        expect(keyTermsOfAll(held.index, held.list)).toEqual(held.expected);
        held.index.release();
      }
      held = n === 400 || n === 899 ? { index: grown, list, expected } : undefined;
      if (!held) grown.release();
    }
  });

  it('a later list grows a copy while an earlier plan still reads the index', () => {
    const all = messages(1500);
    const owner = {};
    const goal = `fix ${word(7)}`;
    const first = all.slice(0, 1200);
    const held = ReferenceIndex.of(owner, first, goal);
    const expected = keyTermsOfAll(new ReferenceIndex(first, goal), first);
    // a later turn names what message 1191 said: key there from now on, not for the held plan
    const later = [...first, { id: 'ref', role: 'user', text: `what about ${word(1191 + 9000)}?` } as Message];
    const grown = ReferenceIndex.of(owner, later, goal);
    expect(keyTermsOfAll(grown, later)).toEqual(keyTermsOfAll(new ReferenceIndex(later, goal), later));
    expect(keyTermsOfAll(grown, later)[1191]).not.toEqual(expected[1191]);
    expect(keyTermsOfAll(held, first)).toEqual(expected);
    held.release();
    grown.release();
  });
});
