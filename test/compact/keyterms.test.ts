import { describe, expect, it } from 'vitest';
import { ReferenceIndex } from '../../src/compact/keyterms.js';
import type { Message } from '../../src/model/messages.js';
import { contentTerms } from '../../src/text/index.js';

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

  it('remembers key terms of a term set across plans exactly as long as none of its terms changed', () => {
    // the session, with turns now and then naming what an earlier message said
    const stream: Message[] = [];
    for (const [i, m] of messages(700).entries()) {
      stream.push(m);
      if (i > 200 && i % 9 === 0) stream.push({ id: `r${i}`, role: 'user', text: `and ${word(i - 5 + 9000)}?` });
    }
    const owner = {};
    // term sets as the planner holds them: one per message, kept as they are between plans
    const sets = stream.map((m) => new Set(contentTerms(m.text)));
    let goal = `fix ${word(7)}`;
    const steps = [200, ...Array.from({ length: 40 }, (_, i) => 201 + i), 300, 301, 302, 450, ...Array.from({ length: 30 }, (_, i) => 451 + i), stream.length];
    const seen = new Map<string, readonly string[]>();
    let kept = 0;
    let changed = 0;
    for (const [k, n] of steps.entries()) {
      if (k === 30) goal = `now ${word(123)} and ${word(9099)}`;
      const list = stream.slice(0, n);
      const grown = ReferenceIndex.of(owner, list, goal);
      const scratch = new ReferenceIndex(list, goal);
      for (let i = 0; i < n; i++) {
        const got = grown.keyTermsOfSet(sets[i]!, i);
        const want = scratch.keyTermsOf(sets[i]!, i);
        expect(got).toEqual(want);
        const before = seen.get(`${i}`);
        if (before === got) kept++;
        else if (before && JSON.stringify(before) !== JSON.stringify(want)) changed++;
        seen.set(`${i}`, got);
      }
      grown.release();
    }
    // most were remembered; some changed (a later turn named them, the goal moved) and were worked out again
    expect(kept).toBeGreaterThan(1000);
    expect(changed).toBeGreaterThan(10);
  });

  it('works key terms out again after a jump of many messages (not logged term by term) or many plans', () => {
    const base = messages(267);
    const goal = `fix ${word(7)}`;
    // message 251 (assistant) says word(9251); nothing later names it
    const set = new Set(contentTerms(base[251]!.text));
    const named = { id: 'named', role: 'user', text: `and ${word(9251)}?` } as Message;
    const filler = (k: number): Message => ({ id: `f${k}`, role: 'tool', toolCallId: `x${k}`, text: 'ok' });
    for (const jump of [[...Array.from({ length: 32 }, (_, k) => filler(k)), named], [named]]) {
      const owner = {};
      const first = ReferenceIndex.of(owner, base, goal);
      const before = first.keyTermsOfSet(set, 251);
      expect(before).not.toContain(word(9251));
      first.release();
      let list: Message[] = [...base, ...jump];
      // the same rarity limit before and after: only the changed reference tells them apart
      expect(Math.ceil(list.length * 0.03)).toBe(Math.ceil(base.length * 0.03));
      if (jump.length === 1) {
        // many plans of one message each (more than are logged), the naming one first
        for (let k = 0; k < 20; k++) {
          ReferenceIndex.of(owner, list, goal).release();
          list = [...list, filler(100 + k)];
        }
      }
      const after = ReferenceIndex.of(owner, list, goal);
      expect(after.keyTermsOfSet(set, 251)).toEqual(new ReferenceIndex(list, goal).keyTermsOf(set, 251));
      expect(after.keyTermsOfSet(set, 251)).toContain(word(9251));
      after.release();
    }
  });
});
